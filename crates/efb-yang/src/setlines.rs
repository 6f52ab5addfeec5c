//! The shell's configuration lines, derived from the schema:
//! `set ports port p4-2 number 4 lane 2 speed 10g`,
//! `set ecofilter-balancer flow bgp match dst-port 179 action bypass`,
//! `delete ecofilter-balancer link l2`.
//!
//! Words name schema nodes; a list name is followed by its key values; a leaf name by its
//! value (none for `empty` leaves). After a leaf, the next word may name a sibling, or a
//! node higher up to the nearest list entry, so one line can set several leaves.

use crate::diff::{self, Change};
use crate::inactive::Inactive;
use crate::path::{DataPath, Segment};
use crate::schema::{NodeKind, Schema, SchemaId};
use crate::text::excerpt;
use crate::tree::DataTree;
use crate::{Error, Problem, Value};

/// What a line does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Set,
    Delete,
    /// Keep the node, but not applied (Junos's `deactivate`): see [`crate::inactive`].
    Deactivate,
    /// Apply a deactivated node again.
    Activate,
}

impl Verb {
    /// Whether the words name nodes only (values after a leaf are not needed).
    fn names_only(self) -> bool {
        self != Verb::Set
    }
}

/// One parsed line: the verb, and each node it names with the value given for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub verb: Verb,
    pub targets: Vec<(DataPath, Option<Value>)>,
}

/// Renders changes as the lines that make them: `delete` lines first, then `set` lines.
pub fn render_changes(schema: &Schema, changes: &[Change]) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, change) in changes.iter().enumerate() {
        match change {
            Change::Delete { path } => lines.push(format!("delete {}", words(schema, path))),
            Change::Set { path, new, .. } => {
                let node = schema.node(path.node().unwrap_or(SchemaId(0)));
                let mut line = format!("set {}", words(schema, path));
                if node.kind == NodeKind::Leaf && node.json_kind() != crate::JsonKind::Empty {
                    line.push(' ');
                    line.push_str(&quote_word(new.as_str()));
                }
                lines.push(line);
            }
            Change::Create { path } => {
                if !created_by_its_content(changes, i) {
                    lines.push(format!("set {}", words(schema, path)));
                }
            }
        }
    }
    lines
}

/// An entry whose content follows is created by the content's lines, not one of its own.
fn created_by_its_content(changes: &[Change], i: usize) -> bool {
    let Some(Change::Create { path }) = changes.get(i) else {
        return false;
    };
    changes
        .get(i + 1)
        .is_some_and(|next| path.contains(next.path()) && next.path() != path)
}

/// A whole tree as `set` lines.
pub fn render_tree(schema: &Schema, tree: &DataTree) -> Vec<String> {
    render_changes(
        schema,
        &diff::diff_as_written(schema, &DataTree::new(), tree),
    )
}

/// The words naming a path: node names, with list keys (or the leaf-list item) after them.
pub fn words(schema: &Schema, path: &DataPath) -> String {
    let mut out: Vec<String> = Vec::new();
    for seg in &path.segments {
        let node = schema.node(seg.node);
        out.push(node.name.clone());
        for key in &seg.keys {
            out.push(quote_word(key.as_str()));
        }
    }
    out.join(" ")
}

