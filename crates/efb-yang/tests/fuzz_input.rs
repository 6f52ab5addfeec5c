//! Property-based fuzzing of what reaches this crate from outside: set lines (the shell's
//! `set` / `delete`, loaded files, the management API's edits), data paths, RFC 7951 JSON
//! (files, loads, gNMI's values), configuration input of either format, and the input of
//! the model's operations. Never a panic; every refusal is `Error::Invalid` with its
//! problems and a bounded message; what the schema says is valid goes round: rendered and
//! read back, it is what it was. Case counts keep this binary to a few seconds
//! (`EFB_FUZZ_CASES` for more, see efb-fuzz).

#![allow(clippy::unwrap_used)]

use efb_fuzz::json::{mutate, mutations};
use efb_fuzz::{MESSAGE_BOUND, config, model, schema};
use efb_yang::digest::{self, Digest};
use efb_yang::input::{self, Limit, check_json};
use efb_yang::json::{self, Check, PrintOptions};
use efb_yang::setlines::{self, Verb};
use efb_yang::{DataPath, DataTree, Error, diff, rpc};
use proptest::prelude::*;

fn compact(tree: &DataTree) -> String {
    json::to_json(schema(), tree, PrintOptions::default())
}

/// A refusal as the project promises it: problems, each with a message, the whole bounded.
fn proper(e: &Error) -> Result<(), TestCaseError> {
    let Error::Invalid(problems) = e else {
        return Err(TestCaseError::fail(format!("not a data error: {e}")));
    };
    prop_assert!(!problems.is_empty(), "a refusal without a problem");
    prop_assert!(
        problems.iter().all(|p| !p.message.is_empty()),
        "a problem without a message: {problems:?}"
    );
    let message = e.to_string();
    prop_assert!(
        message.len() <= MESSAGE_BOUND,
        "a message of {} bytes",
        message.len()
    );
    Ok(())
}

/// Words as the shell and set lines split them, some of the model's among others.
fn words() -> impl Strategy<Value = Vec<String>> {
    let schema = schema();
    let names: Vec<String> = schema.nodes().map(|n| n.name.clone()).collect();
    proptest::collection::vec(
        prop_oneof![
            3 => proptest::sample::select(names),
            2 => model::name(),
            1 => efb_fuzz::json::text(),
        ],
        0..10,
    )
}

