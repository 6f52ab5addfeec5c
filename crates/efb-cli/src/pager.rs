//! Paging output longer than the screen, as Junos does: a screen at a time, then
//! `---(more NN%)---` (NN: how much of the output has been shown so far). Keys at that
//! prompt:
//!
//! - space (or f) shows the next screen, Enter (or j) the next line;
//! - b shows the screen before the one on top: the terminal is cleared and those lines
//!   printed again from its top (already at the top, it says so and nothing moves);
//! - `/`, a pattern, Enter shows the screen starting at the first line that contains the
//!   pattern, looked for from the line after the one on top. Plain text, case-sensitive,
//!   matched against the lines as shown (controls escaped). It is echoed on the prompt row
//!   while typed: Backspace and Ctrl-U edit it, Ctrl-C or Escape give up; `/` and Enter
//!   alone look for the last pattern again;
//! - n looks for the last pattern again, from the line after the one on top;
//! - h (or ?) puts a summary of these keys on the prompt row;
//! - q (or Ctrl-C) gives the shell's prompt back.
//!
//! A pattern not found (or `n` before any `/`) is said on the prompt row, and the screen
//! stays. Reaching the end of the output ends paging, as in Junos. Only in an interactive
//! shell whose output is a terminal; `| no-more` and `set cli screen-length 0` turn it off.
//!
//! `Pager` decides which lines are on the screen and what to print next, with no terminal
//! (the unit tests drive it key by key); `page` only reads keys and prints what it says.

use std::io::Write;
use std::ops::Range;

/// The terminal's size on standard output: (rows, columns), when it is a terminal that
/// knows.
fn terminal_size() -> Option<(usize, usize)> {
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct it is given, nothing else.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let done = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    (done == 0 && size.ws_row > 0 && size.ws_col > 0)
        .then(|| (usize::from(size.ws_row), usize::from(size.ws_col)))
}

/// Lines the terminal shows at once, when standard output is a terminal.
pub fn terminal_rows() -> Option<usize> {
    terminal_size().map(|(rows, _)| rows)
}

/// What a key at the prompt asks for.
#[derive(Debug, PartialEq, Eq)]
enum Key {
    Page,
    Line,
    Back,
    Search,
    Again,
    Help,
    Quit,
    Other,
}

fn key(byte: u8) -> Key {
    match byte {
        b' ' | b'f' => Key::Page,
        b'\r' | b'\n' | b'j' => Key::Line,
        b'b' => Key::Back,
        b'/' => Key::Search,
        b'n' => Key::Again,
        b'h' | b'?' => Key::Help,
        // Ctrl-C, Ctrl-D.
        b'q' | b'Q' | 3 | 4 => Key::Quit,
        _ => Key::Other,
    }
}

/// The keys, on one row of 80 columns.
const HELP: &str = "space next screen, Enter next line, b back, /text find, n again, q quit";

/// What to do after a key.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Print these lines under those on the screen (which scroll up).
    Scroll(Range<usize>),
    /// Clear the screen, then print these lines from its top.
    Redraw(Range<usize>),
    /// Print nothing; the prompt row says this until the next key.
    Say(String),
    /// Print nothing; the prompt again.
    Stay,
    Quit,
}

/// Which lines of the output are on the screen, and which the keys bring. No terminal
/// here: [`page`] prints what the steps say.
struct Pager<'a> {
    lines: &'a [String],
    /// Rows for lines: the terminal's last row holds the prompt.
    screen: usize,
    /// For lines longer than a row, which take several.
    columns: usize,
    /// The first line on the screen: `b` goes back from it, `/` and `n` look after it.
    top: usize,
    /// Lines before this one have been printed: the next screen starts here.
    shown: usize,
    /// The last pattern looked for, for `n`.
    pattern: Option<String>,
}

