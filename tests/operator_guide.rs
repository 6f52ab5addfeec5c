//! docs/operator-guide.md, run as written: every example of the guide, in its order, on one
//! real site, and the lines the guide shows under them checked in what they printed.
//!
//! The guide's examples are fenced blocks of two kinds, and it has no other kind (an example
//! that no test runs is an example nobody checks):
//!
//! - ```` ```efb ````: a session of the shell. Lines starting with the prompt `efb> ` or
//!   `efb# ` are typed; the block's commands run as one efb-cli script (one session, so a
//!   block that enters configuration mode ends with a commit or a `discard`). The prompt
//!   must be the mode's: `efb#` from `edit` or `configure` until `exit`, `quit` or `commit
//!   and-quit` leaves, `efb>` otherwise.
//! - ```` ```sh ````: lines starting with `$ ` are command lines, each run by `sh -c`, which
//!   must exit 0 (where the exit status is the point the line says so itself: `...; echo
//!   "exit status $?"`).
//!
//! Every other line of a block is expected output. Each must be found within one line of
//! what the block printed (standard output and standard error as one stream; for `sh`, what
//! its own command printed), in order: each after the line the expected line before it
//! matched. Runs of white space compare as one space, and `...` stands for any text (a line
//! of `...` alone stands for lines left out and checks nothing). efb-cli scripts prefix an
//! error with its line (`error: line 3: ...`), a terminal does not, nor does the guide: the
//! prefix is dropped before comparing. A command whose expected lines include one starting
//! with `error:` is expected to fail, and is the last of its block. A block of `show`
//! commands only is run again, for up to 15 s, until its lines are there (liveness takes its
//! time: a pair goes down some intervals after its filter died).
//!
//! Where the blocks run: one site for the whole guide, the one-filter example site committed
//! (commit 1) by a real efbd on a real software chip (efb-target), as `./run.sh` runs it, in
//! a scratch directory holding `examples` (a link to the repository's), so that the files the
//! guide writes land there and its paths are the repository's. `efb-cli`, `efb-config` and
//! `efb-target` are on PATH and EFB_CONNECT names this efbd. The one substitution:
//! `127.0.0.1:9559`, the software chip's address under `./run.sh`, is this test's chip's
//! address in `$` lines.
//!
//! A failure names the guide's line: of the command that failed, or of the expected line
//! that is missing, with what was printed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use efb_tests::chip_io::{configure, daemon_on};
use efb_tests::{Daemon, Target, binary, repo};

const GUIDE: &str = "docs/operator-guide.md";

/// The software chip's address in the guide (./run.sh's), replaced by the test's chip's.
const RUN_SH_TARGET: &str = "127.0.0.1:9559";

/// How long a block of `show` commands may take to show its lines.
const SHOW_PATIENCE: Duration = Duration::from_secs(15);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Efb,
    Sh,
}

/// A command of a block, with the lines expected under it.
#[derive(Debug)]
struct Step {
    /// The line of the guide (from 1).
    line: usize,
    command: String,
    /// Expected lines with their line in the guide.
    expect: Vec<(usize, String)>,
}

impl Step {
    /// Whether the command is expected to fail (an expected `error:` line).
    fn fails(&self) -> bool {
        self.expect
            .iter()
            .any(|(_, e)| e.trim_start().starts_with("error:"))
    }
}

#[derive(Debug)]
struct Block {
    kind: Kind,
    /// The line of its opening fence.
    line: usize,
    steps: Vec<Step>,
}

