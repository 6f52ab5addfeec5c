//! What may come next on a line: the candidates Tab completes and `?` lists. Operational
//! words come from the grammar, configuration words from the schema, list keys live from the
//! daemon, values from the leaf's type (enums, booleans, references).

use efb_yang::schema::{Schema, SchemaId};
use efb_yang::setlines::{self, Expect, Verb};
use efb_yang::{BaseType, TypeInfo};

use crate::grammar::{Command, Grammar};

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

    /// How many commits history holds (`rollback` takes 0 to one less), if known.
    fn history_len(&self) -> Option<usize> {
        None
    }
}

/// Most keys listed for one Tab or `?`.
pub const KEY_LIMIT: u32 = 200;

pub struct Completer<'a> {
    pub schema: &'a Schema,
    pub grammar: &'a Grammar,
    pub keys: &'a dyn KeySource,
}

const CONFIG_COMMANDS: &[(&str, &str)] = &[
    ("set", "Set a value, or create a node, in the candidate"),
    ("delete", "Delete a node from the candidate"),
    (
        "show",
        "Show the candidate or a part of it (show | compare: the changes)",
    ),
    (
        "commit",
        "Validate the candidate and make it running (check, confirmed, comment)",
    ),
    ("apply", "Validate the candidate and make it running"),
    ("rollback", "Load commit N (0: running) into the candidate"),
    ("discard", "Drop the candidate's changes"),
    (
        "save",
        "Save the running configuration as startup (what the box boots with)",
    ),
    (
        "load",
        "Load a file of JSON or set lines: merge or override",
    ),
    ("run", "Run an operational command"),
    ("exit", "Leave configuration mode"),
    ("quit", "Leave configuration mode"),
];

const COMMIT_OPTIONS: &[(&str, &str)] = &[
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

const PIPES: &[(&str, &str)] = &[
    ("match", "Show only lines matching a regular expression"),
    (
        "except",
        "Show only lines not matching a regular expression",
    ),
    ("count", "Count the lines"),
    ("display", "Show the data as json or as set lines"),
];

impl Completer<'_> {
    pub fn complete(&self, mode: Mode, line: &str) -> Completion {
        let (start, partial) = partial_word(line);
        let before = &line[..start];
        let candidates = match pipe_tail(before) {
            Some(stage) => pipe_candidates(&stage),
            None => match setlines::split_words(before) {
                Ok(words) => self.candidates(mode, &words),
                Err(_) => Vec::new(),
            },
        };
        Completion {
            start,
            partial: partial.to_string(),
            candidates,
        }
    }

    fn candidates(&self, mode: Mode, words: &[String]) -> Vec<Candidate> {
        match mode {
            Mode::Operational => self.operational(words),
            Mode::Configuration => self.configuration(words),
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
            if rest.is_empty()
                && let Some(arg) = &get.arg
            {
                out.extend(self.list_keys(&get.path, arg));
            }
            if !switched && rest.len() <= 1 {
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
        match command.builtin.as_deref() {
            Some("show-configuration") => self.paths(Verb::Delete, rest),
            _ if rest.is_empty() => end(),
            _ => Vec::new(),
        }
    }

    fn configuration(&self, words: &[String]) -> Vec<Candidate> {
        let Some((first, rest)) = words.split_first() else {
            return CONFIG_COMMANDS
                .iter()
                .map(|(w, h)| Candidate::word(*w, *h))
                .collect();
        };
        match first.as_str() {
            "set" => self.paths(Verb::Set, rest),
            "delete" => self.paths(Verb::Delete, rest),
            "show" => self.paths(Verb::Delete, rest),
            "commit" | "apply" => commit_options(rest),
            "rollback" if rest.is_empty() => vec![self.rollback_numbers()],
            "load" if rest.is_empty() => vec![
                Candidate::word("merge", "Merge the file into the candidate"),
                Candidate::word("override", "The file becomes the candidate"),
            ],
            "load" if rest.len() == 1 => vec![Candidate::placeholder(
                "<file>",
                "RFC 7951 JSON or set lines",
            )],
            "run" => self.operational(rest),
            _ if rest.is_empty() => end(),
            _ => Vec::new(),
        }
    }

    /// The numbers `rollback` takes: those `show system commit` lists.
    fn rollback_numbers(&self) -> Candidate {
        match self.keys.history_len() {
            Some(0 | 1) => Candidate::placeholder(
                "<0>",
                "The running configuration (history holds no earlier commit)",
            ),
            Some(n) => Candidate::placeholder(
                format!("<0-{}>", n - 1),
                "Commit to load: 0 is running, 1 the one before... (show system commit lists them)",
            ),
            None => Candidate::placeholder(
                "<number>",
                "Commit to load: 0 is running, 1 the one before...",
            ),
        }
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

    fn list_keys(&self, list_path: &str, arg: &str) -> Vec<Candidate> {
        let mut out = vec![Candidate::placeholder(
            format!("<{}>", arg.to_lowercase()),
            "Show only this one",
        )];
        out.extend(
            self.keys_at(list_path, "")
                .into_iter()
                .map(|k| Candidate::word(k, "")),
        );
        out
    }

    fn keys_at(&self, list_path: &str, prefix: &str) -> Vec<String> {
        self.keys.keys(list_path, prefix)
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

fn end() -> Vec<Candidate> {
    vec![
        Candidate::placeholder("<[Enter]>", "Execute this command"),
        Candidate::placeholder("|", "Pipe through a command"),
    ]
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
        [m] if m == "match" || m == "except" => {
            vec![Candidate::placeholder("<regex>", "A regular expression")]
        }
        _ => end(),
    }
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
    }

    struct History(usize);
    impl KeySource for History {
        fn keys(&self, _list_path: &str, _prefix: &str) -> Vec<String> {
            Vec::new()
        }
        fn history_len(&self) -> Option<usize> {
            Some(self.0)
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
            completion.candidates[0].word.clone()
        };
        assert_eq!(offered(5), "<0-4>");
        assert_eq!(offered(0), "<0>");
    }
}
