//! Paging output longer than the screen, as Junos does: a screen at a time, then
//! `---(more NN%)---`; space shows the next screen, Enter the next line, q (or Ctrl-C) the
//! prompt again. Only in an interactive shell whose output is a terminal; `| no-more` and
//! `set cli screen-length 0` turn it off.

use std::io::Write;

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
    Quit,
    Other,
}

fn key(byte: u8) -> Key {
    match byte {
        b' ' | b'f' => Key::Page,
        b'\r' | b'\n' | b'j' => Key::Line,
        // Ctrl-C, Ctrl-D.
        b'q' | b'Q' | 3 | 4 => Key::Quit,
        _ => Key::Other,
    }
}

/// Shows `lines` a screen of `rows` at a time (the last row holds the prompt).
pub fn page(lines: &[String], rows: usize) {
    let columns = terminal_size().map_or(80, |(_, c)| c);
    let screen = rows.saturating_sub(1).max(1);
    let Some(keys) = Keys::open() else {
        // No terminal to read keys from: everything at once.
        return lines.iter().for_each(|l| efb_table::print_line(l));
    };
    let mut shown = 0;
    let mut room = screen;
    while shown < lines.len() {
        while shown < lines.len() && room > 0 {
            efb_table::print_line(&lines[shown]);
            room = room.saturating_sub(height(&lines[shown], columns));
            shown += 1;
        }
        if shown == lines.len() {
            break;
        }
        let percent = shown * 100 / lines.len();
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "---(more {percent}%)---");
        let _ = out.flush();
        let asked = loop {
            match keys.read().map(key) {
                Some(Key::Other) => continue,
                Some(k) => break k,
                None => break Key::Quit,
            }
        };
        // The prompt goes; the next line takes its place.
        let _ = write!(out, "\r\x1b[K");
        let _ = out.flush();
        match asked {
            Key::Page => room = screen,
            Key::Line => room = 1,
            _ => break,
        }
    }
}

/// Rows a line takes on a terminal `columns` wide.
fn height(line: &str, columns: usize) -> usize {
    line.chars().count().div_ceil(columns.max(1)).max(1)
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

    #[test]
    fn keys_and_heights() {
        assert_eq!(key(b' '), Key::Page);
        assert_eq!(key(b'\r'), Key::Line);
        assert_eq!(key(b'q'), Key::Quit);
        assert_eq!(key(3), Key::Quit);
        assert_eq!(key(b'x'), Key::Other);
        assert_eq!(height("", 80), 1);
        assert_eq!(height(&"x".repeat(80), 80), 1);
        assert_eq!(height(&"x".repeat(81), 80), 2);
    }
}
