//! The operational command grammar, read from `cli-grammar/operational.toml` (embedded).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub const GRAMMAR_TEXT: &str = include_str!("../../../cli-grammar/operational.toml");

#[derive(Debug, Clone)]
pub struct Grammar {
    pub commands: Vec<Command>,
    pub views: BTreeMap<String, View>,
}

/// The file as toml reads it. Each command is read on its own afterwards, so that an error
/// in one names it: toml's message says which key and what it accepts, not which command.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrammarFile {
    command: Vec<toml::Table>,
    #[serde(default)]
    view: BTreeMap<String, View>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Command {
    pub words: String,
    pub help: String,
    pub get: Option<Get>,
    pub rpc: Option<String>,
    #[serde(default)]
    pub params: Vec<Param>,
    pub builtin: Option<Builtin>,
    #[serde(default)]
    pub render: Option<Render>,
    /// Last words that draw the answer with another view (`statistics` -> `port-statistics`).
    #[serde(default)]
    pub switches: BTreeMap<String, Render>,
    /// Operations whose effect on traffic a person at a terminal confirms first.
    #[serde(default)]
    pub confirm: Vec<Confirm>,
    /// What a `get` command does instead of showing its entries once.
    #[serde(default)]
    pub action: Option<Action>,
}

/// What the shell does itself, for a command that neither reads (`get`) nor calls an
/// operation (`rpc`).
#[derive(Debug, Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    ShowConfiguration,
    History,
    Rollback,
    Status,
    Users,
    Logout,
    Audit,
    Log,
    Configure,
    Exit,
    Help,
    ScreenLength,
}

/// What a `get` command may do with the entries it names instead of showing them once.
#[derive(Debug, Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Its view, drawn again every second until a key is pressed.
    Monitor,
    /// The counters of its entries count from zero again.
    ClearStatistics,
}

/// How an answer is drawn: by the shell itself, as the port inventory, or with a view of
/// the grammar (checked to be there when the grammar loads).
#[derive(Debug, Deserialize, Serialize, Clone, PartialEq, Eq)]
#[serde(
    untagged,
    expecting = "a string: the name of a view or of one of the shell's drawings"
)]
pub enum Render {
    Drawing(Drawing),
    Inventory(Inventory),
    View(String),
}

/// Drawings the shell makes itself, not from a view of the grammar.
#[derive(Debug, Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Drawing {
    /// One object's members, one per line.
    Fields,
    Json,
    /// One leaf's value.
    Value,
    /// "ok".
    Done,
}

/// The port inventory's drawings (`show interfaces`): rows joined from the board and the
/// configured ports, drawn by `view::interfaces`.
#[derive(Debug, Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Inventory {
    Interfaces,
    InterfaceStatistics,
}

/// Writes a word of the grammar as the file spells it: serde's renames are its one
/// spelling, for reading the file and for messages alike.
fn spelled<T: Serialize>(word: &T, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match serde_json::to_value(word) {
        Ok(serde_json::Value::String(text)) => f.write_str(&text),
        _ => f.write_str("?"),
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        spelled(self, f)
    }
}

impl fmt::Display for Render {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        spelled(self, f)
    }
}

/// "Continue? [yes,no]" before an operation, when parameter `leaf` is `value`. `says` names
/// the effect; `{LEAF}` in it is that parameter's value, or `absent` when it is not given.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Confirm {
    pub leaf: String,
    pub value: String,
    pub says: String,
    #[serde(default)]
    pub absent: BTreeMap<String, String>,
}

impl Confirm {
    /// The effect to confirm, if `input` (the operation's parameters) asks for it.
    pub fn applies(&self, input: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
        if input.get(&self.leaf).and_then(|v| v.as_str()) != Some(self.value.as_str()) {
            return None;
        }
        let mut text = self.says.clone();
        for (leaf, absent) in &self.absent {
            let value = input.get(leaf).and_then(|v| v.as_str()).unwrap_or(absent);
            text = text.replace(&format!("{{{leaf}}}"), value);
        }
        Some(text)
    }
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Get {
    pub datastore: String,
    pub path: String,
    /// Name of an optional argument selecting entries of the list at `path`.
    pub arg: Option<String>,
    /// The order the entries are listed in, when not their names' (flows: by priority).
    pub order: Option<Order>,
}

/// Entries listed by a leaf's value (numbers by value), ties in the order they came.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Order {
    pub leaf: String,
    #[serde(default)]
    pub descending: bool,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Param {
    pub word: String,
    pub leaf: String,
}

#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct View {
    #[serde(default)]
    pub heading: Vec<Column>,
    /// A list inside each entry whose entries are the table's rows (units: their pairs).
    pub rows: Option<String>,
    #[serde(default)]
    pub columns: Vec<Column>,
    /// One object (an operation's answer) drawn as "title value" lines, in this order.
    #[serde(default)]
    pub fields: Vec<Column>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Column {
    pub title: String,
    pub leaf: String,
    #[serde(default)]
    pub align: Option<String>,
    /// Shown when the leaf is absent (for configuration leaves).
    pub absent: Option<String>,
    /// An operational value: shown as "unknown" while the daemon does not know it.
    #[serde(default)]
    pub state: bool,
    /// Draw a container as "name value" pairs.
    #[serde(default)]
    pub words: bool,
    /// In a fields view: drawn only when this other leaf is there (a pair's status means
    /// nothing for a session no unit takes).
    #[serde(default)]
    pub with: Option<String>,
    /// In a monitor's view: the counter's rate per second between two reads, not its value.
    #[serde(default)]
    pub rate: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("cli-grammar/operational.toml: {0}")]
pub struct GrammarError(String);

/// What serde cannot see wrong in a command of the grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandFault {
    #[error("needs exactly one of get, rpc, builtin")]
    NotOneSource,
    #[error("action {0}: only a get command takes an action")]
    ActionWithoutGet(String),
    #[error("{0} draws the board: only a get command uses it")]
    InventoryWithoutGet(String),
    #[error("no view {0}")]
    NoView(String),
    #[error("view {0} draws fields of one answer: only an rpc command uses it")]
    FieldsWithoutRpc(String),
}

