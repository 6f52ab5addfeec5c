//! What may come next on a line: the candidates Tab completes and `?` lists. Operational
//! words come from the grammar, configuration words from the schema, list keys live from the
//! daemon, values from the leaf's type (enums, booleans, references).

use efb_yang::schema::{Schema, SchemaId};
use efb_yang::setlines::{self, Expect, Verb};
use efb_yang::{BaseType, TypeInfo};

use crate::config_commands::ConfigCommand;
use crate::grammar::{Builtin, Command, Grammar};
use crate::protocol;

/// Which words a line starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Operational,
    Configuration,
}

/// One possible next word. Placeholders (`<name>`) explain what to type and are not
/// inserted by Tab.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub word: String,
    pub help: String,
    pub placeholder: bool,
}

impl Candidate {
    fn word(word: impl Into<String>, help: impl Into<String>) -> Candidate {
        Candidate {
            word: word.into(),
            help: help.into(),
            placeholder: false,
        }
    }

    fn placeholder(word: impl Into<String>, help: impl Into<String>) -> Candidate {
        Candidate {
            word: word.into(),
            help: help.into(),
            placeholder: true,
        }
    }
}

/// Candidates for the word being typed, which starts at byte `start` of the line.
#[derive(Clone, Debug, Default)]
pub struct Completion {
    pub start: usize,
    pub partial: String,
    pub candidates: Vec<Candidate>,
}

impl Completion {
    /// Candidates the partial word could become (placeholders always kept for help).
    pub fn matching(&self) -> Vec<&Candidate> {
        self.candidates
            .iter()
            .filter(|c| c.placeholder || c.word.starts_with(&self.partial))
            .collect()
    }
}

/// Where list keys come from: the daemon (the candidate in configuration mode).
pub trait KeySource {
    fn keys(&self, list_path: &str, prefix: &str) -> Vec<String>;

    /// The commits history holds, newest first (`rollback` takes how many back,
    /// `show system commit` their ids): for each, what `?` says of it (time, user,
    /// comment). None when not known.
    fn history(&self) -> Option<Vec<Commit>> {
        None
    }
}

/// A commit of history as `?` offers it.
#[derive(Clone, Debug)]
pub struct Commit {
    /// How many commits back from running (`rollback N`).
    pub rollback: usize,
    pub id: u64,
    /// Time, user, kind, comment.
    pub said: String,
}

/// `load merge|override|set ` is followed by a file or `terminal`.
fn is_load_source(words: &[String]) -> bool {
    matches!(words, [load, mode] if load == "load" && matches!(mode.as_str(), "merge" | "override" | "set"))
}

/// `terminal`, and the files and folders whose names start with `partial` (a path
/// relative to the shell's directory, or absolute); folders end in `/`.
fn load_sources(partial: &str) -> Vec<Candidate> {
    let mut out = vec![Candidate::word(
        "terminal",
        "Paste the configuration, then Ctrl-D at the start of a line",
    )];
    let (folder, _) = partial.rsplit_once('/').unwrap_or(("", partial));
    let listed = match folder {
        "" if partial.starts_with('/') => "/",
        "" => ".",
        folder => folder,
    };
    let Ok(entries) = std::fs::read_dir(listed) else {
        return out;
    };
    let mut files: Vec<Candidate> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let is_dir = e.file_type().ok()?.is_dir();
            let path = match (folder, partial.starts_with('/')) {
                ("", true) => format!("/{name}"),
                ("", false) => name,
                (folder, _) => format!("{folder}/{name}"),
            };
            let (word, help) = if is_dir {
                (format!("{path}/"), "folder")
            } else {
                (path, "file: RFC 7951 JSON or set lines")
            };
            Some(Candidate::word(word, help))
        })
        .collect();
    files.sort_by(|a, b| a.word.cmp(&b.word));
    out.extend(files);
    out
}

/// Most keys listed for one Tab or `?`.
pub const KEY_LIMIT: u32 = 200;

pub struct Completer<'a> {
    pub schema: &'a Schema,
    pub grammar: &'a Grammar,
    pub keys: &'a dyn KeySource,
}

