//! Go's `time.ParseDuration`, which Karpenter 1.12+ applies to a pod's
//! `karpenter.sh/do-not-disrupt` value (docs/disruption.md §3). The annotation is free text, not
//! a CRD field with a pattern, so every form Go accepts counts: fractions (`1.5h`), several
//! units (`1h30m`), `ms`, `us`/`µs`/`μs`, `ns`, a sign, and a bare `0`. Checked against Go's own
//! parser (Go 1.19, `scripts/go/duration_forms.go` lists the forms and their results).

/// Nanoseconds in each unit Go knows.
fn unit(u: &str) -> Option<u128> {
    Some(match u {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// The duration in nanoseconds, negative for a leading `-`; `None` where Go returns an error
/// (no unit, an unknown unit, no digits, more than Go's int64 holds).
pub fn parse(s: &str) -> Option<i64> {
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    // Go sums in uint64 and refuses more than 1<<63 (exactly 1<<63 only when negative).
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.bytes().take_while(u8::is_ascii_digit).count();
                a.split_at(n)
            }
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let unit_len = after
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(after.len(), |(i, _)| i);
        let (u, next) = after.split_at(unit_len);
        let scale = unit(u)?;
        let whole: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let mut value = whole.checked_mul(scale)?;
        // The fraction, digit by digit (Go scales it in floating point: the two can differ by a
        // nanosecond, which no judgement here notices).
        let mut place = scale;
        for d in frac.bytes() {
            place /= 10;
            if place == 0 {
                break;
            }
            value += u128::from(d - b'0') * place;
        }
        total = total.checked_add(value)?;
        if total > 1u128 << 63 {
            return None;
        }
        rest = next;
    }
    if total == 1u128 << 63 {
        return negative.then_some(i64::MIN);
    }
    let total = i64::try_from(total).ok()?;
    Some(if negative { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::parse;

    const SECOND: i64 = 1_000_000_000;

    #[test]
    fn the_forms_go_accepts() {
        assert_eq!(parse("30m"), Some(1800 * SECOND));
        assert_eq!(parse("1h30m"), Some(5400 * SECOND));
        assert_eq!(parse("1.5h"), Some(5400 * SECOND));
        assert_eq!(parse(".5s"), Some(SECOND / 2));
        assert_eq!(parse("300ms"), Some(300_000_000));
        assert_eq!(parse("2µs"), Some(2_000));
        assert_eq!(parse("2us"), Some(2_000));
        assert_eq!(parse("0"), Some(0));
        assert_eq!(parse("-1m"), Some(-60 * SECOND));
        assert_eq!(parse("+5s"), Some(5 * SECOND));
        assert_eq!(parse("1h0m0s"), Some(3600 * SECOND));
        assert_eq!(parse("1.h"), Some(3600 * SECOND));
    }

    #[test]
    fn the_forms_go_refuses() {
        for bad in [
            "",
            "true",
            "30",
            "1d",
            "1.h.",
            ".s",
            "1hh",
            "1H",
            " 1m",
            "-",
            "9999999999h",
            "00",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
