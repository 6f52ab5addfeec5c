//! Running one line of the shell: operational commands from the grammar, configuration
//! commands, and pipes. Everything goes to efbd; nothing here changes configuration itself.

use std::sync::{Arc, Mutex};

use efb_mgmt_proto::v1::{CommitRequest, Datastore, Format, LoadMode};
use efb_yang::input::{self, Limit};
use efb_yang::schema::Schema;
use efb_yang::setlines::{self, Verb};
use efb_yang::{DataPath, Segment, diff, json};
use serde_json::Value as Json;

use crate::client::{Client, ClientError};
use crate::complete::{KEY_LIMIT, KeySource, Mode};
use crate::grammar::{Command, Grammar};
use crate::view;

/// What happened to a line.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Exit,
}

/// A command that failed: the message says what was wrong and what would be accepted.
/// Shown escaped and bounded: it may quote what another user or a script wrote.
#[derive(Debug, thiserror::Error)]
#[error("{}", efb_table::escape_lines(&efb_yang::text::bound(.0, efb_yang::text::MESSAGE_BYTES)))]
pub struct ShellError(pub String);

impl From<ClientError> for ShellError {
    fn from(e: ClientError) -> ShellError {
        ShellError(e.to_string())
    }
}

type Result<T> = std::result::Result<T, ShellError>;

fn fail<T>(message: impl Into<String>) -> Result<T> {
    Err(ShellError(message.into()))
}

/// What a command produced: lines for people, and the data behind them when there is data
/// (for `| display json` and `| display set`).
struct Output {
    lines: Vec<String>,
    data: Option<Json>,
}

impl Output {
    fn lines(lines: Vec<String>) -> Output {
        Output { lines, data: None }
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
        if let Some(notice) = self.client().take_notice() {
            return fail(notice);
        }
        let result = self.execute_line(line);
        if result.is_err() {
            // Said by this error already, if the session was lost during the line.
            self.client().take_notice();
        }
        result
    }

    fn execute_line(&mut self, line: &str) -> Result<Flow> {
        let (command, mut pipes) = split_pipes(line)?;
        let words = setlines::split_words(&command).map_err(ShellError)?;
        if words.is_empty() {
            return Ok(Flow::Continue);
        }
        let (output, flow) = if self.mode == Mode::Configuration && is_compare(&words, &pipes) {
            (self.compare(&mut pipes)?, Flow::Continue)
        } else {
            match self.mode {
                Mode::Operational => self.operational(&words, &command)?,
                Mode::Configuration => self.configuration(&words, &command)?,
            }
        };
        // Output carries what others wrote (names, comments, values): shown escaped.
        for line in apply_pipes(self.schema, output, &pipes)? {
            efb_table::print_line(&efb_table::escape_lines(&line));
        }
        Ok(flow)
    }

    // ----- operational mode -----

    fn operational(&mut self, words: &[String], line: &str) -> Result<(Output, Flow)> {
        if matches!(
            words[0].as_str(),
            "set" | "delete" | "commit" | "rollback" | "load"
        ) {
            if self.scripted {
                self.mode = Mode::Configuration;
                return self.configuration(words, line);
            }
            return fail(format!(
                "{} is a configuration command: enter configuration mode first (edit or configure)",
                words[0]
            ));
        }
        let Some((command, rest)) = self.grammar.find(words) else {
            return fail(self.unknown_command(words));
        };
        let command = command.clone();
        let rest = rest.to_vec();
        if let Some(builtin) = &command.builtin {
            let typed = &words[..words.len() - rest.len()];
            match builtin.as_str() {
                "show-configuration" => {}
                // `show system commit N`: what commit N changed.
                "history" if rest.len() == 1 => return self.commit_changes(&rest[0]),
                _ => nothing_after(typed, &rest)?,
            }
            return self.builtin(builtin, &rest);
        }
        let output = if command.rpc.is_some() {
            self.run_rpc(&command, &rest)?
        } else {
            self.run_get(&command, &rest)?
        };
        Ok((output, Flow::Continue))
    }

