//! The pager's keys as engineers press them: a real efbd, efb-cli in a real terminal (PTY)
//! of few rows, output longer than the screen, the screen read after each key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use efb_tests::terminal::{shell_on_screen, site_daemon};
use rexpect::session::PtySession;

/// Rows of the terminal: 11 lines and the prompt.
const ROWS: u16 = 12;
const SCREEN: usize = ROWS as usize - 1;

/// Types keys without Enter.
fn keys(session: &mut PtySession, text: &str) {
    session.send(text).unwrap();
    session.flush().unwrap();
}

/// The lines a command prints, all at once (`| no-more`), up to the next prompt.
fn listing(session: &mut PtySession, line: &str) -> Vec<String> {
    session.send_line(&format!("{line} | no-more")).unwrap();
    // The line editor redraws the line at each key; the output starts after Enter's newline.
    session.exp_string("\r\n").unwrap();
    let printed = session.exp_string("efb> ").unwrap();
    let mut lines: Vec<String> = printed.split("\r\n").map(str::to_string).collect();
    // What is left after the last newline is the prompt row's, not output.
    lines.pop();
    lines
}

/// Presses `pressed` and reads the screen drawn again from the top, up to the next
/// more-prompt: its lines and its prompt.
fn redrawn(session: &mut PtySession, pressed: &str) -> (Vec<String>, String) {
    keys(session, pressed);
    let before = session.exp_string("---(more ").unwrap();
    let (_, screen) = before
        .rsplit_once("\x1b[H\x1b[2J")
        .unwrap_or_else(|| panic!("after {pressed:?}, the screen is not cleared: {before:?}"));
    let mut lines: Vec<String> = screen.split("\r\n").map(str::to_string).collect();
    // The prompt row, blanked for the next prompt.
    lines.pop();
    let percent = session.exp_string("%)---").unwrap();
    (lines, percent)
}

/// The percentage the more-prompt shows with `shown` of `total` lines printed.
fn percent(shown: usize, total: usize) -> String {
    (shown * 100 / total).to_string()
}

#[test]
fn slash_finds_n_finds_again_b_goes_back_and_a_missing_pattern_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let mut sh = shell_on_screen(&daemon, dir.path(), ROWS);
    // The configuration is some 250 lines; the screen holds 11. Ports from p9-0 on have an
    // MTU: the first is past the first screen, the second a few lines further.
    let all = listing(&mut sh, "show configuration");
    let pattern = "mtu 9216";
    let at: Vec<usize> = (0..all.len())
        .filter(|&i| all[i].contains(pattern))
        .collect();
    assert!(at.len() >= 2 && at[0] > SCREEN, "{at:?} in {all:#?}");
    let (first, second) = (at[0], at[1]);

    sh.send_line("show configuration").unwrap();
    let screen = sh.exp_string("---(more").unwrap();
    assert!(!screen.contains(pattern), "{screen}");
    // n before any search: said, and nothing moves.
    keys(&mut sh, "n");
    sh.exp_string("---(no pattern yet").unwrap();
    // h: the keys.
    keys(&mut sh, "h");
    sh.exp_string("/text find, n again").unwrap();
    // Escape gives up a pattern being typed: the more-prompt again, the screen as it was.
    keys(&mut sh, "/mtu\x1b");
    let given_up = sh.exp_string("---(more ").unwrap();
    assert!(given_up.contains("/mtu"), "echoed as typed: {given_up:?}");
    assert!(!given_up.contains("\x1b[2J"), "{given_up:?}");

    // /, the pattern, Enter: the screen starts at its first line.
    let (screen, shown) = redrawn(&mut sh, &format!("/{pattern}\r"));
    assert_eq!(screen, all[first..first + SCREEN], "{screen:#?}");
    assert_eq!(shown, percent(first + SCREEN, all.len()));

    // n: at the next one.
    let (screen, _) = redrawn(&mut sh, "n");
    assert_eq!(screen, all[second..second + SCREEN], "{screen:#?}");

    // b: the screen before, the lines above the second match printed again.
    let (screen, shown) = redrawn(&mut sh, "b");
    assert_eq!(screen, all[second - SCREEN..second], "{screen:#?}");
    assert!(screen.iter().any(|l| l == &all[first]), "{screen:#?}");
    assert_eq!(shown, percent(second, all.len()));

    // A pattern nowhere after the top: said on the prompt row, and the screen stays.
    keys(&mut sh, "/no such words\r");
    let typed = sh
        .exp_string("---(pattern not found: no such words)---")
        .unwrap();
    assert!(!typed.contains("\x1b[2J"), "{typed:?}");
    // Space goes on from the screen shown: the second match comes next.
    keys(&mut sh, " ");
    let next = sh.exp_string("---(more").unwrap();
    assert!(next.contains(&all[second]), "{next:?}");
    assert!(!next.contains("\x1b[2J"), "{next:?}");

    // q: the prompt again.
    keys(&mut sh, "q");
    sh.exp_string("efb> ").unwrap();
    sh.send_line("exit").unwrap();
    sh.exp_eof().unwrap();
}
