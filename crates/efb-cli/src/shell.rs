//! Running one line of the shell: operational commands from the grammar
//! (`operational.rs`, `get.rs`, `rpc.rs`...), configuration commands
//! (`configuration.rs`, `hierarchy.rs`, `commit.rs`), and pipes (`pipes.rs`). Everything
//! goes to efbd; nothing here changes configuration itself.

use std::sync::{Arc, Mutex};

use efb_mgmt_proto::v1::{Datastore, Format};
use efb_yang::input::{self, Limit};
use efb_yang::schema::Schema;
use efb_yang::setlines;
use serde_json::Value as Json;

use crate::client::{Client, ClientError};
use crate::complete::{KEY_LIMIT, KeySource, Mode};
use crate::config_commands::ConfigCommand;
use crate::grammar::Grammar;
use crate::pager;

mod clear;
mod commit;
mod configuration;
#[cfg(test)]
mod fuzz_tests;
mod get;
mod hierarchy;
mod interfaces;
mod log;
mod monitor;
mod numbering;
mod operational;
mod pipes;
mod rpc;
mod system;

use pipes::{Pipe, apply_pipes, compare_stage, operational_compare_stage, split_pipes};

/// What happened to a line.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Exit,
}

/// A command that failed: the message says what was wrong and what would be accepted.
/// Shown escaped and bounded: it may quote what another user or a script wrote.
#[derive(Debug, thiserror::Error)]
#[error("{}", efb_text_table::escape_lines(&efb_yang::text::bound(.0, efb_yang::text::MESSAGE_BYTES)))]
pub struct ShellError(pub String);

impl From<setlines::UnterminatedQuote> for ShellError {
    fn from(e: setlines::UnterminatedQuote) -> ShellError {
        ShellError(e.to_string())
    }
}

impl From<ClientError> for ShellError {
    fn from(e: ClientError) -> ShellError {
        ShellError(e.to_string())
    }
}

type Result<T> = std::result::Result<T, ShellError>;

/// Whether `word` is a configuration command a script may type in operational mode.
fn enters_configuration_mode(word: &str) -> bool {
    ConfigCommand::parse(word).is_some_and(ConfigCommand::enters_configuration_mode)
}

/// The line before a `?` that ends it outside quotes, if it does.
fn asks_help(line: &str) -> Option<&str> {
    let before = line.trim_end().strip_suffix('?')?;
    (!setlines::ends_inside_quote(before)).then_some(before)
}

fn fail<T>(message: impl Into<String>) -> Result<T> {
    Err(ShellError(message.into()))
}

/// What a command produced: lines for people, and the data behind them when there is data
/// (for `| display json`; `| display set` too when it is data of the model).
struct Output {
    lines: Vec<String>,
    data: Option<Json>,
    /// The data is a tree of the model (configuration and its state), which `| display
    /// set` can show as the lines that configure it; an operation's answer or facts about
    /// the daemon (status, history) cannot.
    config: bool,
    /// Configuration kept but not applied, in the data: the words of each such node
    /// (`| display set` adds a `deactivate` line for each).
    inactive: Vec<String>,
}

impl Output {
    fn lines(lines: Vec<String>) -> Output {
        Output {
            lines,
            data: None,
            config: false,
            inactive: Vec::new(),
        }
    }

    fn data(lines: Vec<String>, data: Json) -> Output {
        Output {
            lines,
            data: Some(data),
            config: true,
            inactive: Vec::new(),
        }
    }

    /// Lines with their data for `| display json`, data that is no configuration.
    fn facts(lines: Vec<String>, data: Json) -> Output {
        Output {
            lines,
            data: Some(data),
            config: false,
            inactive: Vec::new(),
        }
    }

    fn none() -> Output {
        Output::lines(Vec::new())
    }
}

pub struct Shell {
    pub client: Arc<Mutex<Client>>,
    pub schema: &'static Schema,
    pub grammar: Grammar,
    pub mode: Mode,
    /// Leaving configuration mode with uncommitted changes needs a second `exit`.
    exit_warned: bool,
    /// Scripts (stdin, -c): configuration commands enter configuration mode by themselves.
    pub scripted: bool,
    /// The largest file `load` reads.
    pub input_limit: Limit,
    /// Output longer than the screen is paged (an interactive shell on a terminal).
    pub paging: bool,
    /// `set cli screen-length N`: lines a page holds (0: no paging); unset, the terminal's.
    screen_length: Option<usize>,
    /// Where configuration commands apply (`edit PATH`), and where `exit` goes back to.
    place: hierarchy::Place,
}