    fn unknown_command(&self, words: &[String]) -> String {
        // The longest prefix the grammar knows says where the line went wrong.
        let mut known = 0;
        while known < words.len()
            && !self
                .grammar
                .next_words(&words[..known])
                .iter()
                .all(|(w, _)| *w != words[known])
        {
            known += 1;
        }
        let expected: Vec<String> = self
            .grammar
            .next_words(&words[..known])
            .into_iter()
            .map(|(w, _)| w)
            .collect();
        let Some(word) = words.get(known) else {
            // The line stops short of a command: say what may follow, not `unknown word ""`.
            return format!(
                "\"{}\" is incomplete; continue with one of: {}",
                words.join(" "),
                expected.join(", ")
            );
        };
        let typed = efb_yang::text::excerpt(word);
        if known == 0 {
            format!(
                "unknown command \"{typed}\"; expected one of: {}",
                expected.join(", ")
            )
        } else {
            format!(
                "unknown word \"{typed}\" after \"{}\"; expected one of: {}",
                words[..known].join(" "),
                expected.join(", ")
            )
        }
    }

    fn builtin(&mut self, builtin: &str, rest: &[String]) -> Result<(Output, Flow)> {
        match builtin {
            "configure" => {
                self.mode = Mode::Configuration;
                self.exit_warned = false;
                Ok((
                    Output::lines(vec!["Entering configuration mode".into()]),
                    Flow::Continue,
                ))
            }
            "exit" => Ok((Output::none(), Flow::Exit)),
            "history" => Ok((self.history()?, Flow::Continue)),
            "status" => Ok((self.status()?, Flow::Continue)),
            "audit" => Ok((self.audit()?, Flow::Continue)),
            "show-configuration" => Ok((self.show_tree(Datastore::Running, rest)?, Flow::Continue)),
            other => fail(format!("the grammar names an unknown builtin {other}")),
        }
    }

    fn run_get(&mut self, command: &Command, rest: &[String]) -> Result<Output> {
        let Some(get) = &command.get else {
            return fail("internal: not a get command");
        };
        // The grammar's path, read against the schema once; the request names it in
        // libyang's form.
        let at = DataPath::parse(self.schema, &get.path).map_err(|e| ShellError(e.to_string()))?;
        let mut path = at.clone();
        let mut render = command.render.clone();
        let mut rest = rest;
        if let Some((last, before)) = rest.split_last()
            && let Some(view) = command.switches.get(last)
        {
            render = Some(view.clone());
            rest = before;
        }
        match (rest, &get.arg) {
            ([], _) => {}
            ([name], Some(_)) => path = self.entry(&at, name)?,
            _ => {
                return fail(format!(
                    "{}: unexpected \"{}\"; expected {}",
                    command.words,
                    rest.join(" "),
                    get.arg
                        .as_deref()
                        .map(|a| format!("at most one {a}"))
                        .unwrap_or_else(|| "nothing more".into())
                ));
            }
        }
        let datastore = match get.datastore.as_str() {
            "running" => Datastore::Running,
            _ => Datastore::Operational,
        };
        let text = self
            .client()
            .get(datastore, &path.display(self.schema), Format::Json, true)?;
        let doc: Json = serde_json::from_str(&text)
            .map_err(|e| ShellError(format!("efbd sent bad JSON: {e}")))?;
        let names = view::member_names(self.schema, &at);
        let found = view::at(&doc, &names);
        let lines = match render.as_deref() {
            Some("value") => vec![
                found
                    .map(view::text)
                    .unwrap_or_else(|| view::UNKNOWN.to_string()),
            ],
            Some("json") | None => vec![serde_json::to_string_pretty(&doc).unwrap_or_default()],
            Some(view_name) => {
                let mut entries: Vec<&Json> = found
                    .and_then(Json::as_array)
                    .map(|a| a.iter().collect())
                    .unwrap_or_default();
                self.in_natural_order(&at, &mut entries);
                if entries.is_empty() {
                    if let [name] = rest {
                        return fail(format!("{} {name}: no such entry", command.words));
                    }
                    vec![format!(
                        "(no {} configured)",
                        names.last().map(String::as_str).unwrap_or("entries")
                    )]
                } else {
                    match self.grammar.views.get(view_name) {
                        Some(v) => view::render_view(v, &entries),
                        None => return fail(format!("no view {view_name}")),
                    }
                }
            }
        };
        Ok(Output {
            lines,
            data: Some(doc),
        })
    }