pub const COMMIT_OPTIONS: &[(&str, &str)] = &[
    ("check", "Validate and show the changes, commit nothing"),
    (
        "confirmed",
        "Roll back by itself unless confirmed within MINUTES (default 10)",
    ),
    ("comment", "A comment kept in the commit history"),
    (
        "offline",
        "Commit even if the chip is unreachable (it is programmed when it reconnects)",
    ),
    ("and-quit", "Commit, then leave configuration mode"),
];

pub const PIPES: &[(&str, &str)] = &[
    ("match", "Show only lines matching a regular expression"),
    (
        "except",
        "Show only lines not matching a regular expression",
    ),
    (
        "find",
        "Show from the first line matching a regular expression",
    ),
    ("count", "Count the lines"),
    ("last", "Show only the last N lines"),
    ("no-more", "Show everything at once, without the pager"),
    ("display", "Show the data as json or as set lines"),
];

/// Words `help` takes first (besides the first words of commands).
const HELP_TOPICS: &[(&str, &str)] = &[
    ("commands", "Operational commands"),
    ("configuration", "Configuration mode"),
    ("commit", "The options of commit"),
    ("pipes", "What may follow |"),
    ("keys", "Keys: Tab, ?, history, the pager"),
];

impl Completer<'_> {
    pub fn complete(&self, mode: Mode, line: &str) -> Completion {
        self.complete_at(mode, &[], line)
    }

    /// Completes `line` typed at a place of the hierarchy (after `edit PATH`: its words):
    /// the paths of `set`, `delete`, `show` and `edit` start there.
    pub fn complete_at(&self, mode: Mode, place: &[String], line: &str) -> Completion {
        let (start, partial) = partial_word(line);
        let before = &line[..start];
        let candidates = match pipe_tail(before) {
            Some(stage) => pipe_candidates(&stage),
            None => match setlines::split_words(before) {
                Ok(words) if mode == Mode::Configuration && is_load_source(&words) => {
                    load_sources(partial)
                }
                Ok(words) => self.candidates(mode, place, &words),
                Err(_) => Vec::new(),
            },
        };
        Completion {
            start,
            partial: partial.to_string(),
            candidates,
        }
    }

    fn candidates(&self, mode: Mode, place: &[String], words: &[String]) -> Vec<Candidate> {
        match mode {
            Mode::Operational => self.operational(words),
            Mode::Configuration => self.configuration(place, words),
        }
    }

    fn operational(&self, words: &[String]) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = self
            .grammar
            .next_words(words)
            .into_iter()
            .map(|(w, h)| Candidate::word(w, h))
            .collect();
        if let Some((command, rest)) = self.grammar.find(words) {
            out.extend(self.command_arguments(command, rest));
        }
        out
    }

    fn command_arguments(&self, command: &Command, rest: &[String]) -> Vec<Candidate> {
        if let Some(get) = &command.get {
            let switched = rest
                .last()
                .is_some_and(|w| command.switches.contains_key(w));
            let mut out = Vec::new();
            if !switched && let Some(arg) = &get.arg {
                if command.is_inventory() {
                    out.extend(self.interface_names(arg, rest));
                } else {
                    out.extend(self.list_keys(&get.path, arg, rest));
                }
            }
            if !switched {
                out.extend(
                    command
                        .switches
                        .keys()
                        .map(|w| Candidate::word(w.clone(), "Show another view of the same")),
                );
            }
            out.extend(end());
            return out;
        }
        if let Some(rpc) = &command.rpc {
            return self.rpc_params(rpc, command, rest);
        }
        match command.builtin {
            Some(Builtin::ShowConfiguration) => self.paths(Verb::Delete, rest),
            Some(Builtin::Help) => help_topics(rest),
            Some(Builtin::History) if rest.is_empty() => self.commit_ids(),
            Some(Builtin::ScreenLength) if rest.is_empty() => vec![Candidate::placeholder(
                "<lines>",
                "Lines a page holds; 0: no paging",
            )],
            _ if rest.is_empty() => end(),
            _ => Vec::new(),
        }
    }

    fn configuration(&self, place: &[String], words: &[String]) -> Vec<Candidate> {
        let Some((first, rest)) = words.split_first() else {
            return ConfigCommand::ALL
                .iter()
                .map(|c| Candidate::word(c.word(), c.help()))
                .collect();
        };
        let Some(command) = ConfigCommand::parse(first) else {
            return end_alone(rest);
        };
        match command {
            ConfigCommand::Set => self.paths(Verb::Set, &[place, rest].concat()),
            ConfigCommand::Delete | ConfigCommand::Show => {
                self.paths(Verb::Delete, &[place, rest].concat())
            }
            ConfigCommand::Edit
            | ConfigCommand::Top
            | ConfigCommand::Up
            | ConfigCommand::Rename
            | ConfigCommand::Copy
            | ConfigCommand::Annotate => self.hierarchy(command, place, rest),
            ConfigCommand::Commit | ConfigCommand::Apply => commit_options(rest),
            ConfigCommand::Rollback if rest.is_empty() => self.rollback_numbers(),
            ConfigCommand::Load if rest.is_empty() => vec![
                Candidate::word("merge", "Merge the file into the candidate"),
                Candidate::word("override", "The file becomes the candidate"),
                Candidate::word(
                    "set",
                    "Apply the file's set / delete lines to the candidate",
                ),
            ],
            ConfigCommand::Run => self.operational(rest),
            ConfigCommand::Help => help_topics(rest),
            ConfigCommand::Rollback
            | ConfigCommand::Load
            | ConfigCommand::Discard
            | ConfigCommand::Save
            | ConfigCommand::Exit
            | ConfigCommand::Quit => end_alone(rest),
        }
    }

    /// The numbers `rollback` takes, each with its commit's id, time, user and comment
    /// (as Junos's `rollback ?`).
    fn rollback_numbers(&self) -> Vec<Candidate> {
        match self.keys.history() {
            Some(mut commits) if !commits.is_empty() => {
                commits.sort_by_key(|c| c.rollback);
                commits
                    .into_iter()
                    .map(|c| {
                        Candidate::word(
                            c.rollback.to_string(),
                            format!("commit {}: {}", c.id, c.said),
                        )
                    })
                    .collect()
            }
            Some(_) => vec![Candidate::placeholder(
                "<0>",
                "The running configuration (history holds no commit)",
            )],
            None => vec![Candidate::placeholder(
                "<number>",
                "How many commits back: 0 is running, 1 the one before...",
            )],
        }
    }

    /// The ids `show system commit` takes, newest first, each with what it was.
    fn commit_ids(&self) -> Vec<Candidate> {
        let Some(commits) = self.keys.history() else {
            return vec![Candidate::placeholder("<id>", "A commit's id")];
        };
        let mut ids: Vec<Candidate> = commits
            .into_iter()
            .map(|c| {
                Candidate::word(
                    c.id.to_string(),
                    format!("rollback {}: {}", c.rollback, c.said),
                )
            })
            .collect();
        ids.extend(end());
        ids
    }

    /// The commands of the edit hierarchy; their paths start at the place.
    fn hierarchy(
        &self,
        command: ConfigCommand,
        place: &[String],
        rest: &[String],
    ) -> Vec<Candidate> {
        let path = [place, rest].concat();
        match command {
            ConfigCommand::Top => self.configuration(&[], rest),
            ConfigCommand::Up if rest.is_empty() => {
                let mut out = vec![Candidate::placeholder("<levels>", "Levels to go up (1)")];
                out.extend(end());
                out
            }
            ConfigCommand::Edit => self.levels(&path),
            ConfigCommand::Rename | ConfigCommand::Copy => {
                match rest.iter().position(|w| w == "to") {
                    Some(at) if at + 1 == rest.len() => {
                        vec![Candidate::placeholder(
                            "<name>",
                            "The new name of the entry",
                        )]
                    }
                    Some(_) => end(),
                    None => self.entry_then(&path, Candidate::word("to", "The new name follows")),
                }
            }
            ConfigCommand::Annotate => self.entry_then(
                &path,
                Candidate::placeholder("<\"text\">", "The entry's description, in quotes"),
            ),
            _ => Vec::new(),
        }
    }

    /// Containers, lists and keys: the places a path can go to (leaves are set, not edited).
    fn levels(&self, path: &[String]) -> Vec<Candidate> {
        let mut out = self.paths(Verb::Delete, path);
        if let Ok(Expect::Node { choices, .. }) =
            setlines::expect_next(self.schema, Verb::Delete, path)
        {
            let leaves: Vec<&str> = choices
                .iter()
                .map(|id| self.schema.node(*id))
                .filter(|n| !n.is_inner())
                .map(|n| n.name.as_str())
                .collect();
            out.retain(|c| !leaves.contains(&c.word.as_str()));
        }
        out
    }

    /// The path to a list entry, then (once it names one) `next`.
    fn entry_then(&self, path: &[String], next: Candidate) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = self
            .levels(path)
            .into_iter()
            .filter(|c| !matches!(c.word.as_str(), "<[Enter]>" | "|"))
            .collect();
        let names_entry = match setlines::parse_words(self.schema, Verb::Delete, path) {
            Ok(targets) => matches!(targets.as_slice(),
                [(at, None)] if at.last().is_some_and(|s| !s.keys.is_empty())),
            Err(_) => false,
        };
        if names_entry {
            out.push(next);
        }
        out
    }

    /// Schema-driven: node names, list keys, leaf values.
    fn paths(&self, verb: Verb, words: &[String]) -> Vec<Candidate> {
        match setlines::expect_next(self.schema, verb, words) {
            Ok(Expect::Node { choices, .. }) => {
                let mut out: Vec<Candidate> =
                    choices.iter().map(|id| self.node_candidate(*id)).collect();
                if !words.is_empty() {
                    out.extend(end());
                }
                out
            }
            Ok(Expect::Key { path, key, .. }) => {
                let mut out = vec![self.placeholder_for(key)];
                out.extend(
                    self.keys_at(&path.display(self.schema), "")
                        .into_iter()
                        .map(|k| Candidate::word(k, "")),
                );
                out
            }
            Ok(Expect::Value { leaf, .. }) => self.values(leaf),
            Ok(Expect::End) => end(),
            Err(_) => Vec::new(),
        }
    }

    fn node_candidate(&self, id: SchemaId) -> Candidate {
        let node = self.schema.node(id);
        Candidate::word(node.name.clone(), first_sentence(&node.description))
    }

    fn placeholder_for(&self, id: SchemaId) -> Candidate {
        let node = self.schema.node(id);
        let help = format!("{} ({})", first_sentence(&node.description), node.accepts());
        Candidate::placeholder(format!("<{}>", node.name), help)
    }

    fn values(&self, leaf: SchemaId) -> Vec<Candidate> {
        let node = self.schema.node(leaf);
        let Some(t) = &node.leaf_type else {
            return Vec::new();
        };
        if t.base == BaseType::Empty {
            return end();
        }
        if protocol::is_protocol_leaf(self.schema, leaf) {
            return protocol_values(node);
        }
        let mut out = vec![self.placeholder_for(leaf)];
        self.type_values(t, &mut out);
        out
    }

    fn type_values(&self, t: &TypeInfo, out: &mut Vec<Candidate>) {
        match t.base {
            BaseType::Enumeration => {
                for e in &t.enums {
                    out.push(Candidate::word(
                        e.name.clone(),
                        e.description
                            .as_deref()
                            .map(first_sentence)
                            .unwrap_or_default(),
                    ));
                }
            }
            BaseType::Bool => {
                out.push(Candidate::word("true", ""));
                out.push(Candidate::word("false", ""));
            }
            BaseType::LeafRef => {
                if let Some(list) = t.leafref_path.as_deref().and_then(leafref_list) {
                    out.extend(
                        self.keys_at(&list, "")
                            .into_iter()
                            .map(|k| Candidate::word(k, "")),
                    );
                }
            }
            BaseType::Union => {
                for member in &t.members {
                    self.type_values(member, out);
                }
            }
            _ => {}
        }
    }

    /// Names for `show ... NAME...`: those not given yet.
    fn list_keys(&self, list_path: &str, arg: &str, given: &[String]) -> Vec<Candidate> {
        let mut out = vec![Candidate::placeholder(
            format!("<{}>", arg.to_lowercase()),
            "Show only these: names, or patterns with * (p9*)",
        )];
        out.extend(
            self.keys_at(list_path, "")
                .into_iter()
                .filter(|k| !given.contains(k))
                .map(|k| Candidate::word(k, "")),
        );
        out
    }

    /// Names for `show interfaces NAME...`: the board's physical ports (their numbers from
    /// the model) and the configured ports, those not given yet.
    fn interface_names(&self, arg: &str, given: &[String]) -> Vec<Candidate> {
        let mut names: Vec<String> = board_numbers(self.schema)
            .into_iter()
            .map(|n| format!("p{n}"))
            .collect();
        names.extend(self.keys_at("/ecofilter-balancer:ports/port", ""));
        names.sort_by(|a, b| efb_text_table::natural_cmp(a, b));
        names.dedup();
        let mut out = vec![Candidate::placeholder(
            format!("<{}>", arg.to_lowercase()),
            "Show only these: physical ports (p4: all its lanes), lanes (p4-2), configured ports, or patterns with *",
        )];
        out.extend(
            names
                .into_iter()
                .filter(|n| !given.contains(n))
                .map(|n| Candidate::word(n, "")),
        );
        out
    }

    /// Keys from the daemon, as people count them (`show` lists them so too).
    fn keys_at(&self, list_path: &str, prefix: &str) -> Vec<String> {
        let mut keys = self.keys.keys(list_path, prefix);
        keys.sort_by(|a, b| efb_text_table::natural_cmp(a, b));
        keys
    }

    /// Parameters of an RPC command: a parameter word, or the value of the last one.
    fn rpc_params(&self, rpc: &str, command: &Command, rest: &[String]) -> Vec<Candidate> {
        let Ok((_, Some(input), _)) = efb_yang::rpc::operation(self.schema, rpc) else {
            return Vec::new();
        };
        let leaf_of = |word: &str| {
            command
                .params
                .iter()
                .find(|p| p.word == word)
                .and_then(|p| self.schema.child(input, &p.leaf))
        };
        // Words go in pairs: parameter, value.
        if rest.len() % 2 == 1
            && let Some(leaf) = rest.last().and_then(|w| leaf_of(w))
        {
            return self.values(leaf);
        }
        let given: Vec<&String> = rest.iter().step_by(2).collect();
        let mut out: Vec<Candidate> = command
            .params
            .iter()
            .filter(|p| !given.contains(&&p.word))
            .filter_map(|p| {
                let leaf = self.schema.child(input, &p.leaf)?;
                let node = self.schema.node(leaf);
                let mut help = first_sentence(&node.description);
                if node.mandatory {
                    help.push_str(" (required)");
                }
                Some(Candidate::word(p.word.clone(), help))
            })
            .collect();
        let missing_required = command.params.iter().any(|p| {
            !given.contains(&&p.word)
                && self
                    .schema
                    .child(input, &p.leaf)
                    .is_some_and(|l| self.schema.node(l).mandatory)
        });
        if !missing_required {
            out.extend(end());
        }
        out
    }
}

