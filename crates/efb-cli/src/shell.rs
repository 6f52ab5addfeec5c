//! Running one line of the shell: operational commands from the grammar, configuration
//! commands, and pipes. Everything goes to efbd; nothing here changes configuration itself.

use std::sync::{Arc, Mutex};

use efb_mgmt_proto::v1::{CommitRequest, Datastore, Format, LoadMode};

use crate::commit_report;
use efb_yang::input::{self, Limit};
use efb_yang::schema::{Schema, SchemaId};
use efb_yang::setlines::{self, Verb};
use efb_yang::{DataPath, Segment};
use serde_json::Value as Json;

use crate::client::{Client, ClientError};
use crate::complete::{KEY_LIMIT, KeySource, Mode};
use crate::config_commands::ConfigCommand;
use crate::grammar::{Action, Builtin, Command, Drawing, Grammar, Render};
use crate::{help, pager, protocol, view};

mod clear;
mod hierarchy;
mod interfaces;
mod log;
mod monitor;
mod numbering;
mod pipes;
mod system;

use pipes::{Pipe, apply_pipes, compare_stage, split_pipes};

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
    let open_quotes = before.chars().filter(|c| *c == '"').count() % 2 == 1;
    (!open_quotes).then_some(before)
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
}

impl Output {
    fn lines(lines: Vec<String>) -> Output {
        Output {
            lines,
            data: None,
            config: false,
        }
    }

    fn data(lines: Vec<String>, data: Json) -> Output {
        Output {
            lines,
            data: Some(data),
            config: true,
        }
    }