    /// Entries of a list the system orders, sorted by their first key as people count
    /// (`p2` before `p10`); a list the user orders keeps the user's order.
    fn in_natural_order(&self, list: &DataPath, entries: &mut [&Json]) {
        let Some(list) = list.node().map(|id| self.schema.node(id)) else {
            return;
        };
        let Some(key) = list.keys.first().map(|k| self.schema.node(*k).name.clone()) else {
            return;
        };
        if list.user_ordered {
            return;
        }
        let key_of = |entry: &Json| entry.get(&key).map(view::text).unwrap_or_default();
        entries.sort_by(|a, b| efb_table::natural_cmp(&key_of(a), &key_of(b)));
    }

    /// The entry of the list at `list` whose first key is `value`, the value checked.
    fn entry(&self, list: &DataPath, value: &str) -> Result<DataPath> {
        let found = list
            .node()
            .and_then(|id| Some((id, *self.schema.node(id).keys.first()?)));
        let Some((id, key)) = found else {
            return fail(format!("{} is not a list", list.display(self.schema)));
        };
        let checked = self.schema.value(key, value).map_err(|e| {
            ShellError(format!(
                "{value}: {e}; expected {}",
                self.schema.node(key).accepts()
            ))
        })?;
        Ok(list.parent().child(Segment::with_keys(id, vec![checked])))
    }

    fn run_rpc(&mut self, command: &Command, rest: &[String]) -> Result<Output> {
        let Some(rpc) = &command.rpc else {
            return fail("internal: not an rpc command");
        };
        let mut input = serde_json::Map::new();
        let mut words = rest.iter();
        while let Some(word) = words.next() {
            let Some(param) = command.params.iter().find(|p| &p.word == word) else {
                let names: Vec<&str> = command.params.iter().map(|p| p.word.as_str()).collect();
                return fail(format!(
                    "{}: unknown parameter \"{word}\"; parameters are: {}",
                    command.words,
                    names.join(", ")
                ));
            };
            let Some(value) = words.next() else {
                return fail(format!("{}: {word} needs a value", command.words));
            };
            input.insert(param.leaf.clone(), Json::String(value.clone()));
        }
        let output = self.client().call_rpc(rpc, &Json::Object(input))?;
        let lines = match command.render.as_deref() {
            Some("done") => vec!["ok".to_string()],
            Some("json") => vec![serde_json::to_string_pretty(&output).unwrap_or_default()],
            Some(name) => match self.grammar.views.get(name) {
                Some(v) if !v.fields.is_empty() => view::render_fields(v, &output),
                _ => fields(&output),
            },
            None => fields(&output),
        };
        Ok(Output {
            lines,
            data: Some(output),
        })
    }

    /// The changes of one commit of the history, by its rollback number.
    fn commit_changes(&mut self, number: &str) -> Result<(Output, Flow)> {
        let index: u32 = number.parse().map_err(|_| {
            ShellError(format!(
                "show system commit: \"{number}\" is not a rollback number (0 is the last \
                 commit; show system commit lists them)"
            ))
        })?;
        let mut lines = self.client().commit_changes(index)?;
        if lines.is_empty() {
            lines.push(format!("commit {index} changed nothing"));
        }
        Ok((Output::lines(lines), Flow::Continue))
    }