/// The guide's examples, checked for the conventions above (prompts, fences); what breaks
/// them, with its line.
fn parse(text: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    let mut mode = Mode::default();
    for (number, raw) in (1..).zip(text.lines()) {
        if let Some(info) = raw.trim_start().strip_prefix("```") {
            match open.take() {
                Some(block) => {
                    close(&block, number, info)?;
                    blocks.push(block);
                }
                None => {
                    let kind = match info.trim() {
                        "efb" => Kind::Efb,
                        "sh" => Kind::Sh,
                        other => {
                            return Err(format!(
                                "{GUIDE}:{number}: a block of kind {other:?}: the guide's \
                                 examples are efb or sh blocks, which this test runs"
                            ));
                        }
                    };
                    mode = Mode::default();
                    open = Some(Block {
                        kind,
                        line: number,
                        steps: Vec::new(),
                    });
                }
            }
            continue;
        }
        let Some(block) = open.as_mut() else {
            continue;
        };
        if raw.trim().is_empty() {
            continue;
        }
        let command = match block.kind {
            Kind::Efb => match (raw.strip_prefix("efb> "), raw.strip_prefix("efb# ")) {
                (Some(command), _) => Some(mode.typed(command, false, number)?),
                (_, Some(command)) => Some(mode.typed(command, true, number)?),
                _ => None,
            },
            Kind::Sh => raw.strip_prefix("$ "),
        };
        match (command, block.steps.last_mut()) {
            (Some(command), _) => block.steps.push(Step {
                line: number,
                command: command.trim().to_string(),
                expect: Vec::new(),
            }),
            (None, Some(step)) => {
                if raw.trim() != "..." {
                    step.expect.push((number, raw.to_string()));
                }
            }
            (None, None) => {
                return Err(format!(
                    "{GUIDE}:{number}: output before any command: {raw:?}"
                ));
            }
        }
    }
    match open {
        Some(block) => Err(format!("{GUIDE}:{}: the block is not closed", block.line)),
        None => Ok(blocks),
    }
}

/// A block ends (`info`: what follows its closing fence).
fn close(block: &Block, number: usize, info: &str) -> Result<(), String> {
    if !info.trim().is_empty() {
        return Err(format!(
            "{GUIDE}:{number}: a fence inside the block of line {}",
            block.line
        ));
    }
    let Some((_last, others)) = block.steps.split_last() else {
        return Err(format!("{GUIDE}:{}: a block without a command", block.line));
    };
    if block.kind == Kind::Sh {
        return Ok(());
    }
    match others.iter().find(|s| s.fails()) {
        Some(step) => Err(format!(
            "{GUIDE}:{}: a command expected to fail ends its block (the script stops there)",
            step.line
        )),
        None => Ok(()),
    }
}

/// The shell's mode along an efb block, to check its prompts.
#[derive(Default)]
struct Mode {
    configuring: bool,
    /// `edit PATH` levels entered in configuration mode (each `exit` leaves one).
    levels: usize,
}

impl Mode {
    /// `command` typed at the prompt of configuration mode (`efb#`) or not (`efb>`).
    fn typed<'a>(
        &mut self,
        command: &'a str,
        at_hash: bool,
        number: usize,
    ) -> Result<&'a str, String> {
        let name = |configuring: bool| {
            if configuring {
                "configuration"
            } else {
                "operational"
            }
        };
        if at_hash != self.configuring {
            return Err(format!(
                "{GUIDE}:{number}: the prompt of {} mode, but the shell is in {} mode",
                name(at_hash),
                name(self.configuring)
            ));
        }
        let words: Vec<&str> = command.split_whitespace().collect();
        match (self.configuring, words.as_slice()) {
            (false, ["edit" | "configure"]) => self.configuring = true,
            (true, ["edit", _, ..]) => self.levels += 1,
            (true, ["exit"]) if self.levels > 0 => self.levels -= 1,
            (true, ["exit" | "quit"] | ["exit", "configuration-mode"]) => *self = Mode::default(),
            (true, ["commit", ..]) if words.contains(&"and-quit") => *self = Mode::default(),
            _ => {}
        }
        Ok(command)
    }
}

/// A line as compared: runs of white space as one space, without a script's `line N: `.
fn normal(line: &str) -> String {
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some((number, message)) = line
        .strip_prefix("error: line ")
        .and_then(|rest| rest.split_once(": "))
        && number.bytes().all(|b| b.is_ascii_digit())
    {
        return format!("error: {message}");
    }
    line
}

/// Whether `line` (normal) holds `expected` (normal), `...` standing for any text.
fn holds(line: &str, expected: &str) -> bool {
    let mut at = 0;
    for part in expected.split("...") {
        if part.is_empty() {
            continue;
        }
        match line[at..].find(part) {
            Some(found) => at += found + part.len(),
            None => return false,
        }
    }
    true
}

