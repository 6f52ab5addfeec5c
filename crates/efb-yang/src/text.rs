//! Messages that quote what someone sent stay short: a 10 MB value or a 400 KB line is
//! quoted by its start and its length, and a list of problems by its first entries and a
//! count. An error must reach the client (gRPC carries it in a header of a few KiB); the
//! whole input would not, and the client would see a protocol error instead of the reason.

use std::borrow::Cow;

use crate::Problem;

/// Bytes of someone's input a message quotes at most.
pub const EXCERPT_BYTES: usize = 200;
/// Problems a list shows before "... and N more problems".
pub const LISTED_PROBLEMS: usize = 20;
/// Bytes of one problem's line at most.
pub const PROBLEM_BYTES: usize = 1000;
/// Bytes of a whole error message at most: well inside what gRPC clients take in a
/// status header (grpcio's default metadata limit is 8 KiB).
pub const MESSAGE_BYTES: usize = 4096;

/// `text` as a message quotes it: whole when short, else its start and its length
/// (`AAAA... (410 000 bytes)`).
pub fn excerpt(text: &str) -> Cow<'_, str> {
    cut(text, EXCERPT_BYTES, "")
}

/// A message of at most about `max` bytes: a longer one is cut and says how long it was.
pub fn bound(message: &str, max: usize) -> Cow<'_, str> {
    cut(message, max, "message cut: ")
}

fn cut<'a>(text: &'a str, max: usize, what: &str) -> Cow<'a, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!(
        "{}... ({what}{} bytes)",
        &text[..end],
        grouped(text.len())
    ))
}

pub use efb_text_table::grouped;

/// Problems one per line (each `prefix` first), the first [`LISTED_PROBLEMS`] of them, each
/// line bounded, then how many more there are.
pub fn problem_lines(problems: &[Problem], prefix: &str) -> String {
    let mut lines: Vec<String> = problems
        .iter()
        .take(LISTED_PROBLEMS)
        .map(|p| format!("{prefix}{}", bound(&p.to_string(), PROBLEM_BYTES)))
        .collect();
    if problems.len() > LISTED_PROBLEMS {
        let more = problems.len() - LISTED_PROBLEMS;
        lines.push(format!(
            "{prefix}... and {} more problem{}",
            grouped(more),
            if more == 1 { "" } else { "s" }
        ));
    }
    lines.join("\n")
}

/// Someone's text as a text log shows it: a character that would end the line, move the
/// cursor, colour the terminal or reorder what is shown (newline, carriage return, ESC,
/// bidirectional overrides, line separators) is written escaped (`\n`, `\u{1b}`), and so
/// is the backslash, so that no one can forge a log line through a name, an id or a path
/// they send. Ordinary text is unchanged.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.extend(c.escape_debug()),
            c if needs_escape(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Someone's text of any length in a log line: [`escaped`], and cut as [`excerpt`] cuts.
pub fn logged(text: &str) -> String {
    escaped(&excerpt(text)).into_owned()
}

fn needs_escape(c: char) -> bool {
    c == '\\'
        || c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_for_a_log_line_cannot_break_the_line() {
        assert!(matches!(
            escaped("ada commit-1 /ports/port[name=p1]"),
            Cow::Borrowed(_)
        ));
        let forged = "c1\n2026-12-01T12:00:00Z  INFO efbd: commit confirmed ended id=admin";
        assert_eq!(
            escaped(forged),
            "c1\\n2026-12-01T12:00:00Z  INFO efbd: commit confirmed ended id=admin"
        );
        assert_eq!(
            escaped("a\r\u{1b}[31mb\\n\u{202e}c\u{2028}"),
            "a\\r\\u{1b}[31mb\\\\n\\u{202e}c\\u{2028}"
        );
        assert!(!logged(&"\n".repeat(100_000)).contains('\n'));
        assert!(logged(&"x".repeat(100_000)).ends_with("... (100 000 bytes)"));
    }

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(excerpt("p1"), "p1");
        assert_eq!(grouped(410_000), "410 000");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1 000");
    }

    #[test]
    fn long_text_is_quoted_by_its_start_and_length() {
        let text = "é".repeat(205_000);
        let quoted = excerpt(&text);
        assert!(quoted.len() < EXCERPT_BYTES + 40, "{quoted}");
        assert!(quoted.ends_with("... (410 000 bytes)"), "{quoted}");
        let message = bound(&text, 1000);
        assert!(
            message.ends_with("(message cut: 410 000 bytes)"),
            "{message}"
        );
    }

    #[test]
    fn long_lists_of_problems_end_with_a_count() {
        let problems: Vec<Problem> = (0..25)
            .map(|i| Problem::new(format!("/p{i}"), "x".repeat(5000)))
            .collect();
        let text = problem_lines(&problems, "  ");
        assert_eq!(text.lines().count(), LISTED_PROBLEMS + 1);
        assert!(text.ends_with("  ... and 5 more problems"), "{text}");
        assert!(text.len() < LISTED_PROBLEMS * (PROBLEM_BYTES + 60));
    }
}