    fn history(&mut self) -> Result<Output> {
        let commits = self.client().history()?;
        let mut rows = vec![vec![
            "#".to_string(),
            "Id".into(),
            "Time".into(),
            "User".into(),
            "Kind".into(),
            "Comment".into(),
        ]];
        for c in &commits {
            let kind = if c.pending_confirm {
                format!("{} (unconfirmed)", c.kind)
            } else {
                c.kind.clone()
            };
            rows.push(vec![
                c.index.to_string(),
                c.id.to_string(),
                c.time.clone(),
                c.user.clone(),
                kind,
                c.comment.clone(),
            ]);
        }
        Ok(Output::lines(efb_table::align(&rows, &[])))
    }

    /// `show system audit`: who changed what, or was refused, newest last.
    fn audit(&mut self) -> Result<Output> {
        let records = self.client().audit(0)?;
        let mut rows = vec![vec![
            "Time".to_string(),
            "User".into(),
            "Role".into(),
            "From".into(),
            "What".into(),
            "Result".into(),
        ]];
        for r in records {
            let result = if r.accepted {
                format!("accepted: {}", r.result)
            } else {
                format!("refused: {}", r.result)
            };
            rows.push(vec![r.time, r.user, r.role, r.from, r.what, result]);
        }
        Ok(Output::lines(efb_table::align(&rows, &[])))
    }

    fn status(&mut self) -> Result<Output> {
        let s = self.client().status()?;
        let hello = self.client().hello.clone();
        let confirm = if s.confirm_deadline_unix_ms == 0 {
            "none".to_string()
        } else {
            format!("rolls back at {}", unix_ms_text(s.confirm_deadline_unix_ms))
        };
        let rows = vec![
            vec!["Daemon".to_string(), format!("efbd {}", s.daemon_version)],
            vec![
                "Model".into(),
                format!("{} {}", hello.module_name, hello.module_revision),
            ],
            vec!["Datastore".into(), s.datastore],
            vec!["Uptime".into(), format!("{} s", s.uptime_seconds)],
            vec!["Running commit".into(), s.running_commit_id.to_string()],
            vec!["Commit confirmed".into(), confirm],
            vec!["Sessions".into(), s.sessions.to_string()],
            vec!["Chip".into(), s.chip],
        ];
        Ok(Output::lines(efb_table::align(&rows, &[])))
    }

    /// `show configuration [PATH]` and, in configuration mode, `show [PATH]`.
    fn show_tree(&mut self, datastore: Datastore, path_words: &[String]) -> Result<Output> {
        let path = if path_words.is_empty() {
            String::new()
        } else {
            let targets = setlines::parse_words(self.schema, Verb::Delete, path_words)
                .map_err(|e| ShellError(e.to_string()))?;
            match targets.as_slice() {
                [(path, _)] => path.display(self.schema),
                _ => return fail("show takes one path"),
            }
        };
        let text = self.client().get(datastore, &path, Format::Json, false)?;
        let doc: Json = serde_json::from_str(&text)
            .map_err(|e| ShellError(format!("efbd sent bad JSON: {e}")))?;
        let lines = view::curly(self.schema, &doc);
        Ok(Output {
            lines,
            data: Some(doc),
        })
    }

    // ----- configuration mode -----