/// The numbers of the board's physical ports: the range of `/board/port/number`.
fn board_numbers(schema: &Schema) -> Vec<u32> {
    let range = schema
        .find("/board/port/number")
        .and_then(|id| schema.node(id).leaf_type.as_ref()?.range.clone());
    let bounds = range.as_deref().and_then(|r| {
        let (low, high) = r.split_once("..")?;
        Some((low.trim().parse().ok()?, high.trim().parse().ok()?))
    });
    bounds.map_or_else(Vec::new, |(low, high)| (low..=high).collect())
}

fn end() -> Vec<Candidate> {
    vec![
        Candidate::placeholder("<[Enter]>", "Execute this command"),
        Candidate::placeholder("|", "Pipe through a command"),
    ]
}

/// A command that takes nothing after it: the end of the line, then nothing.
fn end_alone(rest: &[String]) -> Vec<Candidate> {
    if rest.is_empty() { end() } else { Vec::new() }
}

fn commit_options(rest: &[String]) -> Vec<Candidate> {
    match rest.last().map(String::as_str) {
        Some("confirmed") => {
            let mut out = vec![Candidate::placeholder(
                "<minutes>",
                "Minutes to confirm in (default 10)",
            )];
            out.extend(end());
            out
        }
        Some("comment") => vec![Candidate::placeholder("<text>", "The comment, in quotes")],
        _ => {
            let mut out: Vec<Candidate> = COMMIT_OPTIONS
                .iter()
                .filter(|(w, _)| !rest.iter().any(|r| r == w))
                .map(|(w, h)| Candidate::word(*w, *h))
                .collect();
            out.extend(end());
            out
        }
    }
}

