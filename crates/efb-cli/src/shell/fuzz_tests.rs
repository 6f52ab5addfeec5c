//! Property-based fuzzing of how the shell reads a typed line before anything goes to
//! efbd (private to the shell, so a unit test): `?` at the end, pipes, the pipe stages,
//! `show | compare`, wildcards of `show`; and the set lines efbd writes (`show | display
//! set`, `show | compare | display set`) typed back as they are. The case count keeps
//! this to about 2 s (`EFB_FUZZ_CASES` for more, see efb-fuzz).

#![allow(clippy::unwrap_used)]

use efb_fuzz::{config, model, schema};
use efb_yang::setlines::{self, quote_word};
use proptest::prelude::*;

use super::pipes::{Pipe, compare_stage, split_pipes};
use super::{asks_help, wildcard_match};

/// A word as people type them, pipes' and commands' own among others.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => proptest::sample::select(vec![
            "show", "set", "compare", "rollback", "match", "except", "find", "count", "last",
            "no-more", "display", "json", "set", "1", "0", "-1", "?", "|", "*", "p*", "[", "(a",
        ])
        .prop_map(str::to_string),
        2 => model::name(),
        1 => efb_fuzz::json::text(),
    ]
}

fn line_of(words: &[String]) -> String {
    words
        .iter()
        .map(|w| quote_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

proptest! {
    #![proptest_config(config(10000))]

    /// Any line: split into a command and its pipes, or refused; each stage a pipe or a
    /// refusal saying what would be taken; `?` and wildcards answered. Never a panic.
    #[test]
    fn any_line_splits_into_pipes_or_is_refused(line in ".{0,60}", words in proptest::collection::vec(word(), 0..5)) {
        let _ = asks_help(&line);
        for line in [line, words.join(" ")] {
            let Ok((command, stages)) = split_pipes(&line) else {
                continue;
            };
            prop_assert!(command.len() <= line.len());
            let command_words = setlines::split_words(&command).unwrap_or_default();
            let _ = compare_stage(&command_words, &stages);
            for stage in &stages {
                if let Err(e) = Pipe::parse(stage) {
                    prop_assert!(!e.0.is_empty());
                }
            }
        }
        let _ = wildcard_match(&words.concat(), &words.join(""));
    }

    /// Quoted words and quoted pipe stages split back into themselves, whatever the words
    /// hold (quotes, backslashes, `|`, `?`).
    #[test]
    fn quoted_commands_and_pipes_split_back(command in proptest::collection::vec(word(), 1..5), pipes in proptest::collection::vec(proptest::collection::vec(word(), 1..3), 0..3)) {
        let mut line = line_of(&command);
        for stage in &pipes {
            line.push_str(" | ");
            line.push_str(&line_of(stage));
        }
        prop_assert_eq!(asks_help(&line), None, "{}", line);
        let (typed, stages) = split_pipes(&line).unwrap();
        prop_assert_eq!(setlines::split_words(&typed).unwrap(), command, "{}", line);
        prop_assert_eq!(stages, pipes, "{}", line);
    }

    /// The set lines of any configuration, typed back into the shell, are the same lines:
    /// no `?` taken for help, no `|` taken for a pipe.
    #[test]
    fn set_lines_of_a_configuration_type_back_as_themselves(tree in model::tree(6)) {
        let schema = schema();
        for line in setlines::render_tree(schema, &tree) {
            prop_assert_eq!(asks_help(&line), None, "{}", line);
            let (command, stages) = split_pipes(&line).unwrap();
            prop_assert!(stages.is_empty(), "{line}: {stages:?}");
            prop_assert_eq!(&command, &line);
            let parsed = setlines::parse_line(schema, &command);
            prop_assert!(parsed.is_ok(), "{line}: {parsed:?}");
        }
    }

    /// `*` stands for any run of characters: a name matches the pattern made of its pieces.
    #[test]
    fn wildcards_match_what_they_stand_for(pieces in proptest::collection::vec("[a-z0-9-]{0,4}", 1..4), fillers in proptest::collection::vec("[a-z0-9*-]{0,4}", 3)) {
        let pattern = pieces.join("*");
        let mut name = String::new();
        for (i, piece) in pieces.iter().enumerate() {
            if i > 0 {
                name.push_str(&fillers[i - 1]);
            }
            name.push_str(piece);
        }
        prop_assert!(wildcard_match(&pattern, &name), "{pattern} {name}");
        prop_assert!(wildcard_match("*", &name));
    }
}

/// Found by fuzzing: a value with `\"` and `|` in it (a description) was cut at the `|`
/// as a pipe, and a value ending with `?` was shown unquoted and read back as a question:
/// `show | display set` could not be typed back.
#[test]
fn quoted_pipes_and_question_marks_are_the_words() {
    let description = quote_word("say \"a|b\" why?");
    assert_eq!(description, r#""say \"a|b\" why?""#);
    let line = format!("set ports port p1 description {description}");
    assert_eq!(asks_help(&line), None);
    let (command, stages) = split_pipes(&line).unwrap();
    assert!(stages.is_empty(), "{stages:?}");
    assert_eq!(command, line);
    assert_eq!(quote_word("why?"), r#""why?""#);
    assert_eq!(
        asks_help(r#"set ports port p1 description "a\"?"#),
        None,
        "inside a quote"
    );
    assert_eq!(asks_help("set ports ?"), Some("set ports "));
}