fn line_of(words: &[String]) -> String {
    words
        .iter()
        .map(|w| setlines::quote_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

proptest! {
    #![proptest_config(config(10000))]

    /// A word quoted for the shell splits back into itself, whatever it holds.
    #[test]
    fn quoted_words_split_back_into_themselves(words in proptest::collection::vec(".{0,12}", 0..6)) {
        prop_assert_eq!(setlines::split_words(&line_of(&words)).unwrap(), words);
    }

    /// Any text splits into words or is an unterminated quote, in proportion to its size.
    #[test]
    fn any_text_splits_or_is_an_unterminated_quote(text in ".{0,80}") {
        if let Ok(words) = setlines::split_words(&text) {
            prop_assert!(words.iter().map(String::len).sum::<usize>() <= text.len());
        }
    }
}

proptest! {
    #![proptest_config(config(3000))]

    /// Lines of words (of the model and others) parse or are refused properly; what may
    /// come next (Tab, `?`) is answered for any words.
    #[test]
    fn any_set_line_parses_or_is_refused_properly(verb in prop_oneof![Just("set"), Just("delete"), Just("sett"), Just("")], words in words()) {
        let schema = schema();
        let line = format!("{verb} {}", line_of(&words));
        match setlines::parse_line(schema, &line) {
            Ok(parsed) => prop_assert!(verb == "set" || verb == "delete", "{parsed:?}"),
            Err(e) => proper(&e)?,
        }
        for verb in [Verb::Set, Verb::Delete] {
            if let Err(e) = setlines::expect_next(schema, verb, &words) {
                proper(&e)?;
            }
        }
        let mut tree = DataTree::new();
        if let Err(e) = setlines::apply_lines(schema, &mut tree, &format!("{line}\n{line}")) {
            proper(&e)?;
        }
    }

    /// Any text as set lines: applied or refused properly, never a panic.
    #[test]
    fn any_text_as_set_lines_applies_or_is_refused(text in ".{0,120}") {
        let mut tree = DataTree::new();
        if let Err(e) = setlines::apply_lines(schema(), &mut tree, &text) {
            proper(&e)?;
        }
    }

    /// A configuration as set lines is read back as the same configuration.
    #[test]
    fn set_lines_of_a_tree_read_back_as_the_tree(tree in model::tree(8)) {
        let schema = schema();
        let lines = setlines::render_tree(schema, &tree);
        let mut read = DataTree::new();
        let applied = setlines::apply_lines(schema, &mut read, &lines.join("\n"));
        prop_assert!(applied.is_ok(), "{lines:#?}: {applied:?}");
        prop_assert_eq!(compact(&read), compact(&tree), "{:#?}", lines);
    }

    /// A change's digest, worked out without listing the changes, says what the listed
    /// changes say: the count of lines `show | compare` lists, the summary, and the first
    /// lines, between any two configurations.
    #[test]
    fn digested_changes_are_the_listed_ones(old in model::tree(6), new in model::tree(6), max_lines in 0usize..12) {
        let schema = schema();
        for (a, b) in [(&old, &new), (&new, &old), (&DataTree::new(), &new), (&old, &DataTree::new())] {
            let listed = diff::diff(schema, a, b);
            let mut lines = setlines::render_changes(schema, &listed);
            let count = lines.len();
            lines.truncate(max_lines);
            let expected = Digest { count, summary: digest::summarise(schema, &listed), lines };
            prop_assert_eq!(digest::digest(schema, a, b, max_lines), expected, "{:#?}", listed);
        }
    }

    /// The lines of a configuration, mutated: each parses or is refused properly.
    #[test]
    fn mutated_set_lines_are_refused_properly(tree in model::tree(4), mutations in mutations()) {
        let schema = schema();
        let text = mutate(&setlines::render_tree(schema, &tree).join("\n"), &mutations);
        let mut read = DataTree::new();
        if let Err(e) = setlines::apply_lines(schema, &mut read, &text) {
            proper(&e)?;
        }
    }

    /// A data path written in libyang's form reads back as itself.
    #[test]
    fn data_paths_read_back_as_themselves(path in model::data_path()) {
        let schema = schema();
        let shown = path.display(schema);
        let read = DataPath::parse(schema, &shown);
        prop_assert!(read.is_ok(), "{shown}: {read:?}");
        prop_assert_eq!(read.unwrap(), path, "{}", shown);
    }

    /// Data paths, mutated or of any text: read or refused properly.
    #[test]
    fn mutated_data_paths_are_refused_properly(path in model::data_path(), mutations in mutations(), text in ".{0,40}") {
        let schema = schema();
        for text in [mutate(&path.display(schema), &mutations), text] {
            if let Err(e) = DataPath::parse(schema, &text) {
                proper(&e)?;
            }
        }
    }

    /// A configuration printed as RFC 7951 JSON reads back, through libyang and through
    /// the datastore's own reader, as the same configuration.
    #[test]
    fn json_of_a_tree_reads_back_as_the_tree(tree in model::tree(8), pretty in any::<bool>()) {
        let schema = schema();
        let text = json::to_json(schema, &tree, PrintOptions { pretty, with_defaults: false });
        let read = json::from_json(schema, &text, Check::Types);
        prop_assert!(read.is_ok(), "{text}: {read:?}");
        prop_assert_eq!(compact(&read.unwrap()), compact(&tree));
        let trusted = json::from_trusted_json(schema, &text).unwrap();
        prop_assert_eq!(compact(&trusted), compact(&tree));
    }

    /// Model JSON, mutated a little (members renamed, values of other types, punctuation
    /// lost or doubled): read or refused properly, whatever the check asked for.
    #[test]
    fn mutated_model_json_is_refused_properly(tree in model::tree(5), mutations in mutations(), complete in any::<bool>()) {
        let schema = schema();
        let text = mutate(&compact(&tree), &mutations);
        let check = if complete { Check::Complete } else { Check::Types };
        if let Err(e) = json::from_json(schema, &text, check) {
            proper(&e)?;
        }
        if let Err(e) = json::from_trusted_json(schema, &text) {
            proper(&e)?;
        }
    }

    /// Any JSON value (names of the model among others, nested): read or refused properly,
    /// also when validated completely alongside other work.
    #[test]
    fn any_json_is_read_or_refused_properly(value in efb_fuzz::json::value()) {
        let schema = schema();
        let text = value.to_string();
        if let Err(e) = json::from_json(schema, &text, Check::Types) {
            proper(&e)?;
        }
        match json::from_json_validating(schema, &text, |_| ()) {
            Ok((_, Err(problems), ())) => prop_assert!(!problems.is_empty()),
            Ok(_) => {}
            Err(e) => proper(&e)?,
        }
    }

    /// JSON the check lets through is JSON; and any text is checked without a panic.
    #[test]
    fn checked_json_is_json(value in efb_fuzz::json::value(), mutations in mutations()) {
        let text = mutate(&value.to_string(), &mutations);
        if check_json(&text).is_ok() {
            prop_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), "{}", text);
        }
    }

    /// Configuration input of either format: read into a tree or refused, never a panic.
    #[test]
    fn any_input_is_read_or_refused(tree in model::tree(4), mutations in mutations(), json in any::<bool>()) {
        let schema = schema();
        let text = if json {
            compact(&tree)
        } else {
            setlines::render_tree(schema, &tree).join("\n")
        };
        let text = mutate(&text, &mutations);
        let limit = Limit::mib(1, "--max-input-mib");
        match input::from_text("fuzz", text, &limit) {
            Ok(content) => {
                if let Err(e) = content.tree(schema, Check::Types) {
                    proper(&e)?;
                }
            }
            Err(e) => prop_assert!(e.is_content(), "{e}"),
        }
    }

    /// The input of an operation (any JSON object, or none): checked into values, or each
    /// problem named by the parameter's path.
    #[test]
    fn operation_input_is_checked_or_refused_by_path(name in prop_oneof![Just("lookup-session".to_string()), Just("set-bypass-ecofilter-unit".to_string()), ".{0,12}"], value in efb_fuzz::json::value()) {
        match rpc::parse_input(schema(), &name, &value) {
            Ok(input) => prop_assert!(input.len() <= 64),
            Err(problems) => {
                prop_assert!(!problems.is_empty());
                prop_assert!(problems.iter().all(|p| p.path.starts_with('/')), "{problems:?}");
            }
        }
    }
}
