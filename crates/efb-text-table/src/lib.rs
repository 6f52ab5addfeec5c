//! Text for people: tables a human scans quickly (every cell padded to its column's width,
//! columns two spaces apart, no trailing spaces), names in the order people count them, and
//! printing that stops quietly when the reader goes away. The shell's `show` views and
//! `efb-config`'s reports go through this, so all the product's text looks the same.

use std::borrow::Cow;
use std::cmp::Ordering;

/// The side of its column a cell keeps to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Side {
    /// Text: names, states, addresses.
    #[default]
    Left,
    /// Numbers, so that their digits line up.
    Right,
}

/// Characters a cell shows at most: longer text (a user name of 70 000 characters) ends
/// with `…`, so one cell cannot push every line of a table off the screen.
pub const MAX_CELL_CHARS: usize = 512;

/// The rows as aligned lines. `sides[i]` says where column `i` keeps its cells (left when
/// not given); rows may have fewer cells than others. Widths count characters, not bytes.
/// Cells are shown [`escape`]d and cut to [`MAX_CELL_CHARS`]: a cell is one line of text a
/// terminal shows as it is, whatever its author put in it.
pub fn align(rows: &[Vec<String>], sides: &[Side]) -> Vec<String> {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| shown(cell)).collect())
        .collect();
    let widths = column_widths(&rows);
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, cell)| pad(cell, widths[i], sides.get(i).copied().unwrap_or_default()))
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect()
}

fn column_widths(rows: &[Vec<String>]) -> Vec<usize> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|row| row.get(i))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// Padding computed, not asked of `format!`: its width argument panics past 65 535.
fn pad(cell: &str, width: usize, side: Side) -> String {
    let fill = " ".repeat(width.saturating_sub(cell.chars().count()));
    match side {
        Side::Left => format!("{cell}{fill}"),
        Side::Right => format!("{fill}{cell}"),
    }
}

/// A cell as a table shows it: escaped, and cut to [`MAX_CELL_CHARS`].
fn shown(cell: &str) -> String {
    let escaped = escape(cell);
    match escaped.char_indices().nth(MAX_CELL_CHARS - 1) {
        Some((end, _)) if escaped.chars().count() > MAX_CELL_CHARS => {
            format!("{}…", &escaped[..end])
        }
        _ => escaped.into_owned(),
    }
}

/// Text from someone else (a user name, a comment, a value) made safe to print on a
/// terminal: control characters (ESC, newlines, NUL...) and the characters that reorder
/// text (bidirectional overrides) are shown as escapes (`\e`, `\n`, `\0`, `\u{202e}`),
/// so they can neither move the cursor, clear the screen nor disguise what is shown.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\x1b' => out.push_str("\\e"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`escape`] for text of several lines: each line escaped, the line breaks kept (an error
/// message listing problems one per line).
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && unsafe_char(c)) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.split('\n').map(escape).collect::<Vec<_>>().join("\n"))
}

/// Characters a terminal does not simply show: controls, and the bidirectional
/// embeddings, overrides and isolates that reorder what follows them.
pub fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Orders names as people count: `p2` before `p10`, `p9-0` before `p10-0`. Runs of digits
/// compare by value, the rest by character; names equal that way fall back to plain order.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    // Run by run as the key orders them, without collecting them: a table of 100 000
    // rows is sorted with it.
    Run::all(a).cmp(Run::all(b)).then_with(|| a.cmp(b))
}

/// A name as [`natural_cmp`] orders it, worked out once: what a sort of many names keeps
/// per name (`sort_by_cached_key`) instead of splitting both names at every comparison.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NaturalKey<'a> {
    runs: Vec<Run<'a>>,
    /// Names equal run by run (`p01`, `p1`) fall back to plain order.
    name: &'a str,
}

impl<'a> NaturalKey<'a> {
    pub fn of(name: &'a str) -> NaturalKey<'a> {
        NaturalKey {
            runs: Run::all(name).collect(),
            name,
        }
    }
}

/// A run of digits or of anything else: two numbers compare by value (`01` is `1`),
/// anything else by character.
#[derive(Clone, Debug)]
struct Run<'a> {
    text: &'a str,
    number: Option<u128>,
}

