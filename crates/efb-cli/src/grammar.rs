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
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Get {
    pub datastore: String,
    pub path: String,
    /// Name of an optional argument selecting one entry of the list at `path`.
    pub arg: Option<String>,
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
}

#[derive(Debug, thiserror::Error)]
#[error("cli-grammar/operational.toml: {0}")]
pub struct GrammarError(String);

impl Command {
    pub fn words(&self) -> Vec<&str> {
        self.words.split_whitespace().collect()
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
            for view in command.render.iter().chain(command.switches.values()) {
                if !["fields", "json", "value", "done"].contains(&view.as_str())
                    && !grammar.views.contains_key(view)
                {
                    return Err(GrammarError(format!("{}: no view {view}", command.words)));
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
    }
}