/// The first expected line not found in `output`, in order, if any.
fn missing<'a>(
    output: &str,
    expect: impl Iterator<Item = &'a (usize, String)>,
) -> Option<&'a (usize, String)> {
    let lines: Vec<String> = output.lines().map(normal).collect();
    let mut next = 0;
    for expected in expect {
        let wanted = normal(&expected.1);
        match lines[next..].iter().position(|l| holds(l, &wanted)) {
            Some(found) => next += found + 1,
            None => return Some(expected),
        }
    }
    None
}

/// The site the guide runs on. Fields drop in this order: efbd, then the chip, then the
/// directory of efbd's datastore.
struct Site {
    daemon: Daemon,
    _target: Target,
    _dir: tempfile::TempDir,
    target_address: String,
    scratch: PathBuf,
    path: String,
}

impl Site {
    fn start() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let target = Target::start(&[]);
        let daemon = daemon_on(dir.path(), &target);
        configure(&daemon, "");
        let scratch = dir.path().join("work");
        std::fs::create_dir(&scratch).unwrap();
        std::os::unix::fs::symlink(repo().join("examples"), scratch.join("examples")).unwrap();
        let bin = binary("efb-cli");
        binary("efb-config");
        binary("efb-target");
        let bin_dir = bin.parent().unwrap().to_path_buf();
        let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )))
        .unwrap()
        .to_string_lossy()
        .into_owned();
        Site {
            target_address: target.address.clone(),
            _dir: dir,
            _target: target,
            daemon,
            scratch,
            path,
        }
    }

    /// `command` with its output (standard output and error as one stream) and exit code.
    fn run(&self, mut command: Command, stdin: &str) -> (i32, String) {
        use std::io::Write;
        let mut child = command
            .current_dir(&self.scratch)
            .env("PATH", &self.path)
            .env("EFB_CONNECT", &self.daemon.address)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("sh starts");
        if let Some(mut input) = child.stdin.take() {
            let _ = input.write_all(stdin.as_bytes());
        }
        let out = child.wait_with_output().expect("the command runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    /// An efb block: its commands as one script of the shell.
    fn efb(&self, block: &Block) -> Result<(), String> {
        let script: String = block
            .steps
            .iter()
            .map(|s| format!("{}\n", s.command))
            .collect();
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg("exec \"$0\" \"$@\" 2>&1")
            .arg(binary("efb-cli"))
            .args(["--connect", &self.daemon.address]);
        let (code, output) = self.run(command, &script);
        let last = block.steps.last().expect("a block has a command");
        let expected_failure = last.fails().then_some(block.steps.len());
        let failed_at = output
            .lines()
            .filter_map(|l| l.strip_prefix("error: line "))
            .find_map(|rest| {
                rest.split_once(':')
                    .and_then(|(n, _)| n.parse::<usize>().ok())
            });
        match (code, expected_failure, failed_at) {
            (0, None, _) => {}
            (0, Some(_), _) => {
                return Err(format!(
                    "{GUIDE}:{}: `{}` was expected to fail, and did not:\n{output}",
                    last.line, last.command
                ));
            }
            (_, Some(expected), Some(at)) if expected == at => {}
            (_, _, Some(at)) if at >= 1 && at <= block.steps.len() => {
                let step = &block.steps[at - 1];
                return Err(format!(
                    "{GUIDE}:{}: `{}` failed (exit status {code}):\n{output}",
                    step.line, step.command
                ));
            }
            _ => {
                return Err(format!(
                    "{GUIDE}:{}: the block failed (exit status {code}):\n{output}",
                    block.line
                ));
            }
        }
        let expect = block.steps.iter().flat_map(|s| s.expect.iter());
        if let Some((line, text)) = missing(&output, expect) {
            let step = block
                .steps
                .iter()
                .find(|s| s.expect.iter().any(|(l, _)| l == line))
                .expect("the expected line's command");
            return Err(format!(
                "{GUIDE}:{line}: not in what the block printed, after the lines matched \
                 before it (under `{}`, line {}):\n  {}\n--- the block printed:\n{output}",
                step.command,
                step.line,
                text.trim()
            ));
        }
        Ok(())
    }

    /// An sh block: each command line by `sh -c`, its output checked.
    fn sh(&self, block: &Block) -> Result<(), String> {
        for step in &block.steps {
            let line = step.command.replace(RUN_SH_TARGET, &self.target_address);
            let mut command = Command::new("sh");
            command.arg("-c").arg(format!("exec 2>&1\n{line}"));
            let (code, output) = self.run(command, "");
            if code != 0 {
                return Err(format!(
                    "{GUIDE}:{}: `{}` failed (exit status {code}):\n{output}",
                    step.line, step.command
                ));
            }
            if let Some((number, text)) = missing(&output, step.expect.iter()) {
                return Err(format!(
                    "{GUIDE}:{number}: not in what `{}` (line {}) printed, after the lines \
                     matched before it:\n  {}\n--- it printed:\n{output}",
                    step.command,
                    step.line,
                    text.trim()
                ));
            }
        }
        Ok(())
    }

    fn block(&self, block: &Block) -> Result<(), String> {
        match block.kind {
            Kind::Efb => self.efb(block),
            Kind::Sh => self.sh(block),
        }
    }
}

/// Whether a block only looks (every command a `show`): it may be run again.
fn only_shows(block: &Block) -> bool {
    block.kind == Kind::Efb
        && block
            .steps
            .iter()
            .all(|s| s.command.split_whitespace().next() == Some("show"))
}

fn guide() -> String {
    let path: &Path = &repo().join(GUIDE);
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_example_of_the_operator_guide_does_what_the_guide_says() {
    let blocks = parse(&guide()).unwrap_or_else(|why| panic!("{why}"));
    assert!(
        blocks.len() >= 20 && blocks.iter().any(|b| b.kind == Kind::Sh),
        "only {} blocks found in {GUIDE}: is the parser blind?",
        blocks.len()
    );
    let started = Instant::now();
    let site = Site::start();
    println!("site up in {:?}", started.elapsed());
    for block in &blocks {
        let began = Instant::now();
        let mut outcome = site.block(block);
        while outcome.is_err() && only_shows(block) && began.elapsed() < SHOW_PATIENCE {
            std::thread::sleep(Duration::from_millis(200));
            outcome = site.block(block);
        }
        if let Err(why) = outcome {
            panic!("{why}");
        }
        println!(
            "{GUIDE}:{}: {} block of {} command(s) as the guide says ({:?})",
            block.line,
            if block.kind == Kind::Efb { "efb" } else { "sh" },
            block.steps.len(),
            began.elapsed()
        );
    }
    println!("the whole guide in {:?}", started.elapsed());
}

/// The conventions read what they should: prompts, expected lines, `...`, failures.
#[test]
fn the_conventions_are_read_as_the_header_says() {
    let text = "intro\n```efb\nefb> edit\nEntering configuration mode\nefb# commit check\n...\n\
                error: configuration is not valid:\n```\n\n```sh\n$ echo a  b\na b\n```\n";
    let blocks = parse(text).unwrap();
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].steps.len(), 2);
    assert!(blocks[0].steps[1].fails() && !blocks[0].steps[0].fails());
    assert_eq!(blocks[0].steps[1].expect.len(), 1, "`...` checks nothing");
    assert_eq!(blocks[1].kind, Kind::Sh);
    assert!(holds(
        &normal("error: line 3: configuration is not valid:"),
        &normal("error: configuration is not valid:")
    ));
    assert!(holds(
        &normal("  f1-te1-te2    p9-0      p9-1      down    2026-12-06T07:28:12Z  19  lost"),
        &normal("f1-te1-te2 p9-0 p9-1 down ... lost")
    ));
    assert!(!holds("b then a", "a ... b"), "in order");
    let out = "one\ntwo\nthree\n";
    let ok = [(1, "one".to_string()), (2, "three".to_string())];
    assert!(missing(out, ok.iter()).is_none());
    let backwards = [(1, "three".to_string()), (2, "one".to_string())];
    assert_eq!(missing(out, backwards.iter()).map(|e| e.0), Some(2));
    let refused = |text: &str| parse(text).err().unwrap_or_default();
    assert!(
        refused("```efb\nefb# set x\n```\n").contains(":2: the prompt of configuration mode"),
        "efb# before edit is refused"
    );
    assert!(
        refused("```text\nhello\n```\n").contains(":1: a block of kind \"text\""),
        "a block the test cannot run is refused"
    );
    assert!(
        refused("```efb\nefb> show x\nerror: no\nefb> show y\n```\n")
            .contains(":2: a command expected to fail ends its block"),
        "a failure expected in the middle of a script is refused"
    );
}