impl<'a> Pager<'a> {
    fn new(lines: &'a [String], rows: usize, columns: usize) -> Pager<'a> {
        Pager {
            lines,
            screen: rows.saturating_sub(1).max(1),
            columns,
            top: 0,
            shown: 0,
            pattern: None,
        }
    }

    /// The first screen, printed under the command that asked for it.
    fn start(&mut self) -> Step {
        self.scroll_to(self.screen_from(0))
    }

    /// Everything has been printed: paging is over.
    fn finished(&self) -> bool {
        self.shown >= self.lines.len()
    }

    /// The prompt: how much of the output is above its row.
    fn prompt(&self) -> String {
        let percent = self.shown * 100 / self.lines.len().max(1);
        format!("---(more {percent}%)---")
    }

    /// What a key brings. `/` needs its pattern first: [`Pager::search`] takes both.
    fn answer(&mut self, key: Key) -> Step {
        match key {
            Key::Page => self.scroll_to(self.screen_from(self.shown)),
            Key::Line => self.scroll_to((self.shown + 1).min(self.lines.len())),
            Key::Back if self.top == 0 => Step::Say("top of the output".into()),
            Key::Back => self.redraw_from(self.screen_before(self.top)),
            Key::Again => self.again(),
            Key::Help => Step::Say(HELP.into()),
            Key::Quit => Step::Quit,
            Key::Search | Key::Other => Step::Stay,
        }
    }

    /// `/` and `pattern`: the screen starting at its next line. Plain text, case-sensitive.
    /// An empty pattern is the last one again (as in less), not a match of every line.
    fn search(&mut self, pattern: &str) -> Step {
        if !pattern.is_empty() {
            self.pattern = Some(pattern.to_string());
        }
        self.again()
    }

    /// The screen starting at the first line after the top that contains the last pattern:
    /// the line on top is skipped, so that `n` after a match finds the next one.
    fn again(&mut self) -> Step {
        let Some(pattern) = &self.pattern else {
            return Step::Say("no pattern yet: / then text then Enter".into());
        };
        let found = self
            .lines
            .iter()
            .enumerate()
            .skip(self.top + 1)
            .find(|(_, line)| line.contains(pattern.as_str()));
        match found {
            Some((at, _)) => self.redraw_from(at),
            None => Step::Say(format!("pattern not found: {pattern}")),
        }
    }

    /// Prints up to `end` under what is shown; the screen scrolls, its top with it.
    fn scroll_to(&mut self, end: usize) -> Step {
        let from = self.shown;
        self.shown = end;
        self.top = self.screen_before(end);
        Step::Scroll(from..end)
    }

    /// A screen from `top`, on a cleared terminal.
    fn redraw_from(&mut self, top: usize) -> Step {
        self.top = top;
        self.shown = self.screen_from(top);
        Step::Redraw(top..self.shown)
    }

    /// The end of a screen starting at `from`. A line is printed while a row is left, even
    /// if it wraps past the last one (as the terminal would print it).
    fn screen_from(&self, from: usize) -> usize {
        let mut room = self.screen;
        let mut end = from;
        while end < self.lines.len() && room > 0 {
            room = room.saturating_sub(self.height(end));
            end += 1;
        }
        end
    }

    /// The first line of the screen that ends just before `end`: as many lines as fit
    /// whole, and at least one.
    fn screen_before(&self, end: usize) -> usize {
        let mut room = self.screen;
        let mut start = end;
        while start > 0 {
            let rows = self.height(start - 1);
            if rows > room && start < end {
                break;
            }
            room = room.saturating_sub(rows);
            start -= 1;
        }
        start
    }

    fn height(&self, line: usize) -> usize {
        self.lines.get(line).map_or(1, |l| height(l, self.columns))
    }
}

/// Rows a line takes on a terminal `columns` wide.
fn height(line: &str, columns: usize) -> usize {
    line.chars().count().div_ceil(columns.max(1)).max(1)
}

/// Shows `lines` a screen of `rows` at a time (the last row holds the prompt).
pub fn page(lines: &[String], rows: usize) {
    let columns = terminal_size().map_or(80, |(_, c)| c);
    let Some(keys) = Keys::open() else {
        // No terminal to read keys from: everything at once.
        return lines.iter().for_each(|l| efb_text_table::print_line(l));
    };
    let mut pager = Pager::new(lines, rows, columns);
    let mut step = pager.start();
    loop {
        match &step {
            Step::Scroll(range) => print(lines, range, false),
            Step::Redraw(range) => print(lines, range, true),
            Step::Quit => return,
            Step::Say(_) | Step::Stay => {}
        }
        if pager.finished() {
            return;
        }
        let prompt = match step {
            Step::Say(message) => format!("---({message})---"),
            _ => pager.prompt(),
        };
        step = ask(&keys, &mut pager, &prompt, columns);
    }
}

/// Prints some of the lines, from the top of a cleared screen when `clear`: a screen that
/// does not follow the one shown (found, or back) is then alone on the terminal, not
/// mistaken for the lines that were above it.
fn print(lines: &[String], range: &Range<usize>, clear: bool) {
    if clear {
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "\x1b[H\x1b[2J");
    }
    let shown = lines.get(range.clone()).unwrap_or_default();
    shown.iter().for_each(|l| efb_text_table::print_line(l));
}

