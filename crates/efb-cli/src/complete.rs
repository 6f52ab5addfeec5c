//! What may come next on a line: the candidates Tab completes and `?` lists. Operational
//! words come from the grammar (`operational.rs`), configuration words from
//! [`ConfigCommand`](crate::config_commands::ConfigCommand) and the schema
//! (`configuration.rs`, `paths.rs`), list keys live from the daemon, values from the leaf's
//! type (enums, booleans, references).

use efb_yang::schema::Schema;
use efb_yang::setlines;

use crate::grammar::Grammar;

mod configuration;
mod operational;
mod paths;

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

    /// The configuration at a data path, as set lines (none when not known).
    fn set_lines(&self, _path: &str) -> Vec<String> {
        Vec::new()
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
    ("save", "Write the lines to a file instead of the screen"),
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
                Ok(words) => self.candidates(mode, place, &words, partial),
                Err(_) => Vec::new(),
            },
        };
        Completion {
            start,
            partial: partial.to_string(),
            candidates,
        }
    }

    fn candidates(
        &self,
        mode: Mode,
        place: &[String],
        words: &[String],
        partial: &str,
    ) -> Vec<Candidate> {
        match mode {
            Mode::Operational => self.operational(words),
            Mode::Configuration => self.configuration_line(place, words, partial),
        }
    }
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
        [s] if s == "save" => vec![Candidate::placeholder("<file>", "The file to write")],
        _ => end(),
    }
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
    let mut quoting = setlines::Quoting::default();
    let mut last = None;
    for (i, c) in before.char_indices() {
        if quoting.outside(c) && c == '|' {
            last = Some(i);
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
    // After the last white space, which may take more than a byte (U+3000, U+00A0).
    let start = line
        .char_indices()
        .rfind(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    (start, &line[start..])
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

    /// Three ports: p1 is a link's, p2 a pair's.
    struct Site;
    impl KeySource for Site {
        fn keys(&self, list_path: &str, _prefix: &str) -> Vec<String> {
            match list_path.ends_with("/port") {
                true => ["p1", "p2", "p3"].map(String::from).to_vec(),
                false => Vec::new(),
            }
        }
        fn set_lines(&self, path: &str) -> Vec<String> {
            let line = match path.rsplit('/').next() {
                Some("link") => "set ecofilter-balancer link l1 lan-port p1",
                Some("ecofilter-unit") => {
                    "set ecofilter-balancer ecofilter-unit ef1 pair a wan-port p2"
                }
                _ => return Vec::new(),
            };
            vec![line.to_string()]
        }
    }

    #[test]
    fn a_port_for_a_link_or_a_pair_is_offered_when_free() {
        let schema = Schema::load().unwrap();
        let grammar = Grammar::load().unwrap();
        let completer = Completer {
            schema: &schema,
            grammar: &grammar,
            keys: &Site,
        };
        let conf = |line: &str| words(&completer.complete(Mode::Configuration, line));
        assert_eq!(conf("set ecofilter-balancer link l2 lan-port "), ["p3"]);
        assert_eq!(
            conf("set ecofilter-balancer ecofilter-unit ef2 pair b lan-port "),
            ["p3"]
        );
        // The leaf's own port stays on offer.
        assert_eq!(
            conf("set ecofilter-balancer link l1 lan-port "),
            ["p1", "p3"]
        );
        assert_eq!(
            conf("set ecofilter-balancer ecofilter-unit ef1 pair a wan-port "),
            ["p2", "p3"]
        );
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
