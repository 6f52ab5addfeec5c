//! `help` and `help TOPIC`: what `?` says, gathered on one page per topic. The texts are
//! those of the grammar's commands and of the shell's own words (configuration commands,
//! commit options, pipes), so `help` and `?` never disagree.

use crate::complete::{COMMIT_OPTIONS, PIPES};
use crate::config_commands::ConfigCommand;
use crate::grammar::{Command, Grammar};

/// Topics that are not command words, with what they cover.
const TOPICS: &[(&str, &str)] = &[
    (
        "commands",
        "Operational commands (efb>): show, call, edit...",
    ),
    (
        "configuration",
        "Configuration mode (efb#): set, delete, commit, rollback...",
    ),
    ("commit", "The options of commit"),
    (
        "pipes",
        "What may follow |: match, except, find, count, last, no-more, display",
    ),
    ("keys", "Keys: Tab, ?, history, the pager"),
];

const KEYS: &[(&str, &str)] = &[
    (
        "Tab",
        "Complete the word (keywords, names from the daemon, values)",
    ),
    ("?", "List what may come next, with descriptions"),
    ("Up, Down", "Earlier and later lines of the history"),
    ("Ctrl-R", "Search the history"),
    ("Ctrl-C", "Cancel the line"),
    ("Ctrl-D", "Leave the shell"),
    ("Space", "At ---(more)---: the next screen"),
    ("Enter", "At ---(more)---: the next line"),
    ("q", "At ---(more)---: stop (| no-more shows all at once)"),
    ("Any key", "In monitor: stop, back to the prompt"),
];

/// `help` followed by words that are no topic and no command's.
#[derive(Debug, thiserror::Error)]
#[error(
    "help: no topic \"{words}\"; topics: {}, or the first words of a command (help show ports)",
    topic_names()
)]
pub struct NoTopic {
    /// The words, cut to what a message shows.
    pub words: String,
}

fn topic_names() -> String {
    TOPICS
        .iter()
        .map(|(t, _)| *t)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lines of `help` followed by `words`, or why there is no such topic.
pub fn topic(grammar: &Grammar, words: &[String]) -> Result<Vec<String>, NoTopic> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let lines = match words.as_slice() {
        [] => overview(),
        ["commands" | "operational"] => commands(grammar, &[]),
        ["configuration" | "configure" | "edit"] => configuration(),
        ["commit" | "apply"] => table("commit [OPTION...]: options in any order", COMMIT_OPTIONS),
        ["pipes" | "pipe" | "|"] => table("COMMAND | PIPE | PIPE...", PIPES),
        ["keys"] => table("Keys", KEYS),
        _ if !matching(grammar, &words).is_empty() || configuration_command(&words).is_some() => {
            let mut lines = Vec::new();
            if !matching(grammar, &words).is_empty() {
                lines = commands(grammar, &words);
            }
            if let Some(command) = configuration_command(&words) {
                lines.push("In configuration mode (efb#):".to_string());
                lines.extend(indented(vec![vec![
                    command.word().to_string(),
                    command.help().to_string(),
                ]]));
            }
            lines
        }
        _ => {
            return Err(NoTopic {
                words: efb_yang::text::excerpt(&words.join(" ")).into_owned(),
            });
        }
    };
    Ok(lines)
}

fn overview() -> Vec<String> {
    let mut lines = vec!["Help topics (help TOPIC):".to_string()];
    let mut rows: Vec<Vec<String>> = TOPICS
        .iter()
        .map(|(t, h)| vec![(*t).to_string(), (*h).to_string()])
        .collect();
    rows.push(vec![
        "COMMAND".into(),
        "A command's words: help show ports, help rollback".into(),
    ]);
    lines.extend(indented(rows));
    lines.push("Type ? anywhere on a line to list what may come next; Tab completes.".into());
    lines
}

/// The configuration command `words` name (one word: set, rollback...).
fn configuration_command(words: &[&str]) -> Option<ConfigCommand> {
    match words {
        [word] => ConfigCommand::parse(word),
        _ => None,
    }
}

/// Grammar commands whose words start with `words`.
fn matching<'g>(grammar: &'g Grammar, words: &[&str]) -> Vec<&'g Command> {
    grammar
        .commands
        .iter()
        .filter(|c| {
            let cw = c.words();
            cw.len() >= words.len() && cw.iter().zip(words).all(|(a, b)| a == b)
        })
        .collect()
}

fn commands(grammar: &Grammar, words: &[&str]) -> Vec<String> {
    let rows = matching(grammar, words)
        .into_iter()
        .map(|c| vec![usage(c), c.help.clone()])
        .collect();
    let mut lines = vec!["Operational commands (efb>; in configuration mode: run COMMAND):".into()];
    lines.extend(indented(rows));
    lines
}

/// A command's words and what may follow them.
fn usage(command: &Command) -> String {
    let mut text = command.words.clone();
    if let Some(arg) = command.get.as_ref().and_then(|g| g.arg.as_deref()) {
        text.push_str(&format!(" [{arg}...]"));
    }
    for switch in command.switches.keys() {
        text.push_str(&format!(" [{switch}]"));
    }
    if !command.params.is_empty() {
        let params: Vec<&str> = command.params.iter().map(|p| p.word.as_str()).collect();
        text.push_str(&format!(" {} ...", params.join("|")));
    }
    text
}

fn configuration() -> Vec<String> {
    let commands: Vec<(&str, &str)> = ConfigCommand::ALL
        .iter()
        .map(|c| (c.word(), c.help()))
        .collect();
    let mut lines = table(
        "Configuration mode (efb#): edit or configure enters it",
        &commands,
    );
    lines.push(
        "Paths come from the model: set ecofilter-balancer flow bgp match dst-port 179 action bypass"
            .into(),
    );
    lines
}

fn table(title: &str, rows: &[(&str, &str)]) -> Vec<String> {
    let mut lines = vec![format!("{title}:")];
    lines.extend(indented(
        rows.iter()
            .map(|(w, h)| vec![(*w).to_string(), (*h).to_string()])
            .collect(),
    ));
    lines
}

fn indented(rows: Vec<Vec<String>>) -> Vec<String> {
    efb_text_table::align(&rows, &[])
        .into_iter()
        .map(|l| format!("  {l}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help(line: &str) -> Result<Vec<String>, NoTopic> {
        let grammar = Grammar::load().unwrap();
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        topic(&grammar, &words)
    }

    #[test]
    fn topics_commands_and_unknown_words() {
        assert!(help("").unwrap()[0].starts_with("Help topics"));
        let ports = help("show ports").unwrap();
        assert!(
            ports
                .iter()
                .any(|l| l.contains("show ports [NAME...] [statistics]")),
            "{ports:?}"
        );
        let pipes = help("pipes").unwrap().join("\n");
        assert!(
            pipes.contains("no-more") && pipes.contains("last"),
            "{pipes}"
        );
        assert!(help("rollback").unwrap()[1].contains("rollback"));
        // A word of both modes: the operational commands, then the configuration one.
        let show = help("show").unwrap().join("\n");
        assert!(
            show.contains("show ecofilter-balancer flow [NAME...]")
                && show.contains("Show the candidate"),
            "{show}"
        );
        let err = help("nonsense").unwrap_err();
        assert_eq!(err.words, "nonsense");
        let err = err.to_string();
        assert!(
            err.contains("no topic \"nonsense\"") && err.contains("commands"),
            "{err}"
        );
    }
}