/// Puts `prompt` on the last row and waits for a key that means something (`/` with its
/// pattern); the row is blank again for what the key brings.
fn ask(keys: &Keys, pager: &mut Pager, prompt: &str, columns: usize) -> Step {
    say(prompt, columns);
    let step = loop {
        // End of input stops as q does.
        let Some(byte) = keys.read() else {
            break Step::Quit;
        };
        match key(byte) {
            Key::Other => continue,
            Key::Search => match read_pattern(keys, columns) {
                Some(pattern) => break pager.search(&pattern),
                // Given up: the more-prompt again, and its keys.
                None => say(&pager.prompt(), columns),
            },
            asked => break pager.answer(asked),
        }
    };
    on_prompt_row("");
    step
}

/// The pattern typed after `/`, shown on the prompt row as it grows; `None` when given up
/// (Ctrl-C, Escape, Backspace past the `/`, end of input).
fn read_pattern(keys: &Keys, columns: usize) -> Option<String> {
    let mut typed = Vec::new();
    loop {
        echo(&format!("/{}", String::from_utf8_lossy(&typed)), columns);
        match edit(&mut typed, keys.read()?) {
            Edit::Typing => {}
            Edit::Done => return Some(String::from_utf8_lossy(&typed).into_owned()),
            Edit::Cancel => return None,
        }
    }
}

/// Where a pattern is after one more key.
#[derive(Debug, PartialEq, Eq)]
enum Edit {
    Typing,
    Done,
    Cancel,
}

/// One key typed into a pattern (its UTF-8 bytes, as they come).
fn edit(typed: &mut Vec<u8>, byte: u8) -> Edit {
    match byte {
        b'\r' | b'\n' => Edit::Done,
        // Ctrl-C, Ctrl-D, Escape (an arrow's sequence starts with it: what follows is
        // ignored at the more-prompt).
        3 | 4 | 0x1b => Edit::Cancel,
        // Backspace or Delete with nothing typed: the `/` goes, as in less.
        8 | 0x7f if typed.is_empty() => Edit::Cancel,
        8 | 0x7f => {
            // The whole last character: its continuation bytes (10xxxxxx), then its first.
            while typed.pop().is_some_and(|b| b & 0xc0 == 0x80) {}
            Edit::Typing
        }
        // Ctrl-U: all of it.
        0x15 => {
            typed.clear();
            Edit::Typing
        }
        // Other controls would not show: they type nothing.
        0..0x20 => Edit::Typing,
        _ => {
            typed.push(byte);
            Edit::Typing
        }
    }
}

/// A prompt or a message on the prompt row: its start, when longer than the row (a prompt
/// that wrapped would leave its first row behind when cleared).
fn say(text: &str, columns: usize) {
    on_prompt_row(&first_chars(&efb_text_table::escape(text), columns));
}

/// What is typed, on the prompt row: its end, when longer than the row, as the cursor is
/// there. Escaped: a pattern typed is shown, never obeyed by the terminal.
fn echo(text: &str, columns: usize) {
    on_prompt_row(&last_chars(&efb_text_table::escape(text), columns));
}

/// Replaces the prompt row's text (empty: a blank row, for what comes next).
fn on_prompt_row(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "\r\x1b[K{text}");
    let _ = out.flush();
}

/// The start of `text`, as much as a row holds: the last column stays for the cursor.
fn first_chars(text: &str, columns: usize) -> String {
    text.chars().take(row_room(columns)).collect()
}

/// The end of `text`, as much as a row holds.
fn last_chars(text: &str, columns: usize) -> String {
    let skip = text.chars().count().saturating_sub(row_room(columns));
    text.chars().skip(skip).collect()
}

fn row_room(columns: usize) -> usize {
    columns.saturating_sub(1).max(1)
}

/// Standard input read a key at a time: no echo, no line editing, Ctrl-C a key rather
/// than a signal. The terminal's settings come back when this goes.
pub(crate) struct Keys {
    saved: libc::termios,
}