    fn configuration(&mut self, words: &[String], line: &str) -> Result<(Output, Flow)> {
        let rest = &words[1..];
        let output = match words[0].as_str() {
            "set" | "delete" => {
                self.client().edit_lines(line.trim())?;
                Output::none()
            }
            "show" => self.show_tree(Datastore::Candidate, rest)?,
            "commit" | "apply" => return self.commit(rest),
            "rollback" => self.rollback(rest)?,
            "discard" | "save" | "exit" | "quit" if !rest.is_empty() => {
                return nothing_after(&words[..1], rest).map(|()| (Output::none(), Flow::Continue));
            }
            "discard" => {
                self.client().discard()?;
                Output::lines(vec![
                    "candidate discarded: it is the running configuration again".into(),
                ])
            }
            "save" => {
                self.client().save()?;
                Output::lines(vec!["running configuration saved as startup".into()])
            }
            "load" => self.load(rest)?,
            "run" => {
                let (output, _) = self.operational(rest, "")?;
                output
            }
            "exit" | "quit" => return self.leave_configuration(),
            other => {
                let known: Vec<&str> = [
                    "set", "delete", "show", "commit", "apply", "rollback", "discard", "save",
                    "load", "run", "exit",
                ]
                .to_vec();
                return fail(format!(
                    "unknown command \"{other}\"; expected one of: {}",
                    known.join(", ")
                ));
            }
        };
        Ok((output, Flow::Continue))
    }

    fn leave_configuration(&mut self) -> Result<(Output, Flow)> {
        let changes = self.client().compare(Format::Set)?;
        if !changes.is_empty() && !self.exit_warned {
            self.exit_warned = true;
            return fail(format!(
                "the candidate has {} uncommitted change{}: commit or discard them, or exit again to leave them in the candidate",
                changes.len(),
                if changes.len() == 1 { "" } else { "s" }
            ));
        }
        self.mode = Mode::Operational;
        self.exit_warned = false;
        Ok((
            Output::lines(vec!["Exiting configuration mode".into()]),
            Flow::Continue,
        ))
    }

    fn commit(&mut self, options: &[String]) -> Result<(Output, Flow)> {
        let request = CommitOptions::parse(options)?;
        let reply = self.client().commit(CommitRequest {
            comment: request.comment.clone(),
            check_only: request.check,
            confirm_seconds: request.confirm_minutes.map_or(0, |m| m * 60),
            offline: request.offline,
            ..CommitRequest::default()
        })?;
        let mut lines = Vec::new();
        for w in &reply.warnings {
            lines.push(format!("warning: {}: {}", w.path, w.message));
        }
        if request.check {
            lines.push(format!(
                "configuration check succeeds ({} validated)",
                reply.validation_scope
            ));
            let total = reply.change_lines_total as usize;
            lines.push(format!(
                "{total} change{}:",
                if total == 1 { "" } else { "s" }
            ));
            lines.extend(reply.change_lines.iter().map(|l| format!("  {l}")));
            if total > reply.change_lines.len() {
                lines.push(format!(
                    "  ... and {} more",
                    total - reply.change_lines.len()
                ));
            }
            lines.extend(reply.chip.iter().cloned());
            return Ok((Output::lines(lines), Flow::Continue));
        }
        lines.extend(reply.chip.iter().cloned());
        if reply.confirmed_commit_id != 0 {
            lines.push(format!("commit {} confirmed", reply.confirmed_commit_id));
        }
        if reply.commit_id == 0 {
            if reply.confirmed_commit_id == 0 {
                lines.push("nothing to commit: the candidate is the running configuration".into());
            }
        } else {
            lines.push(format!("commit complete (commit {})", reply.commit_id));
        }
        if reply.confirm_deadline_unix_ms != 0 {
            lines.push(format!(
                "commit confirmed: rolls back at {} unless confirmed (commit again to confirm)",
                unix_ms_text(reply.confirm_deadline_unix_ms)
            ));
        }
        self.exit_warned = false;
        if request.and_quit {
            self.mode = Mode::Operational;
            lines.push("Exiting configuration mode".into());
        }
        Ok((Output::lines(lines), Flow::Continue))
    }