impl Command {
    pub fn words(&self) -> Vec<&str> {
        self.words.split_whitespace().collect()
    }

    /// Whether it shows the port inventory (`show interfaces`).
    pub fn is_inventory(&self) -> bool {
        matches!(self.render, Some(Render::Inventory(_)))
    }

    /// Reads one `[[command]]` of the file; an error names the command.
    fn read(table: toml::Table) -> Result<Command, GrammarError> {
        let words = table
            .get("words")
            .and_then(toml::Value::as_str)
            .unwrap_or("a command without words")
            .to_string();
        toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| GrammarError(format!("{words}: {}", one_line(&e))))
    }
}

/// toml's message of an error in a value it was given (not read from the text): what was
/// wrong, then `in KEY` on a line of its own.
fn one_line(error: &toml::de::Error) -> String {
    let text = error.to_string();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" ")
}

impl Grammar {
    pub fn load() -> Result<Grammar, GrammarError> {
        Grammar::parse(GRAMMAR_TEXT)
    }

    pub fn parse(text: &str) -> Result<Grammar, GrammarError> {
        let file: GrammarFile = toml::from_str(text).map_err(|e| GrammarError(e.to_string()))?;
        let grammar = Grammar {
            commands: file
                .command
                .into_iter()
                .map(Command::read)
                .collect::<Result<_, _>>()?,
            views: file.view,
        };
        for command in &grammar.commands {
            grammar
                .check(command)
                .map_err(|e| GrammarError(format!("{}: {e}", command.words)))?;
        }
        Ok(grammar)
    }

    /// What serde cannot check of a command: it takes its answer from exactly one place,
    /// and its drawings suit that place and are there.
    fn check(&self, command: &Command) -> Result<(), CommandFault> {
        let sources = [
            command.get.is_some(),
            command.rpc.is_some(),
            command.builtin.is_some(),
        ];
        if sources.iter().filter(|s| **s).count() != 1 {
            return Err(CommandFault::NotOneSource);
        }
        if let Some(action) = command.action
            && command.get.is_none()
        {
            return Err(CommandFault::ActionWithoutGet(action.to_string()));
        }
        for render in command.render.iter().chain(command.switches.values()) {
            self.check_render(command, render)?;
        }
        Ok(())
    }

    fn check_render(&self, command: &Command, render: &Render) -> Result<(), CommandFault> {
        match render {
            Render::Drawing(_) => Ok(()),
            Render::Inventory(_) if command.get.is_none() => {
                Err(CommandFault::InventoryWithoutGet(render.to_string()))
            }
            Render::Inventory(_) => Ok(()),
            Render::View(name) => match self.views.get(name) {
                None => Err(CommandFault::NoView(name.clone())),
                Some(view) if !view.fields.is_empty() && command.rpc.is_none() => {
                    Err(CommandFault::FieldsWithoutRpc(name.clone()))
                }
                Some(_) => Ok(()),
            },
        }
    }

    /// The command whose words are the longest prefix of `words`, and the words after them.
    pub fn find<'g, 'w>(&'g self, words: &'w [String]) -> Option<(&'g Command, &'w [String])> {
        self.commands
            .iter()
            .filter(|c| {
                let cw = c.words();
                cw.len() <= words.len() && cw.iter().zip(words).all(|(a, b)| *a == b)
            })
            .max_by_key(|c| c.words().len())
            .map(|c| (c, &words[c.words().len()..]))
    }