impl Shell {
    pub fn new(client: Client, schema: &'static Schema, grammar: Grammar, scripted: bool) -> Shell {
        Shell {
            client: Arc::new(Mutex::new(client)),
            schema,
            grammar,
            mode: Mode::Operational,
            exit_warned: false,
            scripted,
            input_limit: Limit::mib(input::DEFAULT_MAX_INPUT_MIB, "--max-input-mib"),
            paging: false,
            screen_length: None,
            place: hierarchy::Place::default(),
        }
    }

    pub fn prompt(&self) -> &'static str {
        match self.mode {
            Mode::Operational => "efb> ",
            Mode::Configuration => "efb# ",
        }
    }

    fn client(&self) -> std::sync::MutexGuard<'_, Client> {
        self.client
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs one line; prints its output. An error is returned (for the caller to print),
    /// and nothing was changed by a line in error. A session lost since the last command
    /// (found out by a Tab) is said first, and the line is not run.
    pub fn execute(&mut self, line: &str) -> Result<Flow> {
        if let Some(why) = self.logged_out() {
            return fail(format!(
                "efbd closed this shell's session: {why}; the shell ends"
            ));
        }
        if let Some(notice) = self.client().take_notice() {
            return fail(notice);
        }
        // efbd names places by libyang paths (gNMI's language); the shell by its words.
        let result = self
            .execute_line(line)
            .map_err(|e| ShellError(setlines::paths_in_words(self.schema, &e.0)));
        self.forget_place_outside_configuration();
        if result.is_err() {
            // Said by this error already, if the session was lost during the line.
            self.client().take_notice();
        }
        result
    }

    fn execute_line(&mut self, line: &str) -> Result<Flow> {
        if let Some(before) = asks_help(line) {
            self.question(before).iter().for_each(|l| println!("{l}"));
            return Ok(Flow::Continue);
        }
        let (command, mut stages) = split_pipes(line)?;
        let words = setlines::split_words(&command)?;
        if words.is_empty() {
            return Ok(Flow::Continue);
        }
        let compare = match self.mode {
            Mode::Configuration => compare_stage(&words, &stages)?,
            Mode::Operational => match operational_compare_stage(&words, &stages)? {
                Some(n) => {
                    self.refuse_if_editing()?;
                    Some(Some(n))
                }
                None => None,
            },
        };
        if compare.is_some() {
            stages.remove(0);
        }
        let mut pipes = stages
            .iter()
            .map(|p| Pipe::parse(p))
            .collect::<Result<Vec<_>>>()?;
        if words[0] == "monitor" && !pipes.is_empty() {
            return fail(
                "monitor redraws the screen until a key is pressed: it takes no pipe (show ... | PIPE does)",
            );
        }
        let (output, flow) = if let Some(rollback) = compare {
            (self.compare(&mut pipes, rollback)?, Flow::Continue)
        } else {
            match self.mode {
                Mode::Operational => self.operational(&words, &command)?,
                Mode::Configuration => self.configuration(&words, &command)?,
            }
        };
        let paged = !pipes.iter().any(|p| matches!(p, Pipe::NoMore));
        let lines = apply_pipes(self.schema, output, &pipes)?;
        // Output carries what others wrote (names, comments, values): shown escaped.
        let shown: Vec<String> = lines
            .iter()
            .flat_map(|l| l.split('\n'))
            .map(|l| efb_text_table::escape(l).into_owned())
            .collect();
        match self.screen_length() {
            Some(rows) if paged => pager::page(&shown, rows),
            _ => shown.iter().for_each(|l| efb_text_table::print_line(l)),
        }
        Ok(flow)
    }

    /// efbd compares this session's candidate: in operational mode that is running only
    /// while no uncommitted change was left in it.
    fn refuse_if_editing(&mut self) -> Result<()> {
        let status = self.client().status()?;
        let mine = self.client().session;
        if status
            .open_sessions
            .iter()
            .any(|s| s.session == mine && s.uncommitted)
        {
            return fail(
                "this session's candidate holds uncommitted changes: compare them in \
                 configuration mode (show | compare rollback N), or commit or discard them first",
            );
        }
        Ok(())
    }

    /// `?` at the end of a line that did not come from the keyboard (`-c`, a script, a
    /// paste): the same list the key shows, for the line before it. A script's
    /// configuration command is answered from configuration mode, as it would run there.
    fn question(&self, before: &str) -> Vec<String> {
        let first = before.split_whitespace().next().unwrap_or_default();
        let mode = match self.mode {
            Mode::Operational if self.scripted && enters_configuration_mode(first) => {
                Mode::Configuration
            }
            mode => mode,
        };
        let keys = DaemonKeys {
            client: self.client.clone(),
            mode: Arc::new(Mutex::new(mode)),
        };
        let completer = crate::complete::Completer {
            schema: self.schema,
            grammar: &self.grammar,
            keys: &keys,
        };
        let found = completer.complete_at(mode, &self.place_words(), before);
        crate::complete::help_lines(&found)
    }

    /// Lines a screen shows when output is paged: none in scripts, when standard output is
    /// no terminal, or after `set cli screen-length 0`.
    fn screen_length(&self) -> Option<usize> {
        if !self.paging {
            return None;
        }
        match self.screen_length {
            Some(0) => None,
            Some(n) => Some(n),
            None => pager::terminal_rows(),
        }
    }

    /// Leaves cleanly: the session and its candidate go away.
    pub fn close(&mut self) {
        self.client().close();
    }

    /// Why an admin logged this shell's session out (`request system logout`), if one did:
    /// the shell ends then.
    pub fn logged_out(&self) -> Option<String> {
        self.client().logged_out()
    }

    pub fn has_uncommitted_changes(&mut self) -> bool {
        if self.logged_out().is_some() {
            return false;
        }
        self.client()
            .compare(Format::Set, None)
            .is_ok_and(|c| !c.is_empty())
    }
}

