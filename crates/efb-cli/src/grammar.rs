//! The operational command grammar, read from `cli-grammar/operational.toml` (embedded).

use std::collections::BTreeMap;

use serde::Deserialize;

pub const GRAMMAR_TEXT: &str = include_str!("../../../cli-grammar/operational.toml");

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Grammar {
    #[serde(rename = "command")]
    pub commands: Vec<Command>,
    #[serde(rename = "view", default)]
    pub views: BTreeMap<String, View>,
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
    pub builtin: Option<String>,
    #[serde(default)]
    pub render: Option<String>,
    /// Last words that draw the answer with another view (`statistics` -> `port-statistics`).
    #[serde(default)]
    pub switches: BTreeMap<String, String>,
    /// Operations whose effect on traffic a person at a terminal confirms first.
    #[serde(default)]
    pub confirm: Vec<Confirm>,
    /// What a `get` command does instead of showing its entries once: "monitor" (its
    /// view, drawn again every second until a key is pressed) or "clear-statistics" (the
    /// counters of its entries count from zero again).
    #[serde(default)]
    pub action: Option<String>,
}

/// The actions a command may take on the list its `get` reads.
pub const ACTIONS: [&str; 2] = ["monitor", "clear-statistics"];

/// Drawings the shell makes itself, not from a view of the grammar: one object's fields,
/// JSON, one leaf's value, "ok".
pub const DRAWINGS: [&str; 4] = ["fields", "json", "value", "done"];

/// The port inventory's drawings (`show interfaces`): rows joined from the board and the
/// configured ports, drawn by `view::interfaces`.
pub const INVENTORY: [&str; 2] = ["interfaces", "interface-statistics"];

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

impl Command {
    pub fn words(&self) -> Vec<&str> {
        self.words.split_whitespace().collect()
    }

    /// Whether it shows the port inventory (`show interfaces`).
    pub fn is_inventory(&self) -> bool {
        self.render
            .as_deref()
            .is_some_and(|r| INVENTORY.contains(&r))
    }
}

impl Grammar {
    pub fn load() -> Result<Grammar, GrammarError> {
        Grammar::parse(GRAMMAR_TEXT)
    }

    pub fn parse(text: &str) -> Result<Grammar, GrammarError> {
        let grammar: Grammar = toml::from_str(text).map_err(|e| GrammarError(e.to_string()))?;
        for command in &grammar.commands {
            let sources = [
                command.get.is_some(),
                command.rpc.is_some(),
                command.builtin.is_some(),
            ];
            if sources.iter().filter(|s| **s).count() != 1 {
                return Err(GrammarError(format!(
                    "{}: needs exactly one of get, rpc, builtin",
                    command.words
                )));
            }
            if let Some(action) = &command.action
                && (command.get.is_none() || !ACTIONS.contains(&action.as_str()))
            {
                return Err(GrammarError(format!(
                    "{}: action {action}: a get command may take one of {}",
                    command.words,
                    ACTIONS.join(", ")
                )));
            }
            for view in command.render.iter().chain(command.switches.values()) {
                let drawn_here = DRAWINGS.contains(&view.as_str());
                let inventory = INVENTORY.contains(&view.as_str());
                if !drawn_here && !inventory && !grammar.views.contains_key(view) {
                    return Err(GrammarError(format!("{}: no view {view}", command.words)));
                }
                if inventory && command.get.is_none() {
                    return Err(GrammarError(format!(
                        "{}: {view} draws the board: only a get command uses it",
                        command.words
                    )));
                }
                let draws_one_object = grammar
                    .views
                    .get(view)
                    .is_some_and(|v| !v.fields.is_empty());
                if draws_one_object && command.rpc.is_none() {
                    return Err(GrammarError(format!(
                        "{}: view {view} draws fields of one answer: only an rpc command uses it",
                        command.words
                    )));
                }
            }
        }
        Ok(grammar)
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
}