fn pipe_candidates(stage: &[String]) -> Vec<Candidate> {
    match stage {
        [] => PIPES.iter().map(|(w, h)| Candidate::word(*w, *h)).collect(),
        [d] if d == "display" => vec![
            Candidate::word("json", "As RFC 7951 JSON"),
            Candidate::word("set", "As set lines"),
        ],
        [m] if m == "match" || m == "except" || m == "find" => {
            vec![Candidate::placeholder("<regex>", "A regular expression")]
        }
        [l] if l == "last" => vec![Candidate::placeholder("<lines>", "How many lines")],
        _ => end(),
    }
}

/// The value of an `ip-proto` leaf: a number, or the name of a common protocol.
fn protocol_values(node: &efb_yang::schema::SchemaNodeInfo) -> Vec<Candidate> {
    let mut out = vec![Candidate::placeholder(
        format!("<{}>", node.name),
        format!("IP protocol: {}", protocol::ACCEPTED),
    )];
    out.extend(
        protocol::PROTOCOLS
            .iter()
            .map(|(name, n, what)| Candidate::word(*name, format!("{n}: {what}"))),
    );
    out
}

fn help_topics(rest: &[String]) -> Vec<Candidate> {
    if !rest.is_empty() {
        return end();
    }
    let mut out: Vec<Candidate> = HELP_TOPICS
        .iter()
        .map(|(w, h)| Candidate::word(*w, *h))
        .collect();
    out.extend(
        ["show", "call", "set", "delete", "rollback", "load"]
            .iter()
            .map(|w| Candidate::word(*w, format!("Help on {w}"))),
    );
    out.extend(end());
    out
}