fn unix_ms_text(ms: u64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    let local = time
        .duration_since(std::time::SystemTime::now())
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!(
        "{} (in {}m{:02}s)",
        humantime_like(time),
        local / 60,
        local % 60
    )
}

fn humantime_like(time: std::time::SystemTime) -> String {
    let secs = time
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    format!("{h:02}:{m:02}:{s:02} UTC")
}

/// Keys for completion, from the daemon: the candidate in configuration mode.
pub struct DaemonKeys {
    pub client: Arc<Mutex<Client>>,
    pub mode: Arc<Mutex<Mode>>,
}

impl DaemonKeys {
    /// The candidate in configuration mode, running in operational mode.
    fn datastore(&self) -> Datastore {
        match *self.mode.lock().unwrap_or_else(|p| p.into_inner()) {
            Mode::Configuration => Datastore::Candidate,
            Mode::Operational => Datastore::Running,
        }
    }
}

impl KeySource for DaemonKeys {
    fn keys(&self, list_path: &str, prefix: &str) -> Vec<String> {
        let datastore = self.datastore();
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        client
            .list_keys(datastore, list_path, prefix, KEY_LIMIT)
            .map(|r| r.keys)
            .unwrap_or_default()
    }

    fn set_lines(&self, path: &str) -> Vec<String> {
        let datastore = self.datastore();
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        client
            .get(datastore, path, Format::Set, false)
            .map(|text| text.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    fn history(&self) -> Option<Vec<crate::complete::Commit>> {
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        let commits = client.history().ok()?;
        Some(
            commits
                .iter()
                .map(|c| crate::complete::Commit {
                    rollback: c.index as usize,
                    id: c.id,
                    said: system::rollback_help(c),
                })
                .collect(),
        )
    }
}

/// Whether `name` is `pattern`, where `*` stands for any run of characters (Junos's
/// wildcards in `show`).
fn wildcard_match(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Refuses words after a command that takes none (they used to be ignored, so that
/// `save now` or `show system status foo` ran as if they were not there).
fn nothing_after(command: &[String], rest: &[String]) -> Result<()> {
    if rest.is_empty() {
        return Ok(());
    }
    fail(format!(
        "\"{}\" takes nothing after it: unexpected \"{}\"",
        command.join(" "),
        rest.join(" ")
    ))
}

/// An edit that breaks a reference is kept (the engineer may be about to fix it), and said
/// at once rather than at commit.
fn broken_references(broken: &[efb_mgmt_proto::v1::Problem]) -> Vec<String> {
    broken
        .iter()
        .map(|p| {
            format!(
                "warning: {}; a commit is refused until that reference changes",
                p.message
            )
        })
        .collect()
}

/// Junos's question before a change a person may not have meant: only `yes` goes on.
fn confirmed(effect: &str) -> Result<bool> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{effect}.\nContinue? [yes,no] (no) ");
    let _ = out.flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| ShellError(format!("reading the answer: {e}")))?;
    Ok(matches!(answer.trim(), "yes" | "y"))
}