impl<'a> Run<'a> {
    /// The runs of `text`, in order.
    fn all(text: &'a str) -> impl Iterator<Item = Run<'a>> {
        runs(text).map(|text| Run {
            text,
            number: number(text),
        })
    }
}

impl Ord for Run<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.number, other.number) {
            (Some(m), Some(n)) => m.cmp(&n),
            _ => self.text.cmp(other.text),
        }
    }
}

impl PartialEq for Run<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Run<'_> {}

impl PartialOrd for Run<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The text in runs of digits and runs of anything else.
fn runs(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let digits = first.is_ascii_digit();
        let end = rest
            .find(|c: char| c.is_ascii_digit() != digits)
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some(run)
    })
}

/// A run of digits as a number (leading zeros ignored; too long to hold: compared as text).
fn number(run: &str) -> Option<u128> {
    if run.starts_with(|c: char| c.is_ascii_digit()) {
        run.parse().ok()
    } else {
        None
    }
}

/// Prints one line on standard output. When the reader has gone (`efb-config diff A B |
/// head`), the program ends at once with status 141, as a Unix tool killed by SIGPIPE
/// does, where `println!` would panic; any other failure to write is said, status 1.
pub fn print_line(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("cannot write the output: {e}");
        std::process::exit(1);
    }
}

/// `410000` as `410 000`: long numbers read at a glance.
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(cells: &[&[&str]]) -> Vec<Vec<String>> {
        cells
            .iter()
            .map(|row| row.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn columns_line_up_and_lines_end_without_spaces() {
        let lines = align(&rows(&[&["Name", "Packets"], &["ethernet-1/1", "7"]]), &[]);
        assert_eq!(lines, ["Name          Packets", "ethernet-1/1  7"]);
    }

    #[test]
    fn right_columns_line_up_their_digits() {
        let lines = align(
            &rows(&[&["Port", "Packets"], &["p1", "7"], &["p2", "1234"]]),
            &[Side::Left, Side::Right],
        );
        assert_eq!(lines, ["Port  Packets", "p1          7", "p2       1234"]);
    }

    #[test]
    fn names_in_the_order_people_count() {
        let mut names = vec![
            "p10-0", "p2", "p9-1", "p1", "p9-0", "p10", "link", "p02", "ef10", "ef9",
        ];
        let mut cached = names.clone();
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            [
                "ef9", "ef10", "link", "p1", "p02", "p2", "p9-0", "p9-1", "p10", "p10-0"
            ]
        );
        // The key a sort keeps per name orders them alike; a run of text that ends where
        // another goes on comes first, whatever follows it ("ab1" before "ab!").
        cached.sort_by_cached_key(|name| NaturalKey::of(name));
        assert_eq!(cached, names);
        let mut prefixes = vec!["ab1", "ab!", "ab"];
        prefixes.sort_by_cached_key(|name| NaturalKey::of(name));
        assert_eq!(prefixes, ["ab", "ab1", "ab!"]);
    }

    #[test]
    fn a_cell_of_any_width_never_panics_and_is_cut() {
        let long = "u".repeat(70_000);
        let lines = align(&rows(&[&["#", "User"], &["0", &long], &["1", "bob"]]), &[]);
        let cell = format!("{}…", "u".repeat(MAX_CELL_CHARS - 1));
        assert_eq!(lines[1], format!("0  {cell}"));
        assert_eq!(lines[2], "1  bob");
        let right = align(&rows(&[&[&long, "x"]]), &[Side::Right]);
        assert_eq!(right[0].chars().count(), MAX_CELL_CHARS + 3);
    }

    #[test]
    fn control_characters_are_shown_escaped() {
        let lines = align(
            &rows(&[
                &["a\x1b[2Jb", "x"],
                &["l1\nl2\0", "y"],
                &["\u{202e}evil", "z"],
            ]),
            &[],
        );
        assert_eq!(
            lines,
            ["a\\e[2Jb       x", "l1\\nl2\\0      y", "\\u{202e}evil  z"]
        );
        assert_eq!(escape("plain é"), "plain é");
        assert_eq!(escape_lines("one\x1b\ntwo\u{7}"), "one\\e\ntwo\\u{7}");
    }

    #[test]
    fn ragged_rows_and_wide_characters() {
        let lines = align(&rows(&[&["état", "up"], &["a"], &[]]), &[]);
        assert_eq!(lines, ["état  up", "a", ""]);
    }
}
