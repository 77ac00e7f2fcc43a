//! Strings from the cluster and from AWS are data, not terminal input: object names, tags,
//! log lines and error messages may carry escape sequences, control characters or bidi
//! overrides. Everything printed by the text and markdown renderers passes through here.
//! JSON needs no such step (serde_json escapes control characters).

/// Longest string shown in human output; the rest is summarised, not printed.
pub const MAX_SHOWN: usize = 2_000;

/// Makes `s` safe to print: control characters (ESC included) become `\u{..}` escapes, bidi
/// controls are dropped, and long text is cut at [`MAX_SHOWN`] characters.
pub fn for_terminal(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_SHOWN + 32));
    for (count, c) in s.chars().enumerate() {
        if count == MAX_SHOWN {
            let rest = s.chars().count() - count;
            out.push_str(&format!("… ({rest} more characters)"));
            break;
        }
        if is_bidi_control(c) {
            continue;
        }
        if c.is_control() && c != '\n' {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// Like [`for_terminal`] and also keeps the text on one line.
pub fn one_line(s: &str) -> String {
    for_terminal(s).replace('\n', " ")
}

/// The first `max` characters of `s`, with an ellipsis when something was cut (for text kept
/// in findings and bundles, where a whole error chain or log line would drown the point).
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_string(),
    }
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_ansi_and_controls() {
        assert_eq!(for_terminal("a\u{1b}[31mred"), "a\\u{1b}[31mred");
        assert_eq!(for_terminal("bell\u{7}"), "bell\\u{7}");
        assert_eq!(one_line("two\nlines"), "two lines");
    }

    #[test]
    fn drops_bidi_overrides() {
        assert_eq!(for_terminal("abc\u{202E}fed"), "abcfed");
    }

    #[test]
    fn truncates_long_text() {
        let long = "x".repeat(MAX_SHOWN + 10);
        let shown = for_terminal(&long);
        assert!(shown.ends_with("… (10 more characters)"));
        assert!(shown.chars().count() < MAX_SHOWN + 40);
    }
}