impl Keys {
    /// `None` when standard input is no terminal.
    pub(crate) fn open() -> Option<Keys> {
        // SAFETY: tcgetattr and tcsetattr read and write the `termios` given, on fd 0.
        unsafe {
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut saved) != 0 {
                return None;
            }
            let mut raw = saved;
            raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
            raw.c_cc[libc::VMIN] = 1;
            raw.c_cc[libc::VTIME] = 0;
            if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) != 0 {
                return None;
            }
            Some(Keys { saved })
        }
    }

    /// One byte, read alone: what follows stays for the line editor.
    fn read(&self) -> Option<u8> {
        let mut byte = 0u8;
        loop {
            // SAFETY: reads at most one byte into `byte`.
            let n = unsafe { libc::read(libc::STDIN_FILENO, (&raw mut byte).cast(), 1) };
            match n {
                1 => return Some(byte),
                -1 if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
                }
                _ => return None,
            }
        }
    }
}

impl Keys {
    /// A key pressed within `timeout`, or `None`. The rest of what the key sent (an
    /// arrow's escape sequence) is thrown away, not left for the line editor to type.
    pub(crate) fn within(&self, timeout: std::time::Duration) -> Option<u8> {
        let mut wanted = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: polls the one pollfd given.
        let ready = unsafe { libc::poll(&mut wanted, 1, ms) };
        if ready <= 0 {
            // Timed out, or a signal (a resized window) came: no key.
            return None;
        }
        // End of input stops as a key would (Ctrl-D).
        let key = self.read().unwrap_or(4);
        // SAFETY: drops what is waiting on fd 0; nothing else.
        unsafe {
            libc::tcflush(libc::STDIN_FILENO, libc::TCIFLUSH);
        }
        Some(key)
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        // SAFETY: puts back the settings tcgetattr gave.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `line 0`, `line 1`, ...
    fn numbered(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("line {i}")).collect()
    }

    #[test]
    fn keys_and_heights() {
        assert_eq!(key(b' '), Key::Page);
        assert_eq!(key(b'\r'), Key::Line);
        assert_eq!(key(b'b'), Key::Back);
        assert_eq!(key(b'/'), Key::Search);
        assert_eq!(key(b'n'), Key::Again);
        assert_eq!(key(b'?'), Key::Help);
        assert_eq!(key(b'q'), Key::Quit);
        assert_eq!(key(3), Key::Quit);
        assert_eq!(key(b'x'), Key::Other);
        assert_eq!(height("", 80), 1);
        assert_eq!(height(&"x".repeat(80), 80), 1);
        assert_eq!(height(&"x".repeat(81), 80), 2);
        assert!(HELP.len() + "---()---".len() < 80, "{HELP}");
    }

    #[test]
    fn space_shows_a_screen_enter_a_line_and_the_prompt_counts_them() {
        let lines = numbered(50);
        // 11 rows: 10 lines and the prompt.
        let mut pager = Pager::new(&lines, 11, 80);
        assert_eq!(pager.start(), Step::Scroll(0..10));
        assert_eq!(pager.prompt(), "---(more 20%)---");
        assert_eq!(pager.answer(Key::Page), Step::Scroll(10..20));
        assert_eq!(pager.top, 10);
        assert_eq!(pager.answer(Key::Line), Step::Scroll(20..21));
        assert_eq!(pager.top, 11, "the screen scrolled a line");
        assert_eq!(pager.prompt(), "---(more 42%)---");
        assert_eq!(pager.answer(Key::Other), Step::Stay);
        assert_eq!(pager.answer(Key::Page), Step::Scroll(21..31));
        assert_eq!(pager.answer(Key::Page), Step::Scroll(31..41));
        assert_eq!(pager.answer(Key::Page), Step::Scroll(41..50));
        assert!(pager.finished());
    }

    #[test]
    fn a_search_shows_the_screen_from_the_next_match_and_n_the_one_after() {
        let mut lines = numbered(50);
        lines[30] = "needle one".into();
        lines[35] = "needle two".into();
        let mut pager = Pager::new(&lines, 11, 80);
        pager.start();
        assert_eq!(pager.search("needle"), Step::Redraw(30..40));
        assert_eq!(pager.prompt(), "---(more 80%)---");
        assert_eq!(pager.answer(Key::Again), Step::Redraw(35..45));
        // No third: the message, and the screen stays.
        let not_found = Step::Say("pattern not found: needle".into());
        assert_eq!(pager.answer(Key::Again), not_found);
        assert_eq!((pager.top, pager.shown), (35, 45));
        // `/` and Enter alone: the last pattern again.
        assert_eq!(pager.search(""), not_found);
        // Case matters; the pattern not found is the one `n` looks for next.
        let upper = Step::Say("pattern not found: Needle".into());
        assert_eq!(pager.search("Needle"), upper);
        assert_eq!(pager.answer(Key::Again), upper);
        assert!(!pager.finished());
    }