/// A message with the libyang paths that start its lines (`  /ecofilter-balancer:ports/
/// port[name='p2']/mtu: ...`), or are the whole line (a list of paths), written as the
/// words a shell user types (`  ports port p2 mtu: ...`). Lines that do not start with a
/// path of this schema are kept as they are.
pub fn paths_in_words(schema: &Schema, message: &str) -> String {
    message
        .split('\n')
        .map(|line| {
            let body = line.trim_start();
            let indent = &line[..line.len() - body.len()];
            if !body.starts_with('/') {
                return line.to_string();
            }
            let (path, rest) = match body.split_once(": ") {
                Some((path, rest)) => (path, format!(": {rest}")),
                None => (body, String::new()),
            };
            match DataPath::parse(schema, path) {
                Ok(parsed) => format!("{indent}{}{rest}", words(schema, &parsed)),
                Err(_) => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Quotes a word when the shell would otherwise split or misread it (`?` too: at the end of
/// a line it asks for help). A line break in it is
/// written `\n` (`\r`), so that the word stays on its line: set lines are read line by
/// line, and a description may hold a newline.
pub fn quote_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| {
            !c.is_whitespace()
                && !matches!(c, '"' | '\'' | '\\' | '|' | ';' | '#' | '{' | '}' | '?')
        });
    if plain {
        return word.to_string();
    }
    let mut quoted = String::with_capacity(word.len() + 2);
    quoted.push('"');
    for c in word.chars() {
        match c {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// Quotes as [`split_words`] reads them, one character at a time: double quotes (a
/// backslash in them escapes the next character) or single quotes (no escapes). The
/// shell's other readers of a line (its pipes, its `?`) go by it too, so that a `|` or a
/// `?` in a quoted word is that word's, wherever the line is read.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quoting {
    open: Option<char>,
    escaped: bool,
}

impl Quoting {
    /// Reads `c`; true when it stands outside quotes (a quote mark belongs to its quote).
    pub fn outside(&mut self, c: char) -> bool {
        match self.open {
            Some('"') if self.escaped => self.escaped = false,
            Some('"') if c == '\\' => self.escaped = true,
            Some(q) if c == q => self.open = None,
            Some(_) => {}
            None if matches!(c, '"' | '\'') => self.open = Some(c),
            None => return true,
        }
        false
    }

    /// Whether a quote is open after what was read.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }
}

/// Whether `text` ends inside a quote (which [`split_words`] would find unterminated).
pub fn ends_inside_quote(text: &str) -> bool {
    let mut quoting = Quoting::default();
    text.chars().for_each(|c| {
        quoting.outside(c);
    });
    quoting.is_open()
}

/// A line whose last quote is never closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unterminated quote")]
pub struct UnterminatedQuote;

/// Splits a line into words: whitespace separates, double or single quotes group, a
/// backslash escapes the next character inside double quotes (`\n` and `\r` are a newline
/// and a carriage return, as [`quote_word`] writes them).
pub fn split_words(line: &str) -> Result<Vec<String>, UnterminatedQuote> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        let mut quoted = false;
        while let Some(&c) = chars.peek() {
            match c {
                c if c.is_whitespace() => break,
                '"' => {
                    quoted = true;
                    chars.next();
                    loop {
                        match chars.next() {
                            Some('"') => break,
                            Some('\\') => match chars.next() {
                                Some('n') => word.push('\n'),
                                Some('r') => word.push('\r'),
                                Some(e) => word.push(e),
                                None => return Err(UnterminatedQuote),
                            },
                            Some(c) => word.push(c),
                            None => return Err(UnterminatedQuote),
                        }
                    }
                }
                '\'' => {
                    quoted = true;
                    chars.next();
                    loop {
                        match chars.next() {
                            Some('\'') => break,
                            Some(c) => word.push(c),
                            None => return Err(UnterminatedQuote),
                        }
                    }
                }
                c => {
                    word.push(c);
                    chars.next();
                }
            }
        }
        if !word.is_empty() || quoted {
            words.push(word);
        }
    }
    Ok(words)
}

/// Parses one `set`, `delete`, `deactivate` or `activate` line (the verb included).
pub fn parse_line(schema: &Schema, line: &str) -> Result<Line, Error> {
    let fail = |message: String| Error::Invalid(vec![Problem::new("", message)]);
    let words = split_words(line).map_err(|e| fail(e.to_string()))?;
    let (verb, rest) = match words.split_first() {
        Some((v, rest)) if v == "set" => (Verb::Set, rest),
        Some((v, rest)) if v == "delete" => (Verb::Delete, rest),
        Some((v, rest)) if v == "deactivate" => (Verb::Deactivate, rest),
        Some((v, rest)) if v == "activate" => (Verb::Activate, rest),
        Some((v, _)) => {
            return Err(fail(format!(
                "unknown command \"{}\"; expected set, delete, deactivate or activate",
                excerpt(v)
            )));
        }
        None => return Err(fail("empty line".into())),
    };
    let targets = parse_words(schema, verb, rest)?;
    Ok(Line { verb, targets })
}

/// Parses the words after the verb.
pub fn parse_words(
    schema: &Schema,
    verb: Verb,
    words: &[String],
) -> Result<Vec<(DataPath, Option<Value>)>, Error> {
    let mut parser = WordParser::new(schema, verb, words, false);
    parser.run()?;
    Ok(parser.targets)
}

struct WordParser<'a> {
    schema: &'a Schema,
    verb: Verb,
    words: &'a [String],
    at: usize,
    path: DataPath,
    targets: Vec<(DataPath, Option<Value>)>,
    /// Completing: running out of words is not an error but says what may come next.
    completing: bool,
    expect: Option<Expect>,
}

/// What may come after some words of a line (for Tab and `?`).
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    /// A node name: one of `choices` (children of the current node and, after a leaf, of
    /// the nodes above it up to the list entry), with the path reached so far.
    Node {
        path: DataPath,
        choices: Vec<SchemaId>,
    },
    /// The value of `key`, a key of `list`; `path` ends at the list (without keys).
    Key {
        path: DataPath,
        list: SchemaId,
        key: SchemaId,
    },
    /// The value of a leaf or leaf-list item.
    Value { path: DataPath, leaf: SchemaId },
    /// Nothing more: the line is complete.
    End,
}

/// What may follow `words` (the words after the verb), everything before being valid.
pub fn expect_next(schema: &Schema, verb: Verb, words: &[String]) -> Result<Expect, Error> {
    let mut parser = WordParser::new(schema, verb, words, true);
    parser.run()?;
    Ok(parser.expect.unwrap_or(Expect::End))
}

impl<'a> WordParser<'a> {
    fn new(
        schema: &'a Schema,
        verb: Verb,
        words: &'a [String],
        completing: bool,
    ) -> WordParser<'a> {
        WordParser {
            schema,
            verb,
            words,
            at: 0,
            path: DataPath::root(),
            targets: Vec::new(),
            completing,
            expect: None,
        }
    }

    fn fail(&self, message: String) -> Error {
        let path = if self.path.is_root() {
            String::new()
        } else {
            words(self.schema, &self.path)
        };
        Error::Invalid(vec![Problem::new(path, message)])
    }

    fn run(&mut self) -> Result<(), Error> {
        if self.words.is_empty() {
            if self.completing {
                self.expect = Some(Expect::Node {
                    path: DataPath::root(),
                    choices: self.child_ids(None),
                });
                return Ok(());
            }
            return Err(self.fail(format!(
                "{} what? expected one of: {}",
                verb_word(self.verb),
                self.child_names(None)
            )));
        }
        while self.at < self.words.len() && self.expect.is_none() {
            let word = self.words[self.at].clone();
            let id = self.lookup(&word)?;
            self.at += 1;
            let node = self.schema.node(id);
            match node.kind {
                NodeKind::Container => {
                    self.path = self.path.child(Segment::new(id));
                    self.finish_if_last(None);
                }
                NodeKind::List => {
                    let keys = self.take_keys(id)?;
                    if self.expect.is_some() {
                        break;
                    }
                    self.path = self.path.child(Segment::with_keys(id, keys));
                    self.finish_if_last(None);
                }
                NodeKind::Leaf | NodeKind::LeafList => {
                    let value = self.take_leaf_value(id)?;
                    if self.expect.is_some() {
                        break;
                    }
                    let keys = match node.kind {
                        NodeKind::LeafList => value.clone().into_iter().collect(),
                        _ => Vec::new(),
                    };
                    self.targets
                        .push((self.path.child(Segment::with_keys(id, keys)), value));
                    self.expect_after_leaf();
                }
                _ => {
                    return Err(self.fail(format!(
                        "{} is an operation, not configuration",
                        excerpt(&word)
                    )));
                }
            }
        }
        Ok(())
    }

    fn finish_if_last(&mut self, value: Option<Value>) {
        if self.at == self.words.len() {
            self.targets.push((self.path.clone(), value));
            if self.completing {
                self.expect = Some(Expect::Node {
                    path: self.path.clone(),
                    choices: self.child_ids(self.path.node()),
                });
            }
        }
    }

    /// After a leaf and its value: a sibling, or a node higher up to the list entry.
    fn expect_after_leaf(&mut self) {
        if !self.completing || self.at < self.words.len() {
            return;
        }
        let mut choices = Vec::new();
        let mut context = self.path.clone();
        loop {
            for id in self.child_ids(context.node()) {
                if !choices.contains(&id) {
                    choices.push(id);
                }
            }
            let climbable = context
                .last()
                .is_some_and(|s| self.schema.node(s.node).kind != NodeKind::List);
            if !climbable {
                break;
            }
            context = context.parent();
        }
        self.expect = Some(Expect::Node {
            path: self.path.clone(),
            choices,
        });
    }

    /// Finds the node a word names: a child of the current node, or, after a leaf, of an
    /// ancestor up to the nearest list entry.
    fn lookup(&mut self, word: &str) -> Result<SchemaId, Error> {
        let mut context = self.path.clone();
        loop {
            let found = match context.node() {
                None => self
                    .schema
                    .root(word)
                    .filter(|id| self.schema.is_config_data(*id)),
                Some(parent) => self
                    .schema
                    .child(parent, word)
                    .filter(|id| self.schema.node(*id).config),
            };
            if let Some(id) = found {
                self.path = context;
                return Ok(id);
            }
            let can_climb = !self.targets.is_empty()
                && context
                    .last()
                    .is_some_and(|s| self.schema.node(s.node).kind != NodeKind::List);
            if !can_climb {
                return Err(self.fail(format!(
                    "unknown word \"{}\"; expected one of: {}",
                    excerpt(word),
                    self.child_names(self.path.node())
                )));
            }
            context = context.parent();
        }
    }

    fn child_names(&self, parent: Option<SchemaId>) -> String {
        self.child_ids(parent)
            .iter()
            .map(|id| self.schema.node(*id).name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn child_ids(&self, parent: Option<SchemaId>) -> Vec<SchemaId> {
        match parent {
            None => self
                .schema
                .roots()
                .iter()
                .copied()
                .filter(|id| self.schema.is_config_data(*id))
                .collect(),
            Some(p) => self
                .schema
                .node(p)
                .children
                .iter()
                .copied()
                .filter(|id| {
                    let n = self.schema.node(*id);
                    n.config && !n.is_key
                })
                .collect(),
        }
    }

    fn take_keys(&mut self, list: SchemaId) -> Result<Vec<Value>, Error> {
        let node = self.schema.node(list);
        let mut keys = Vec::new();
        for key in &node.keys {
            let key_node = self.schema.node(*key);
            let Some(word) = self.words.get(self.at) else {
                if self.completing {
                    self.expect = Some(Expect::Key {
                        path: self.path.child(Segment::with_keys(list, keys.clone())),
                        list,
                        key: *key,
                    });
                    return Ok(keys);
                }
                if self.verb.names_only() && keys.is_empty() {
                    // `delete ... flow` removes every entry.
                    return Ok(keys);
                }
                return Err(self.fail(format!(
                    "{} needs its {} ({})",
                    node.name,
                    key_node.name,
                    key_node.accepts()
                )));
            };
            let value = self.schema.value(*key, word).map_err(|e| {
                self.fail(format!(
                    "{} {} {e}; expected {}",
                    node.name,
                    key_node.name,
                    key_node.accepts()
                ))
            })?;
            keys.push(value);
            self.at += 1;
        }
        Ok(keys)
    }

    fn take_leaf_value(&mut self, leaf: SchemaId) -> Result<Option<Value>, Error> {
        let node = self.schema.node(leaf);
        if node.json_kind() == crate::JsonKind::Empty && node.kind == NodeKind::Leaf {
            return Ok(None);
        }
        let Some(word) = self.words.get(self.at) else {
            if self.completing {
                self.expect = Some(Expect::Value {
                    path: self.path.child(Segment::new(leaf)),
                    leaf,
                });
                return Ok(None);
            }
            if self.verb.names_only() {
                return Ok(None);
            }
            return Err(self.fail(format!("{} needs a value: {}", node.name, node.accepts())));
        };
        let value = self
            .schema
            .value(leaf, word)
            .map_err(|e| self.fail(format!("{} {e}; expected {}", node.name, node.accepts())))?;
        self.at += 1;
        Ok(Some(value))
    }
}

fn verb_word(verb: Verb) -> &'static str {
    match verb {
        Verb::Set => "set",
        Verb::Delete => "delete",
        Verb::Deactivate => "deactivate",
        Verb::Activate => "activate",
    }
}

/// Applies `set` / `delete` lines to a tree, stopping at the first line in error (the error
/// says which line, when there are several). Blank lines and `#` comments are skipped.
pub fn apply_lines(schema: &Schema, tree: &mut DataTree, text: &str) -> Result<usize, Error> {
    apply_lines_keeping(schema, tree, &mut Inactive::default(), text)
}

/// [`apply_lines`], keeping what `deactivate` lines take out of the tree in `inactive`
/// (and editing what is inactive there).
pub fn apply_lines_keeping(
    schema: &Schema,
    tree: &mut DataTree,
    inactive: &mut Inactive,
    text: &str,
) -> Result<usize, Error> {
    let mut applied = 0;
    let several = text.lines().nth(1).is_some();
    for (number, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at_line = |e: Error| {
            if !several {
                return e;
            }
            Error::Invalid(
                e.problems()
                    .into_iter()
                    .map(|p| Problem::new(p.path, format!("line {}: {}", number + 1, p.message)))
                    .collect(),
            )
        };
        let parsed = parse_line(schema, line).map_err(at_line)?;
        apply_line(schema, tree, inactive, &parsed).map_err(at_line)?;
        applied += 1;
    }
    Ok(applied)
}

/// Applies one parsed line.
pub fn apply_line(
    schema: &Schema,
    tree: &mut DataTree,
    inactive: &mut Inactive,
    line: &Line,
) -> Result<(), Error> {
    for (path, value) in &line.targets {
        match line.verb {
            Verb::Set => {
                tree.set(schema, path, value.clone())?;
                inactive.absorb(schema, tree);
            }
            Verb::Delete => inactive.delete(schema, tree, path)?,
            Verb::Deactivate => inactive.deactivate(schema, tree, path)?,
            Verb::Activate => inactive.activate(schema, tree, path)?,
        }
    }
    Ok(())
}