/// The words typed after the last unquoted `|`, when there is one.
fn pipe_tail(before: &str) -> Option<Vec<String>> {
    let mut quoted = false;
    let mut last = None;
    for (i, c) in before.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '|' if !quoted => last = Some(i),
            _ => {}
        }
    }
    let at = last?;
    setlines::split_words(&before[at + 1..]).ok()
}

/// The word being typed: where it starts, and what is typed of it.
fn partial_word(line: &str) -> (usize, &str) {
    if line.is_empty() || line.ends_with(char::is_whitespace) {
        return (line.len(), "");
    }
    let start = line.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    (start, &line[start..])
}

/// `/efb:ports/efb:port/efb:name` -> `/ecofilter-balancer:ports/port`.
fn leafref_list(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let steps: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| s.rsplit(':').next().unwrap_or(s))
        .collect();
    let (_, list) = steps.split_last()?;
    let (first, others) = list.split_first()?;
    let mut text = format!("/{}:{first}", efb_yang::schema::MODULE_NAME);
    for step in others {
        text.push('/');
        text.push_str(step);
    }
    Some(text)
}

/// Words that end with a full stop without ending the sentence.
const ABBREVIATIONS: [&str; 5] = ["e.g.", "i.e.", "etc.", "vs.", "cf."];