    fn rollback(&mut self, rest: &[String]) -> Result<Output> {
        let index = match rest {
            [] => 0,
            [n] => n.parse::<u32>().map_err(|_| {
                ShellError(format!(
                    "rollback {n}: expected a commit number (0 is running, 1 the one before...)"
                ))
            })?,
            _ => return fail("rollback takes one number"),
        };
        self.client().rollback(index)?;
        Ok(Output::lines(vec![format!(
            "load complete: rollback {index} is in the candidate (show | compare to review)"
        )]))
    }

    fn load(&mut self, rest: &[String]) -> Result<Output> {
        let (mode, file) = match rest {
            [mode, file] if mode == "merge" => (LoadMode::Merge, file),
            [mode, file] if mode == "override" => (LoadMode::Override, file),
            _ => return fail("usage: load merge|override FILE (RFC 7951 JSON or set lines)"),
        };
        let content = input::read_file(std::path::Path::new(file), &self.input_limit)
            .map_err(|e| ShellError(e.to_string()))?;
        let format = match content.format {
            input::Format::Json => Format::Json,
            input::Format::SetLines => Format::Set,
        };
        let reply = self.client().load(mode, format, content.text)?;
        let mut lines = vec!["load complete".to_string()];
        for p in &reply.incomplete {
            lines.push(format!(
                "warning: still to fix before commit: {}: {}",
                p.path, p.message
            ));
        }
        Ok(Output::lines(lines))
    }

    /// `show | compare`: the candidate's changes, path by path (`| display set`: as lines
    /// that make them).
    fn compare(&mut self, pipes: &mut Vec<Vec<String>>) -> Result<Output> {
        pipes.remove(0);
        let as_set = pipes.iter().any(|p| is_display_set(p));
        pipes.retain(|p| !is_display_set(p));
        let format = if as_set { Format::Set } else { Format::Paths };
        Ok(Output::lines(self.client().compare(format)?))
    }

    /// Leaves cleanly: the session and its candidate go away.
    pub fn close(&mut self) {
        self.client().close();
    }

    pub fn has_uncommitted_changes(&mut self) -> bool {
        self.client()
            .compare(Format::Set)
            .is_ok_and(|c| !c.is_empty())
    }
}

/// `commit` options in any order: check, confirmed [MINUTES], comment "TEXT", offline,
/// and-quit.
struct CommitOptions {
    check: bool,
    offline: bool,
    confirm_minutes: Option<u32>,
    comment: String,
    and_quit: bool,
}

impl CommitOptions {
    fn parse(words: &[String]) -> Result<CommitOptions> {
        let mut options = CommitOptions {
            check: false,
            offline: false,
            confirm_minutes: None,
            comment: String::new(),
            and_quit: false,
        };
        let mut i = 0;
        while i < words.len() {
            match words[i].as_str() {
                "check" => options.check = true,
                "and-quit" => options.and_quit = true,
                "offline" => options.offline = true,
                "confirmed" => {
                    let number = words
                        .get(i + 1)
                        .filter(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()));
                    if number.is_some() {
                        i += 1;
                    }
                    // Digits too many for a number are out of range too, not an "option".
                    let minutes = number.map_or(Some(10), |n| n.parse::<u32>().ok());
                    match minutes {
                        Some(m @ 1..=65535) => options.confirm_minutes = Some(m),
                        _ => {
                            return fail(format!(
                                "commit confirmed {}: minutes must be 1 to 65535",
                                efb_yang::text::excerpt(number.map_or("", |n| n.as_str()))
                            ));
                        }
                    }
                }
                "comment" => {
                    let Some(text) = words.get(i + 1) else {
                        return fail("commit comment: expected the comment, in quotes");
                    };
                    options.comment = text.clone();
                    i += 1;
                }
                other => {
                    return fail(format!(
                        "commit: unknown option \"{other}\"; expected check, confirmed [MINUTES], comment \"TEXT\", offline, and-quit"
                    ));
                }
            }
            i += 1;
        }
        if options.check
            && (options.confirm_minutes.is_some() || options.and_quit || options.offline)
        {
            return fail("commit check commits nothing: it takes no other option");
        }
        Ok(options)
    }
}