    #[test]
    fn a_search_starts_after_the_line_on_top() {
        let mut lines = numbered(50);
        lines[0] = "x on top".into();
        lines[5] = "x on the screen".into();
        let mut pager = Pager::new(&lines, 11, 80);
        pager.start();
        assert_eq!(pager.search("x on"), Step::Redraw(5..15));
    }

    #[test]
    fn n_before_any_search_says_so_and_nothing_moves() {
        let lines = numbered(50);
        let mut pager = Pager::new(&lines, 11, 80);
        pager.start();
        let Step::Say(message) = pager.answer(Key::Again) else {
            panic!("a message expected");
        };
        assert!(message.contains("no pattern"), "{message}");
        assert_eq!((pager.top, pager.shown), (0, 10));
        assert_eq!(pager.answer(Key::Help), Step::Say(HELP.into()));
    }

    #[test]
    fn back_shows_the_screen_before_and_stays_at_the_top() {
        let lines = numbered(50);
        let mut pager = Pager::new(&lines, 11, 80);
        pager.start();
        pager.answer(Key::Page);
        pager.answer(Key::Page);
        assert_eq!(pager.answer(Key::Back), Step::Redraw(10..20));
        assert_eq!(pager.prompt(), "---(more 40%)---");
        assert_eq!(pager.answer(Key::Back), Step::Redraw(0..10));
        assert_eq!(
            pager.answer(Key::Back),
            Step::Say("top of the output".into())
        );
        // Space goes on from the screen shown.
        assert_eq!(pager.answer(Key::Page), Step::Scroll(10..20));
        // A line further: back is the screen that ends above the top.
        pager.answer(Key::Line);
        assert_eq!(pager.answer(Key::Back), Step::Redraw(1..11));
    }

    #[test]
    fn a_match_in_the_last_screen_ends_paging() {
        let mut lines = numbered(50);
        lines[47] = "the end".into();
        let mut pager = Pager::new(&lines, 11, 80);
        pager.start();
        assert_eq!(pager.search("end"), Step::Redraw(47..50));
        assert!(pager.finished());
    }

    #[test]
    fn screens_count_the_rows_of_wrapped_lines() {
        // 25 characters on 10 columns: 3 rows each.
        let lines = vec!["x".repeat(25); 10];
        let pager = Pager::new(&lines, 11, 10);
        // 3 + 3 + 3 rows, and a fourth line starting on the last row.
        assert_eq!(pager.screen_from(0), 4);
        // Back from there: the three that fit whole.
        assert_eq!(pager.screen_before(4), 1);
        // A line taller than the screen comes alone.
        let tall = vec!["x".repeat(500); 3];
        let pager = Pager::new(&tall, 11, 10);
        assert_eq!(pager.screen_from(1), 2);
        assert_eq!(pager.screen_before(2), 1);
    }

    #[test]
    fn a_pattern_is_typed_edited_and_given_up() {
        let mut typed = Vec::new();
        for byte in "a\u{e9}".bytes() {
            assert_eq!(edit(&mut typed, byte), Edit::Typing);
        }
        assert_eq!(typed, "a\u{e9}".as_bytes());
        // Backspace takes the whole character, not a byte of it.
        assert_eq!(edit(&mut typed, 0x7f), Edit::Typing);
        assert_eq!(typed, b"a");
        // Controls type nothing.
        assert_eq!(edit(&mut typed, 0x01), Edit::Typing);
        assert_eq!(edit(&mut typed, b'b'), Edit::Typing);
        assert_eq!(typed, b"ab");
        assert_eq!(edit(&mut typed, b'\r'), Edit::Done);
        assert_eq!(edit(&mut typed, 0x15), Edit::Typing);
        assert!(typed.is_empty());
        assert_eq!(edit(&mut typed, 8), Edit::Cancel, "backspace past the /");
        assert_eq!(edit(&mut typed, 0x1b), Edit::Cancel);
        assert_eq!(edit(&mut typed, 3), Edit::Cancel);
    }

    #[test]
    fn what_goes_on_the_prompt_row_fits_it() {
        assert_eq!(first_chars("---(more 5%)---", 8), "---(mor");
        assert_eq!(last_chars("/a long pattern", 8), "pattern");
        assert_eq!(last_chars("/ab", 80), "/ab");
        assert_eq!(first_chars("abc", 0), "a");
    }
}
