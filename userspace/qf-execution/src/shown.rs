//! How an error shows a value the user gave: whole when it is short, else its first
//! [`SHOWN_CHARS`] characters and its length, so a 100 KB argument is not echoed back whole.

/// Characters of a long value an error shows.
pub const SHOWN_CHARS: usize = 80;

/// `value` as an error shows it: itself, or its first [`SHOWN_CHARS`] characters followed by
/// `… (N bytes)`.
pub fn shown(value: &str) -> String {
    match value.char_indices().nth(SHOWN_CHARS) {
        None => value.to_owned(),
        Some((cut, _)) => format!("{}… ({} bytes)", &value[..cut], value.len()),
    }
}

/// `message` (an error another crate wrote, such as serde's) with each value it quotes between
/// `"` or `` ` `` shown by [`shown`].
pub fn shown_in(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4 * SHOWN_CHARS));
    let mut rest = message;
    while let Some(open) = rest.find(['"', '`']) {
        let quote = rest[open..].chars().next().unwrap_or('"');
        let inner = &rest[open + 1..];
        let Some(close) = inner.find(quote) else {
            break;
        };
        out.push_str(&rest[..=open]);
        out.push_str(&shown(&inner[..close]));
        out.push(quote);
        rest = &inner[close + 1..];
    }
    out.push_str(&shown(rest));
    out
}

/// `message` with each value it quotes between `quote`s shown by [`shown`] and the rest kept
/// whole (clap quotes the values its errors echo between `'`, and follows them with a usage
/// text that must stay as it is).
pub fn shown_quoted(message: &str, quote: char) -> String {
    let mut out = String::with_capacity(message.len().min(4 * SHOWN_CHARS));
    let mut rest = message;
    while let Some(open) = rest.find(quote) {
        let inner = &rest[open + quote.len_utf8()..];
        let Some(close) = inner.find(quote) else {
            break;
        };
        out.push_str(&rest[..open + quote.len_utf8()]);
        out.push_str(&shown(&inner[..close]));
        out.push(quote);
        rest = &inner[close + quote.len_utf8()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_value_is_whole_and_a_long_one_cut_on_a_character() {
        assert_eq!(shown("{\"a\": 1}"), "{\"a\": 1}");
        let exact = "x".repeat(SHOWN_CHARS);
        assert_eq!(shown(&exact), exact);
        let long = "y".repeat(100_000);
        assert_eq!(shown(&long), format!("{}… (100000 bytes)", "y".repeat(80)));
        // Multi-byte characters are never split.
        let wide = "é".repeat(81);
        assert_eq!(shown(&wide), format!("{}… (162 bytes)", "é".repeat(80)));
    }

    #[test]
    fn quoted_values_inside_a_message_are_cut_and_the_rest_kept() {
        let long = "z".repeat(1000);
        let message =
            format!("invalid type: string \"{long}\", expected u32 at line 1 column 1010");
        assert_eq!(
            shown_in(&message),
            format!(
                "invalid type: string \"{}… (1000 bytes)\", expected u32 at line 1 column 1010",
                "z".repeat(80)
            )
        );
        let key = format!("unknown field `{long}`, expected `a` or `b`");
        assert!(shown_in(&key).ends_with("… (1000 bytes)`, expected `a` or `b`"));
        assert_eq!(shown_in("no quotes"), "no quotes");
        assert_eq!(shown_in("one \" open"), "one \" open");
    }
}