fn is_compare(words: &[String], pipes: &[Vec<String>]) -> bool {
    words == ["show"] && pipes.first().is_some_and(|p| p == &["compare"])
}

fn is_display_set(pipe: &[String]) -> bool {
    pipe == ["display", "set"]
}

/// Splits `command | pipe | pipe`, respecting quotes.
fn split_pipes(line: &str) -> Result<(String, Vec<Vec<String>>)> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (c, quote) {
            ('"' | '\'', None) => {
                quote = Some(c);
                current.push(c);
            }
            (q, Some(open)) if q == open => {
                quote = None;
                current.push(c);
            }
            ('|', None) => parts.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    parts.push(current);
    let command = parts.remove(0);
    let pipes = parts
        .iter()
        .map(|p| setlines::split_words(p).map_err(ShellError))
        .collect::<Result<Vec<_>>>()?;
    if pipes.iter().any(Vec::is_empty) {
        return fail("empty pipe: expected match, except, count or display after |");
    }
    Ok((command, pipes))
}

fn apply_pipes(schema: &Schema, output: Output, pipes: &[Vec<String>]) -> Result<Vec<String>> {
    let mut lines = output.lines;
    for pipe in pipes {
        lines = match pipe
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["match", pattern] => filter(lines, pattern, true)?,
            ["except", pattern] => filter(lines, pattern, false)?,
            ["count"] => vec![format!("Count: {} lines", lines.len())],
            ["display", "json"] => match &output.data {
                Some(data) => serde_json::to_string_pretty(data)
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_string)
                    .collect(),
                None => return fail("display json: this command has no data to display"),
            },
            ["display", "set"] => match &output.data {
                Some(data) => set_lines(schema, data)?,
                None => return fail("display set: this command has no data to display"),
            },
            _ => {
                return fail(format!(
                    "unknown pipe \"{}\"; expected match REGEX, except REGEX, count, display json, display set",
                    pipe.join(" ")
                ));
            }
        };
    }
    Ok(lines)
}

fn filter(lines: Vec<String>, pattern: &str, keep: bool) -> Result<Vec<String>> {
    let regex = regex::Regex::new(pattern)
        .map_err(|e| ShellError(format!("bad regular expression {pattern}: {e}")))?;
    Ok(lines
        .into_iter()
        .filter(|l| regex.is_match(l) == keep)
        .collect())
}

/// Configuration data as `set` lines (state values left out: they are not settable).
fn set_lines(schema: &Schema, data: &Json) -> Result<Vec<String>> {
    let tree = json::from_trusted_json(schema, &data.to_string())
        .map_err(|e| ShellError(e.to_string()))?;
    let changes: Vec<diff::Change> = diff::diff(schema, &efb_yang::DataTree::new(), &tree)
        .into_iter()
        .filter(|c| c.path().segments.iter().all(|s| schema.node(s.node).config))
        .collect();
    Ok(setlines::render_changes(schema, &changes))
}

/// An object's members, one per line, aligned.
fn fields(output: &Json) -> Vec<String> {
    let rows: Vec<Vec<String>> = output
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| vec![k.clone(), view::text(v)])
                .collect()
        })
        .unwrap_or_default();
    efb_table::align(&rows, &[])
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

impl KeySource for DaemonKeys {
    fn keys(&self, list_path: &str, prefix: &str) -> Vec<String> {
        let mode = *self.mode.lock().unwrap_or_else(|p| p.into_inner());
        let datastore = match mode {
            Mode::Configuration => Datastore::Candidate,
            Mode::Operational => Datastore::Running,
        };
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        client
            .list_keys(datastore, list_path, prefix, KEY_LIMIT)
            .map(|r| r.keys)
            .unwrap_or_default()
    }

    fn history_len(&self) -> Option<usize> {
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        client.history().ok().map(|h| h.len())
    }
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
