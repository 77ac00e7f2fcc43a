//! Kubernetes resource quantities (`500m`, `2`, `1.5Gi`, `1e3`), exact.
//!
//! Values are held as integer nano-units in an `i128`, which is exact for every suffix
//! Kubernetes accepts (`n` to `E`, `Ki` to `Ei`) and leaves room to sum thousands of
//! NodeClaims' capacities. Arithmetic is checked: input that would overflow (absurd exponents,
//! hundreds of digits) is rejected instead of wrapping into a plausible-looking number.

use std::fmt;

/// A parsed quantity, in nano-units of its resource (cores for `cpu`, bytes for `memory`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity(i128);

const NANO: i128 = 1_000_000_000;

impl Quantity {
    pub const ZERO: Quantity = Quantity(0);

    /// Parses the Kubernetes serialisation; `None` for anything it does not accept.
    pub fn parse(text: &str) -> Option<Quantity> {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = match number.split_once('.') {
            Some((w, f)) => (w, f),
            None => (number, ""),
        };
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return None;
        }
        // The scale of the suffix, as a multiplier and a power of ten (for `e` exponents and
        // the decimal SI prefixes) applied to nano-units.
        let (multiplier, exponent): (i128, i32) = match suffix {
            "" => (1, 0),
            "n" => (1, -9),
            "u" => (1, -6),
            "m" => (1, -3),
            "k" => (1, 3),
            "M" => (1, 6),
            "G" => (1, 9),
            "T" => (1, 12),
            "P" => (1, 15),
            "E" => (1, 18),
            "Ki" => (1 << 10, 0),
            "Mi" => (1 << 20, 0),
            "Gi" => (1 << 30, 0),
            "Ti" => (1 << 40, 0),
            "Pi" => (1 << 50, 0),
            "Ei" => (1 << 60, 0),
            e if e.starts_with(['e', 'E']) => {
                let exp: i32 = e[1..].parse().ok()?;
                if !(-9..=18).contains(&exp) {
                    return None;
                }
                (1, exp)
            }
            _ => return None,
        };
        // digits of whole+fraction as one integer, then scale by 10^(9 + exponent - len(fraction)).
        let digits = format!("{whole}{fraction}");
        if digits.len() > 30 {
            return None;
        }
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        let scale = 9 + exponent - fraction.len() as i32;
        let scaled = if scale >= 0 {
            mantissa.checked_mul(10i128.checked_pow(scale as u32)?)?
        } else {
            // Finer than a nano-unit: Kubernetes rounds up, and so does this.
            let div = 10i128.checked_pow((-scale) as u32)?;
            (mantissa + div - 1) / div
        };
        let value = scaled.checked_mul(multiplier)?;
        Some(Quantity(if negative { -value } else { value }))
    }

    /// A quantity as JSON carries it: a string (`"16Gi"`) or a bare number (`16`).
    pub fn from_json(v: &serde_json::Value) -> Option<Quantity> {
        match v {
            serde_json::Value::String(s) => Quantity::parse(s),
            serde_json::Value::Number(n) => Quantity::parse(&n.to_string()),
            _ => None,
        }
    }

    /// `n` whole units (cores, pods, bytes).
    pub const fn units(n: i64) -> Quantity {
        Quantity(n as i128 * NANO)
    }

    /// `n` thousandths of a unit (`250m` of CPU).
    pub const fn milli(n: i64) -> Quantity {
        Quantity(n as i128 * 1_000_000)
    }

    /// `n` mebibytes.
    pub const fn mebibytes(n: i64) -> Quantity {
        Quantity(n as i128 * (NANO << 20))
    }

    /// Whole units, rounded down (a pod count).
    pub fn as_units(self) -> i64 {
        (self.0 / NANO).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// Whole mebibytes, rounded down (for messages).
    pub fn as_mebibytes(self) -> i128 {
        self.0 / (NANO << 20)
    }

    pub fn checked_add(self, other: Quantity) -> Option<Quantity> {
        self.0.checked_add(other.0).map(Quantity)
    }

    /// `self − other`, floored at zero (what is left of a resource).
    pub fn saturating_sub(self, other: Quantity) -> Quantity {
        Quantity(self.0.saturating_sub(other.0).max(0))
    }

    /// `self / total` as a percentage, rounded down; `None` when `total` is not positive.
    pub fn percent_of(self, total: Quantity) -> Option<i128> {
        (total.0 > 0).then(|| self.0.saturating_mul(100) / total.0)
    }

    pub fn is_positive(self) -> bool {
        self.0 > 0
    }

    /// Shown for a resource: memory and storage in binary units, the rest as plain numbers.
    pub fn show(self, resource: &str) -> String {
        if resource.contains("memory") || resource.contains("storage") {
            const GI: i128 = NANO << 30;
            const MI: i128 = NANO << 20;
            if self.0 % GI == 0 {
                return format!("{}Gi", self.0 / GI);
            }
            if self.0.abs() >= GI {
                return format!("{:.1}Gi", self.0 as f64 / GI as f64);
            }
            if self.0 % MI == 0 {
                return format!("{}Mi", self.0 / MI);
            }
        }
        self.to_string()
    }
}

impl fmt::Display for Quantity {
    /// Whole units when exact, else milli-units when exact, else decimals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 % NANO == 0 {
            write!(f, "{}", self.0 / NANO)
        } else if self.0 % 1_000_000 == 0 {
            write!(f, "{}m", self.0 / 1_000_000)
        } else {
            write!(f, "{}n", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|| panic!("{s} parses"))
    }

    #[test]
    fn parses_the_kubernetes_forms() {
        assert_eq!(q("1"), q("1000m"));
        assert_eq!(q("0.5"), q("500m"));
        assert_eq!(q("1Ki"), q("1024"));
        assert_eq!(q("1.5Gi"), q("1536Mi"));
        assert_eq!(q("1e3"), q("1k"));
        assert_eq!(q("2E"), q("2e18"));
        assert_eq!(q("+3"), q("3"));
        assert_eq!(q("-1").checked_add(q("1")), Some(Quantity::ZERO));
        assert_eq!(q("1n").checked_add(q("999999999n")), Some(q("1")));
        assert_eq!(q(".5"), q("500m"));
    }

    #[test]
    fn rejects_what_kubernetes_rejects() {
        for bad in [
            "",
            "-",
            "abc",
            "1.2.3",
            "1Gb",
            "1 Gi",
            "1e",
            "1e99",
            "Gi",
            ".",
            "1..0",
            "0x10",
            "99999999999999999999999999999999999",
        ] {
            assert_eq!(Quantity::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn arithmetic_and_display() {
        let sum = q("1500m").checked_add(q("2")).unwrap();
        assert_eq!(sum.to_string(), "3500m");
        assert_eq!(q("8Gi").show("memory"), "8Gi");
        assert_eq!(q("1.5Gi").show("memory"), "1.5Gi");
        assert_eq!(q("512Mi").show("memory"), "512Mi");
        assert_eq!(q("16").show("cpu"), "16");
        assert_eq!(q("90").percent_of(q("100")), Some(90));
        assert_eq!(q("1").percent_of(Quantity::ZERO), None);
        assert_eq!(
            q("1Ei").checked_add(q("1Ei")).map(|s| s > q("1Ei")),
            Some(true)
        );
    }
}