    /// Words that may come after `typed` (complete words), with the help of the command or
    /// group they lead to.
    pub fn next_words(&self, typed: &[String]) -> Vec<(String, String)> {
        let mut next: BTreeMap<String, String> = BTreeMap::new();
        for command in &self.commands {
            let cw = command.words();
            if cw.len() > typed.len() && cw.iter().zip(typed).all(|(a, b)| *a == b) {
                let word = cw[typed.len()].to_string();
                let help = if cw.len() == typed.len() + 1 {
                    command.help.clone()
                } else {
                    group_help(&cw[..=typed.len()])
                };
                next.entry(word).or_insert(help);
            }
        }
        next.into_iter().collect()
    }
}

fn group_help(words: &[&str]) -> String {
    match words {
        ["show"] => "Show information about the balancer".to_string(),
        ["call"] => "Call an operation of the balancer".to_string(),
        ["show", "system"] => "Show the daemon and its commit history".to_string(),
        ["set"] => "Set a setting of this shell (set cli screen-length N)".to_string(),
        ["set", "cli"] => "Settings of this shell".to_string(),
        ["monitor"] => "Watch a view drawn again every second, until a key is pressed".to_string(),
        ["clear"] => "Clear counters: they count from zero again".to_string(),
        _ => format!("{} commands", words.join(" ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_grammar_is_valid() {
        let grammar = Grammar::load().unwrap();
        assert!(grammar.commands.len() > 10);
        let words: Vec<String> = ["show", "ecofilter-balancer", "flow", "bgp"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (command, rest) = grammar.find(&words).unwrap();
        assert_eq!(command.words, "show ecofilter-balancer flow");
        assert_eq!(rest, &["bgp".to_string()]);
        let next: Vec<String> = grammar
            .next_words(&["show".to_string()])
            .into_iter()
            .map(|(w, _)| w)
            .collect();
        assert!(
            next.contains(&"ecofilter-balancer".to_string()) && next.contains(&"ports".to_string())
        );
    }

    #[test]
    fn a_broken_grammar_is_refused_with_the_command_named() {
        let err = Grammar::parse("[[command]]\nwords = \"show x\"\nhelp = \"h\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("show x") && err.contains("exactly one"),
            "{err}"
        );
        let err = Grammar::parse("[[command]]\nwords = \"show x\"\nhelp = \"h\"\nbuiltin = \"status\"\nrender = \"nope\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no view nope"), "{err}");
        let err = Grammar::parse(
            "[[command]]\nwords = \"show x\"\nhelp = \"h\"\nget = { datastore = \"running\", path = \"/x\" }\nrender = \"one\"\n\
             [view.one]\nfields = [{ title = \"a\", leaf = \"a\" }]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("only an rpc command"), "{err}");
        let err = Grammar::parse(
            "[[command]]\nwords = \"show x\"\nhelp = \"h\"\nbuiltin = \"status\"\nrender = \"interfaces\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("only a get command"), "{err}");
    }

    /// A word of the grammar serde does not know: the command named, the words it accepts.
    fn refusal(command: &str) -> String {
        let text = format!("[[command]]\nwords = \"show x\"\nhelp = \"h\"\n{command}\n");
        Grammar::parse(&text).unwrap_err().to_string()
    }

    #[test]
    fn an_unknown_builtin_action_or_drawing_is_refused_with_what_is_accepted() {
        let err = refusal("builtin = \"stauts\"");
        assert!(
            err.contains("show x: unknown variant `stauts`, expected one of")
                && err.contains("`status`")
                && err.ends_with("in `builtin`"),
            "{err}"
        );
        let err = refusal("get = { datastore = \"running\", path = \"/x\" }\naction = \"watch\"");
        assert!(
            err.contains("show x:")
                && err.contains("watch")
                && err.contains("`monitor`")
                && err.contains("`clear-statistics`"),
            "{err}"
        );
        let err = refusal("rpc = \"r\"\naction = \"monitor\"");
        assert!(
            err.contains("show x: action monitor: only a get command"),
            "{err}"
        );
        let err = refusal("builtin = \"status\"\nrender = 3");
        assert!(
            err.contains("show x:") && err.contains("the name of a view") && err.contains("render"),
            "{err}"
        );
    }

    #[test]
    fn drawings_are_read_as_the_file_spells_them() {
        let grammar = Grammar::load().unwrap();
        let find = |words: &str| {
            let words: Vec<String> = words.split_whitespace().map(str::to_string).collect();
            grammar.find(&words).unwrap().0.clone()
        };
        let interfaces = find("show interfaces");
        assert_eq!(
            interfaces.render,
            Some(Render::Inventory(Inventory::Interfaces))
        );
        assert_eq!(
            interfaces.switches["statistics"].to_string(),
            "interface-statistics"
        );
        assert_eq!(
            find("show ports").switches["statistics"],
            Render::View("port-statistics".into())
        );
        assert_eq!(find("monitor ports").action, Some(Action::Monitor));
        assert_eq!(find("show system status").builtin, Some(Builtin::Status));
    }
}
