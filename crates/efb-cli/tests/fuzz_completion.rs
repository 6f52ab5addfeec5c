//! Property-based fuzzing of what the shell reads of a line as it is typed: Tab and `?`
//! (completion at any place of the edit hierarchy, in both modes), the operational
//! grammar (a command found from words, what may follow, `help TOPIC`), and protocol
//! names turned into numbers in `set` lines. Never a panic; the word being completed is
//! where the line says it is. The case count keeps this binary to about a second
//! (`EFB_FUZZ_CASES` for more, see efb-fuzz).

#![allow(clippy::unwrap_used)]

use efb_cli::complete::{Completer, KeySource, Mode, help_lines};
use efb_cli::grammar::Grammar;
use efb_cli::help;
use efb_fuzz::{config, model, schema};
use proptest::prelude::*;

/// Keys as efbd would list them: a few, whatever the list.
struct SomeKeys;

impl KeySource for SomeKeys {
    fn keys(&self, _: &str, prefix: &str) -> Vec<String> {
        ["p1", "p2", "it's", "a b", "é"]
            .iter()
            .filter(|k| k.starts_with(prefix))
            .map(|k| k.to_string())
            .collect()
    }
}

fn grammar() -> &'static Grammar {
    static GRAMMAR: std::sync::OnceLock<Grammar> = std::sync::OnceLock::new();
    GRAMMAR.get_or_init(|| Grammar::load().unwrap())
}

/// Words of the grammar, the model and the shell among others.
fn word() -> impl Strategy<Value = String> {
    let mut words: Vec<String> = schema().nodes().map(|n| n.name.clone()).collect();
    for command in &grammar().commands {
        words.extend(command.words.split_whitespace().map(str::to_string));
    }
    words.extend(
        [
            "set", "delete", "edit", "show", "commit", "rollback", "|", "match", "?", "tcp",
        ]
        .map(String::from),
    );
    words.sort();
    words.dedup();
    prop_oneof![
        4 => proptest::sample::select(words),
        1 => model::name(),
        1 => efb_fuzz::json::text(),
    ]
}

/// A line as typed: words with white space between, any of it, the last one partial.
fn typed() -> impl Strategy<Value = String> {
    let space = proptest::sample::select(vec![" ", "  ", "\t", "\u{3000}", "\u{a0}", " \""]);
    (
        proptest::collection::vec((word(), space), 0..7),
        "[a-z\u{e9}\"'|]{0,3}",
    )
        .prop_map(|(words, last)| {
            let mut line: String = words.into_iter().map(|(w, s)| w + s).collect();
            line.push_str(&last);
            line
        })
}

proptest! {
    #![proptest_config(config(10000))]

    /// Tab and `?` at any point of any line, in either mode and at any place: candidates
    /// for the word the line ends with, which starts where the completion says.
    #[test]
    fn any_line_completes(line in prop_oneof![typed(), ".{0,30}"], place in proptest::collection::vec(word(), 0..3), configuration in any::<bool>()) {
        let completer = Completer { schema: schema(), grammar: grammar(), keys: &SomeKeys };
        let mode = if configuration { Mode::Configuration } else { Mode::Operational };
        let found = completer.complete_at(mode, &place, &line);
        prop_assert!(found.start <= line.len() && line.is_char_boundary(found.start));
        prop_assert_eq!(&found.partial, &line[found.start..]);
        let _ = help_lines(&found);
    }

    /// Any words: a command of the grammar or none, what may follow them, help on them.
    #[test]
    fn any_words_find_a_command_or_none(words in proptest::collection::vec(word(), 0..6)) {
        let grammar = grammar();
        if let Some((command, rest)) = grammar.find(&words) {
            prop_assert!(rest.len() < words.len() || command.words.is_empty());
        }
        let _ = grammar.next_words(&words);
        if let Err(e) = help::topic(grammar, &words) {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}

/// Found by fuzzing: after a white space of more than a byte (U+3000, U+00A0, as an input
/// method or a paste gives), Tab and `?` cut the line inside that character: a panic.
#[test]
fn completion_after_a_wide_space_does_not_panic() {
    let completer = Completer {
        schema: schema(),
        grammar: grammar(),
        keys: &SomeKeys,
    };
    for line in ["show\u{3000}co", "show\u{a0}c", "edit\u{3000}"] {
        let found = completer.complete(Mode::Operational, line);
        assert!(line.is_char_boundary(found.start), "{line}");
    }
    let found = completer.complete(Mode::Operational, "show\u{3000}co");
    assert_eq!(found.partial, "co");
}