/// The first sentence of a description on one line (the model's descriptions wrap):
/// `?` shows one line per candidate. "e.g." and its kind do not end a sentence.
pub fn first_sentence(text: &str) -> String {
    let mut sentence: Vec<&str> = Vec::new();
    for word in text.split_whitespace() {
        sentence.push(word);
        let ends = word.ends_with('.') && !ABBREVIATIONS.contains(&word.to_lowercase().as_str());
        if ends {
            break;
        }
    }
    sentence.join(" ").trim_end_matches('.').to_string()
}

/// The lines `?` prints.
pub fn help_lines(completion: &Completion) -> Vec<String> {
    let shown = completion.matching();
    if shown.is_empty() {
        return vec!["No completions: the line so far is not valid.".to_string()];
    }
    let width = shown
        .iter()
        .map(|c| c.word.chars().count())
        .max()
        .unwrap_or(0)
        .min(24);
    let mut lines = vec!["Possible completions:".to_string()];
    for c in shown {
        if c.help.is_empty() {
            lines.push(format!("  {}", c.word));
        } else {
            lines.push(format!("  {:<width$}  {}", c.word, c.help));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_shows_the_whole_first_sentence_on_one_line() {
        assert_eq!(
            first_sentence("IPv4 source prefix, e.g. 10.0.0.0/8. Longer text."),
            "IPv4 source prefix, e.g. 10.0.0.0/8"
        );
        assert_eq!(
            first_sentence("The mode to set:\n   primary or\n   bypass. Then more."),
            "The mode to set: primary or bypass"
        );
        assert_eq!(first_sentence("No full stop"), "No full stop");
        assert_eq!(first_sentence("   "), "");
    }

    struct NoKeys;
    impl KeySource for NoKeys {
        fn keys(&self, list_path: &str, _prefix: &str) -> Vec<String> {
            if list_path.ends_with("/flow") {
                vec!["bgp".into(), "dns".into()]
            } else if list_path.ends_with("/port") {
                vec!["p1".into()]
            } else {
                Vec::new()
            }
        }
    }

    /// What Tab offers (placeholders are for `?` only).
    fn words(c: &Completion) -> Vec<String> {
        c.matching()
            .iter()
            .filter(|c| !c.placeholder)
            .map(|c| c.word.clone())
            .collect()
    }

    #[test]
    fn candidates_come_from_the_grammar_the_schema_and_the_daemon() {
        let schema = Schema::load().unwrap();
        let grammar = Grammar::load().unwrap();
        let completer = Completer {
            schema: &schema,
            grammar: &grammar,
            keys: &NoKeys,
        };
        let op = |line: &str| words(&completer.complete(Mode::Operational, line));
        let conf = |line: &str| words(&completer.complete(Mode::Configuration, line));
        assert!(op("sh").contains(&"show".to_string()));
        assert_eq!(op("show ecofilter-balancer f"), vec!["flow"]);
        assert!(op("show ecofilter-balancer flow ").contains(&"bgp".to_string()));
        assert!(
            op("call ecofilter-balancer set-bypass-ecofilter-unit mode ")
                .contains(&"primary".to_string())
        );
        assert_eq!(conf("set ports port p1 sp"), vec!["speed"]);
        assert!(conf("set ports port p1 speed ").contains(&"100g".to_string()));
        assert!(conf("set ecofilter-balancer flow ").contains(&"dns".to_string()));
        assert!(
            conf("set ecofilter-balancer link l1 lan-port ").contains(&"p1".to_string()),
            "leafref keys"
        );
        assert_eq!(conf("show | display "), vec!["json", "set"]);
        assert_eq!(conf("commit ").first().map(String::as_str), Some("check"));
        assert!(conf("set nonsense ").is_empty());
        // The board's ports from the model, configured ones from the daemon, once each.
        let interfaces = op("show interfaces ");
        assert_eq!(interfaces[..3], ["p1", "p2", "p3"]);
        assert!(
            interfaces.contains(&"p32".to_string()) && !interfaces.contains(&"p33".to_string())
        );
        assert_eq!(interfaces.iter().filter(|w| *w == "p1").count(), 1);
        assert!(interfaces.contains(&"statistics".to_string()));
        assert!(!op("show interfaces p1 ").contains(&"p1".to_string()));
    }

    struct History(usize);
    impl KeySource for History {
        fn keys(&self, _list_path: &str, _prefix: &str) -> Vec<String> {
            Vec::new()
        }
        fn history(&self) -> Option<Vec<Commit>> {
            Some(
                (0..self.0)
                    .rev()
                    .map(|n| Commit {
                        rollback: n,
                        id: (10 + self.0 - n) as u64,
                        said: format!("by user{n}"),
                    })
                    .collect(),
            )
        }
    }

    #[test]
    fn rollback_offers_the_numbers_history_lists() {
        let schema = Schema::load().unwrap();
        let grammar = Grammar::load().unwrap();
        let offered = |held: usize| {
            let completer = Completer {
                schema: &schema,
                grammar: &grammar,
                keys: &History(held),
            };
            let completion = completer.complete(Mode::Configuration, "rollback ");
            completion
                .candidates
                .iter()
                .map(|c| format!("{} {}", c.word, c.help))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            offered(3),
            vec![
                "0 commit 13: by user0",
                "1 commit 12: by user1",
                "2 commit 11: by user2"
            ]
        );
        assert_eq!(
            offered(0),
            vec!["<0> The running configuration (history holds no commit)"]
        );
    }
}