    /// Lines with their data for `| display json`, data that is no configuration.
    fn facts(lines: Vec<String>, data: Json) -> Output {
        Output {
            lines,
            data: Some(data),
            config: false,
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
        let words = setlines::split_words(&command).map_err(ShellError)?;
        if words.is_empty() {
            return Ok(Flow::Continue);
        }
        let compare = match self.mode {
            Mode::Configuration => compare_stage(&words, &stages)?,
            Mode::Operational => None,
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

    // ----- operational mode -----

    fn operational(&mut self, words: &[String], line: &str) -> Result<(Output, Flow)> {
        // `set cli ...` sets the shell, not the configuration (as in Junos).
        let shell_setting = words.get(1).is_some_and(|w| w == "cli");
        if enters_configuration_mode(&words[0]) && !shell_setting {
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
        if let Some(builtin) = command.builtin {
            let typed = &words[..words.len() - rest.len()];
            return self.builtin(builtin, typed, &rest);
        }
        let output = match command.action {
            Some(Action::Monitor) => self.monitor(&command, &rest)?,
            Some(Action::ClearStatistics) => self.clear_statistics(&command, &rest)?,
            None if command.rpc.is_some() => self.run_rpc(&command, &rest)?,
            None if command.is_inventory() => self.show_interfaces(&command, &rest)?,
            None => self.run_get(&command, &rest)?,
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

    /// A command the shell runs itself; `typed` are its words, `rest` those after them.
    fn builtin(
        &mut self,
        builtin: Builtin,
        typed: &[String],
        rest: &[String],
    ) -> Result<(Output, Flow)> {
        let takes_words = match builtin {
            Builtin::ShowConfiguration | Builtin::Help | Builtin::ScreenLength => true,
            // `show log [KIND...]`: the words pick the kinds of events.
            Builtin::Log => true,
            // `request system logout session N`.
            Builtin::Logout => true,
            // `show system commit N`: what commit N changed.
            Builtin::History => rest.len() == 1,
            Builtin::Status | Builtin::Users | Builtin::Audit => false,
            Builtin::Configure | Builtin::Exit => false,
        };
        if !takes_words {
            nothing_after(typed, rest)?;
        }
        let output = match builtin {
            Builtin::Log => return self.show_log(typed, rest),
            Builtin::Logout => return self.logout(rest),
            Builtin::History if rest.len() == 1 => return self.commit_changes(&rest[0]),
            Builtin::Exit => return Ok((Output::none(), Flow::Exit)),
            Builtin::Configure => self.configure(),
            Builtin::Help => self.help(rest)?,
            Builtin::ScreenLength => self.set_screen_length(rest)?,
            Builtin::History => self.history()?,
            Builtin::Status => self.status()?,
            Builtin::Audit => self.audit()?,
            Builtin::Users => self.users()?,
            Builtin::ShowConfiguration => self.show_tree(Datastore::Running, rest)?,
        };
        Ok((output, Flow::Continue))
    }

    fn configure(&mut self) -> Output {
        self.mode = Mode::Configuration;
        self.exit_warned = false;
        Output::lines(vec!["Entering configuration mode".into()])
    }

    /// `help [TOPIC]`, in either mode.
    fn help(&self, topic: &[String]) -> Result<Output> {
        help::topic(&self.grammar, topic)
            .map(Output::lines)
            .map_err(ShellError)
    }

    /// `set cli screen-length N`: a page of N lines; 0 turns paging off.
    fn set_screen_length(&mut self, rest: &[String]) -> Result<Output> {
        let length = match rest {
            [n] => n.parse::<usize>().ok().filter(|n| *n != 1),
            _ => None,
        };
        let Some(length) = length else {
            return fail(format!(
                "set cli screen-length {}: expected a number of lines (2 or more), or 0 for no paging",
                efb_yang::text::excerpt(&rest.join(" "))
            ));
        };
        self.screen_length = Some(length);
        Ok(Output::lines(vec![if length == 0 {
            "Screen length set to 0: output is not paged".to_string()
        } else {
            format!("Screen length set to {length}")
        }]))
    }

    fn run_get(&mut self, command: &Command, rest: &[String]) -> Result<Output> {
        let Some(get) = &command.get else {
            return fail("internal: not a get command");
        };
        // The grammar's path, read against the schema once; the request names it in
        // libyang's form.
        let at = DataPath::parse(self.schema, &get.path).map_err(|e| ShellError(e.to_string()))?;
        let mut render = command.render.as_ref();
        let mut rest = rest;
        if let Some((last, before)) = rest.split_last()
            && let Some(view) = command.switches.get(last)
        {
            render = Some(view);
            rest = before;
        }
        let selection = self.selection(command, &at, rest)?;
        let path = match &selection {
            Selection::One(entry) => entry.clone(),
            _ => at.clone(),
        };
        let datastore = match get.datastore.as_str() {
            "running" => Datastore::Running,
            _ => Datastore::Operational,
        };
        let text = self
            .client()
            .get(datastore, &path.display(self.schema), Format::Json, true)?;
        let answer: Json = serde_json::from_str(&text)
            .map_err(|e| ShellError(format!("efbd sent bad JSON: {e}")))?;
        let names = view::member_names(self.schema, &at);
        let mut doc = view::only_at(&answer, &names);
        view::natural_order(self.schema, &mut doc);
        if let Some(entries) = view::at_mut(&mut doc, &names).and_then(Json::as_array_mut) {
            self.select(command, &at, &selection, entries)?;
            if let Some(order) = &get.order {
                view::sort_by_order(entries, order);
            }
        }
        let found = view::at(&doc, &names);
        let lines = match render {
            Some(Render::Drawing(Drawing::Value)) => vec![
                found
                    .map(view::text)
                    .unwrap_or_else(|| view::UNKNOWN.to_string()),
            ],
            Some(Render::Drawing(Drawing::Json)) | None => {
                vec![serde_json::to_string_pretty(&doc).unwrap_or_default()]
            }
            Some(drawing) => {
                let entries: Vec<&Json> = found
                    .and_then(Json::as_array)
                    .map(|a| a.iter().collect())
                    .unwrap_or_default();
                if entries.is_empty() {
                    if let [name] = rest {
                        return Err(self.no_such_entry(command, &at, name));
                    }
                    vec![format!(
                        "(no {} configured)",
                        names.last().map(String::as_str).unwrap_or("entries")
                    )]
                } else {
                    let found = match drawing {
                        Render::View(name) => self.grammar.views.get(name),
                        _ => None,
                    };
                    match found {
                        Some(v) => view::render_view(v, &entries),
                        None => return fail(format!("no view {drawing}")),
                    }
                }
            }
        };
        Ok(Output::data(lines, doc))
    }

    /// The entries a `show` names: all of the list, one entry (read alone), or several
    /// names and `*` wildcards (`show ports p1 p2`, `show ports p9*`). Names without a
    /// wildcard are checked as the key's type says.
    fn selection(&self, command: &Command, list: &DataPath, names: &[String]) -> Result<Selection> {
        let arg = command.get.as_ref().and_then(|g| g.arg.as_deref());
        match (names, arg) {
            ([], _) => Ok(Selection::All),
            ([name], Some(_)) if !name.contains('*') => Ok(Selection::One(self.entry(list, name)?)),
            (_, Some(_)) => {
                for name in names.iter().filter(|n| !n.contains('*')) {
                    self.entry(list, name)?;
                }
                Ok(Selection::Some(names.to_vec()))
            }
            (_, None) => fail(format!(
                "{}: unexpected \"{}\"; expected nothing more",
                command.words,
                names.join(" ")
            )),
        }
    }

    /// Keeps the entries `selection` names; each name or wildcard must find one.
    fn select(
        &self,
        command: &Command,
        list: &DataPath,
        selection: &Selection,
        entries: &mut Vec<Json>,
    ) -> Result<()> {
        let Selection::Some(patterns) = selection else {
            return Ok(());
        };
        let key = list
            .node()
            .and_then(|id| self.schema.node(id).keys.first().copied())
            .map(|k| self.schema.node(k).name.clone())
            .unwrap_or_default();
        let key_of = |entry: &Json| entry.get(&key).map(view::text).unwrap_or_default();
        for pattern in patterns {
            if !entries.iter().any(|e| wildcard_match(pattern, &key_of(e))) {
                if !pattern.contains('*') {
                    return Err(self.no_such_entry(command, list, pattern));
                }
                let shown = efb_yang::text::excerpt(pattern);
                return fail(format!("{}: no entry matches {shown}", command.words));
            }
        }
        entries.retain(|e| patterns.iter().any(|p| wildcard_match(p, &key_of(e))));
        Ok(())
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
            ShellError(format!("{e}; expected {}", self.schema.node(key).accepts()))
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
            if input.contains_key(&param.leaf) {
                return fail(format!("{}: {word} is given twice", command.words));
            }
            let value = match self.param_leaf(command, &param.leaf) {
                Some(leaf) => self.param_value(command, word, leaf, value)?,
                None => value.clone(),
            };
            input.insert(param.leaf.clone(), Json::String(value));
        }
        self.missing_params(command, &input)?;
        if !self.scripted
            && let Some(effect) = command.confirm.iter().find_map(|c| c.applies(&input))
            && !confirmed(&effect)?
        {
            return Ok(Output::lines(vec![
                "not confirmed: nothing changed".to_string(),
            ]));
        }
        let output = self.client().call_rpc(rpc, &Json::Object(input))?;
        let lines = match &command.render {
            Some(Render::Drawing(Drawing::Done)) => vec!["ok".to_string()],
            Some(Render::Drawing(Drawing::Json)) => {
                vec![serde_json::to_string_pretty(&output).unwrap_or_default()]
            }
            Some(Render::View(name)) => match self.grammar.views.get(name) {
                Some(v) if !v.fields.is_empty() => view::render_fields(v, &output),
                _ => fields(&output),
            },
            Some(Render::Drawing(Drawing::Fields | Drawing::Value) | Render::Inventory(_))
            | None => fields(&output),
        };
        Ok(Output::facts(lines, output))
    }

    /// The value typed for `param`, checked as its leaf's type says (protocol names become
    /// numbers), the error naming the parameter by the word typed, not by the model's path.
    fn param_value(
        &self,
        command: &Command,
        word: &str,
        leaf: SchemaId,
        value: &str,
    ) -> Result<String> {
        if protocol::is_protocol_leaf(self.schema, leaf) {
            return protocol::number(value)
                .map(|n| n.to_string())
                .ok_or_else(|| {
                    ShellError(format!(
                        "{}: {word} \"{}\" is not a protocol; expected {}",
                        command.words,
                        efb_yang::text::excerpt(value),
                        protocol::ACCEPTED
                    ))
                });
        }
        self.schema
            .value(leaf, value)
            .map(|v| v.as_str().to_string())
            .map_err(|e| {
                ShellError(format!(
                    "{}: {word} {e}; expected {}",
                    command.words,
                    self.schema.node(leaf).accepts()
                ))
            })
    }

    /// Parameters of an operation the model requires and the words do not give, by the
    /// words that give them.
    fn missing_params(
        &self,
        command: &Command,
        input: &serde_json::Map<String, Json>,
    ) -> Result<()> {
        let missing: Vec<&str> = command
            .params
            .iter()
            .filter(|p| !input.contains_key(&p.leaf))
            .filter(|p| {
                self.param_leaf(command, &p.leaf)
                    .is_some_and(|l| self.schema.node(l).mandatory)
            })
            .map(|p| p.word.as_str())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        fail(format!(
            "{}: missing {}; it takes {}",
            command.words,
            missing.join(", "),
            self.usage(command)
        ))
    }

    /// The input leaf of an operation a parameter gives.
    fn param_leaf(&self, command: &Command, leaf: &str) -> Option<SchemaId> {
        let rpc = command.rpc.as_deref()?;
        let (_, input, _) = efb_yang::rpc::operation(self.schema, rpc).ok()?;
        self.schema.child(input?, leaf)
    }

    /// `src A dst B proto P [src-port X]...`: the parameters, the optional ones in brackets.
    fn usage(&self, command: &Command) -> String {
        command
            .params
            .iter()
            .map(|p| {
                let required = self
                    .param_leaf(command, &p.leaf)
                    .is_some_and(|l| self.schema.node(l).mandatory);
                let word = format!("{} {}", p.word, p.leaf.to_uppercase());
                if required { word } else { format!("[{word}]") }
            })
            .collect::<Vec<_>>()
            .join(" ")
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
        let mut doc: Json = serde_json::from_str(&text)
            .map_err(|e| ShellError(format!("efbd sent bad JSON: {e}")))?;
        view::natural_order(self.schema, &mut doc);
        let lines = view::curly(self.schema, &doc);
        Ok(Output::data(lines, doc))
    }

    // ----- configuration mode -----

    fn configuration(&mut self, words: &[String], line: &str) -> Result<(Output, Flow)> {
        let Some(command) = ConfigCommand::parse(&words[0]) else {
            // The words completion and `?` offer: one list.
            return fail(format!(
                "unknown command \"{}\"; expected one of: {}",
                words[0],
                ConfigCommand::words()
            ));
        };
        let rest = &words[1..];
        let below_top = !self.place.is_top();
        let output = match command {
            ConfigCommand::Set | ConfigCommand::Delete if below_top => return self.relative(words),
            ConfigCommand::Set | ConfigCommand::Delete => self.edit_lines(words, line)?,
            ConfigCommand::Show if below_top => self.show_here(rest)?,
            ConfigCommand::Show => self.show_tree(Datastore::Candidate, rest)?,
            ConfigCommand::Edit => self.edit(rest)?,
            ConfigCommand::Top => return self.top(rest),
            ConfigCommand::Up => self.up(rest)?,
            ConfigCommand::Rename | ConfigCommand::Copy => self.rename_or_copy(command, rest)?,
            ConfigCommand::Annotate => self.annotate(rest)?,
            ConfigCommand::Commit | ConfigCommand::Apply => return self.commit(rest),
            ConfigCommand::Rollback => self.rollback(rest)?,
            ConfigCommand::Discard | ConfigCommand::Save if !rest.is_empty() => {
                return nothing_after(&words[..1], rest).map(|()| (Output::none(), Flow::Continue));
            }
            ConfigCommand::Discard => {
                self.client().discard()?;
                Output::lines(vec![
                    "candidate discarded: it is the running configuration again".into(),
                ])
            }
            ConfigCommand::Save => {
                self.client().save()?;
                Output::lines(vec!["running configuration saved as startup".into()])
            }
            ConfigCommand::Load => self.load(rest)?,
            ConfigCommand::Help => self.help(rest)?,
            ConfigCommand::Run => self.operational(rest, "")?.0,
            ConfigCommand::Exit | ConfigCommand::Quit => return self.exit(&words[..1], rest),
        };
        Ok((output, Flow::Continue))
    }

    /// `set` and `delete` at the top: the line as typed, protocol names as numbers.
    fn edit_lines(&mut self, words: &[String], line: &str) -> Result<Output> {
        // `match ip-proto tcp`: the model takes a number, people type names.
        let line = protocol::numbers_in_line(self.schema, words)
            .map_err(ShellError)?
            .unwrap_or_else(|| line.trim().to_string());
        let reply = self.client().edit_lines(&line)?;
        Ok(Output::lines(broken_references(&reply.broken)))
    }

    fn leave_configuration(&mut self) -> Result<(Output, Flow)> {
        let changes = self.client().compare(Format::Set, None)?;
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
            let said = format!("{}: {}", w.path, w.message);
            lines.push(format!(
                "warning: {}",
                setlines::paths_in_words(self.schema, &said)
            ));
        }
        if reply.earlier_warnings > 0 {
            let n = reply.earlier_warnings;
            lines.push(format!(
                "{n} warning{} told at an earlier commit still hold{} (commit check lists them)",
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" }
            ));
        }
        if request.check {
            lines.extend(
                commit_report::check(&reply)
                    .iter()
                    .map(|l| setlines::paths_in_words(self.schema, l)),
            );
            return Ok((Output::lines(lines), Flow::Continue));
        }
        if reply.commit_id != 0 {
            lines.extend(commit_report::consequences(
                &reply,
                commit_report::Mood::Commit,
            ));
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
            lines.push(format!(
                "commit complete (commit {}): {}",
                reply.commit_id,
                commit_report::counted_changes(reply.changes)
            ));
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

    /// `rollback N`: the configuration N commits back into the candidate; the shell says
    /// which commit that is.
    fn rollback(&mut self, rest: &[String]) -> Result<Output> {
        let n = match rest {
            [] => "0",
            [n] => n.as_str(),
            _ => return fail("rollback takes one number: how many commits back (0 is running)"),
        };
        let history = numbering::Numbering::new(self.client().history()?);
        let commit = match history.by_rollback(n) {
            Ok(commit) => Some(commit),
            // Running, also with no history at all.
            Err(_) if n == "0" => None,
            Err(e) => return Err(e),
        };
        let index = commit.map_or(0, |c| c.index);
        self.client().rollback(index)?;
        let which = commit.map_or_else(String::new, |c| format!(", {}", numbering::described(c)));
        Ok(Output::lines(vec![format!(
            "load complete: rollback {index}{which}, is in the candidate (show | compare to review)"
        )]))
    }

    fn load(&mut self, rest: &[String]) -> Result<Output> {
        let (mode, source) = match rest {
            [mode, source] if mode == "merge" || mode == "set" => (LoadMode::Merge, source),
            [mode, source] if mode == "override" => (LoadMode::Override, source),
            _ => {
                return fail(
                    "usage: load merge|override|set FILE|terminal (RFC 7951 JSON or set lines; set: set lines only)",
                );
            }
        };
        let content = if source == "terminal" {
            self.read_terminal()?
        } else {
            input::read_file(std::path::Path::new(source), &self.input_limit)
        }
        .map_err(|e| ShellError(e.to_string()))?;
        if rest[0] == "set" && content.format == input::Format::Json {
            return fail(
                "load set takes set / delete lines; JSON is loaded with load merge or load override",
            );
        }
        let format = match content.format {
            input::Format::Json => Format::Json,
            input::Format::SetLines => Format::Set,
        };
        let reply = self.client().load(mode, format, content.text)?;
        let mut lines = vec!["load complete".to_string()];
        for p in &reply.incomplete {
            let problem =
                setlines::paths_in_words(self.schema, &format!("{}: {}", p.path, p.message));
            lines.push(format!("warning: still to fix before commit: {problem}"));
        }
        Ok(Output::lines(lines))
    }

    /// `load ... terminal`: what is pasted or typed, up to Ctrl-D at the start of a line
    /// (the terminal is in its line mode between two prompts).
    fn read_terminal(&self) -> Result<std::result::Result<input::Content, input::InputError>> {
        use std::io::{Read, Write};
        if self.scripted {
            return fail(
                "load ... terminal reads what is typed on a terminal; a script loads a FILE",
            );
        }
        println!("[Type ^D at a new line to end input]");
        let _ = std::io::stdout().flush();
        let mut text = String::new();
        let limit = usize::try_from(self.input_limit.max_bytes).unwrap_or(usize::MAX);
        std::io::stdin()
            .lock()
            .take(limit.saturating_add(1) as u64)
            .read_to_string(&mut text)
            .map_err(|e| ShellError(format!("reading the terminal: {e}")))?;
        Ok(input::from_text("terminal", text, &self.input_limit))
    }

    /// `show | compare`: Junos's hierarchical form; `| display set` the set / delete lines
    /// that make the change, `| display json` one object per change.
    fn compare(&mut self, pipes: &mut Vec<Pipe>, rollback: Option<u32>) -> Result<Output> {
        let as_set = pipes.iter().any(|p| matches!(p, Pipe::DisplaySet));
        pipes.retain(|p| !matches!(p, Pipe::DisplaySet));
        if as_set {
            return Ok(Output::lines(self.client().compare(Format::Set, rollback)?));
        }
        if !pipes.iter().any(|p| matches!(p, Pipe::DisplayJson)) {
            return Ok(Output::lines(
                self.client().compare(Format::Hierarchy, rollback)?,
            ));
        }
        let changes = self
            .client()
            .compare(Format::Json, rollback)?
            .iter()
            .map(|line| serde_json::from_str::<Json>(line))
            .collect::<std::result::Result<Vec<Json>, _>>()
            .map_err(|e| ShellError(format!("efbd's compare in JSON: {e}")))?;
        // The lines are replaced by the data's: `| display json` is among the pipes.
        Ok(Output::facts(
            Vec::new(),
            serde_json::json!({ "changes": changes }),
        ))
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

/// The entries of a list a `show` names.
enum Selection {
    All,
    One(DataPath),
    Some(Vec<String>),
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
    efb_text_table::align(&rows, &[])
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
