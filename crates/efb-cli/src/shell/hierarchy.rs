//! Junos's edit hierarchy: `edit PATH` moves the place configuration commands apply at
//! (said as `[edit ecofilter-balancer flow bgp]` above each prompt); `up`, `top` and `exit`
//! move back; `set`, `delete`, `show` and `edit` are relative to the place. `rename` and
//! `copy` move or duplicate a list entry, `annotate` sets an entry's description: each is
//! built here as set and delete lines sent to efbd as one edit, so it is all or nothing.

use efb_mgmt_proto::v1::{Datastore, Format};
use efb_yang::schema::{NodeKind, Schema, SchemaId};
use efb_yang::setlines::{self, Verb, quote_word};
use efb_yang::text::excerpt;
use efb_yang::{DataPath, Segment};

use super::{
    Flow, Output, Result, Shell, ShellError, broken_references, confirmed, fail, nothing_after,
};
use crate::complete::Mode;
use crate::config_commands::ConfigCommand;

mod ordered;

/// Places `exit` can go back to: enough for any real session, bounded for a script that
/// loops over `edit`.
const BACK_LIMIT: usize = 64;

/// Where configuration commands apply, and the places `edit` was typed at (for `exit`).
#[derive(Debug, Default)]
pub struct Place {
    path: DataPath,
    back: Vec<DataPath>,
}

impl Place {
    fn go(&mut self, path: DataPath) {
        // At the top `exit` leaves configuration mode: nothing to go back to.
        if path.is_root() {
            self.back.clear();
        }
        self.path = path;
    }

    pub(super) fn is_top(&self) -> bool {
        self.path.is_root()
    }

    /// `edit`: goes to `path`, and `exit` will come back here.
    fn descend(&mut self, path: DataPath) {
        let here = std::mem::replace(&mut self.path, path);
        if self.back.last() != Some(&here) {
            if self.back.len() >= BACK_LIMIT {
                self.back.remove(0);
            }
            self.back.push(here);
        }
        if self.path.is_root() {
            self.back.clear();
        }
    }

    /// `exit` below the top: where the last `edit` was typed. After `up` that may be the
    /// place itself, which would make `exit` do nothing: the one before, then.
    fn go_back(&mut self) {
        let mut to = self.back.pop().unwrap_or_default();
        while to == self.path {
            to = self.back.pop().unwrap_or_default();
        }
        self.go(to);
    }
}

impl Shell {
    /// `[edit]`, `[edit ecofilter-balancer flow bgp]`: shown above each configuration prompt.
    pub fn banner(&self) -> Option<String> {
        if self.mode != Mode::Configuration {
            return None;
        }
        let words = setlines::words(self.schema, &self.place.path);
        let text = if words.is_empty() {
            "[edit]".to_string()
        } else {
            format!("[edit {words}]")
        };
        // Names are others' text: shown escaped like any output.
        Some(efb_text_table::escape(&text).into_owned())
    }

    /// The words of the place, which Tab and `?` put before the words typed.
    pub fn place_words(&self) -> Vec<String> {
        plain_words(self.schema, &self.place.path)
    }

    /// Configuration mode starts at the top again.
    pub(super) fn forget_place_outside_configuration(&mut self) {
        if self.mode == Mode::Operational {
            self.place = Place::default();
        }
    }

    /// `exit` and `quit`: back to where the last `edit` was typed, or out of configuration
    /// mode at the top (`exit configuration-mode`: from anywhere).
    pub(super) fn exit(&mut self, typed: &[String], rest: &[String]) -> Result<(Output, Flow)> {
        match rest {
            [word] if word == "configuration-mode" => self.leave_configuration(),
            [] if !self.place.is_top() => {
                self.place.go_back();
                Ok((Output::none(), Flow::Continue))
            }
            [] => self.leave_configuration(),
            _ => nothing_after(typed, rest).map(|()| (Output::none(), Flow::Continue)),
        }
    }

    /// `edit PATH`: a container or a list entry below the place (an entry that does not
    /// exist yet is made by the first `set` there, as in Junos).
    pub(super) fn edit(&mut self, words: &[String]) -> Result<Output> {
        if words.is_empty() {
            return fail(
                "edit: expected where to go, e.g. edit ecofilter-balancer flow bgp (up, top and exit go back)",
            );
        }
        let path = self.level("edit", words)?;
        self.place.descend(path);
        Ok(Output::none())
    }

    /// `top`, or `top COMMAND`: one command run from the top (`top edit` goes there).
    pub(super) fn top(&mut self, rest: &[String]) -> Result<(Output, Flow)> {
        let Some((first, _)) = rest.split_first() else {
            self.place.go(DataPath::root());
            return Ok((Output::none(), Flow::Continue));
        };
        match ConfigCommand::parse(first) {
            Some(ConfigCommand::Edit) => {
                let path = self.at_top(|s| s.level("edit", &rest[1..]))?;
                self.place.descend(path);
                Ok((Output::none(), Flow::Continue))
            }
            Some(
                ConfigCommand::Top | ConfigCommand::Up | ConfigCommand::Exit | ConfigCommand::Quit,
            ) => fail(format!(
                "top {first}: top runs one command from the top (top set ..., top show ..., top edit ...), or goes there alone"
            )),
            _ => {
                let line = quoted_line(rest);
                self.at_top(|s| s.configuration(rest, &line))
            }
        }
    }

    /// `up [N]`: N levels up (1 by default); a list entry is one level with its list.
    pub(super) fn up(&mut self, rest: &[String]) -> Result<Output> {
        let levels = match rest {
            [] => 1,
            [n] => n.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                ShellError(format!(
                    "up {}: expected a number of levels, 1 or more",
                    excerpt(n)
                ))
            })?,
            _ => return fail("up takes one number of levels: up, up 2"),
        };
        let depth = self.place.path.segments.len();
        if depth == 0 {
            return fail("up: already at the top of the hierarchy ([edit])");
        }
        if levels > depth {
            return fail(format!(
                "up {levels}: [edit {}] is {depth} level{} below the top; up {depth} or top goes there",
                setlines::words(self.schema, &self.place.path),
                if depth == 1 { "" } else { "s" }
            ));
        }
        let mut path = self.place.path.clone();
        path.segments.truncate(depth - levels);
        self.place.go(path);
        Ok(Output::none())
    }

    /// `set` and `delete` below the top: the place's words go before those typed. `delete`
    /// alone deletes the place itself, once confirmed on a terminal (as Junos asks).
    pub(super) fn relative(&mut self, words: &[String]) -> Result<(Output, Flow)> {
        if words == ["delete"]
            && !self.scripted
            && !confirmed("Delete everything under this level")?
        {
            return Ok((
                Output::lines(vec!["not confirmed: nothing changed".into()]),
                Flow::Continue,
            ));
        }
        let mut all = vec![words[0].clone()];
        all.extend(self.place_words());
        all.extend_from_slice(&words[1..]);
        let line = quoted_line(&all);
        self.at_top(|s| s.configuration(&all, &line))
    }

    /// `show [PATH]` below the top: what is under the place, without the levels above it.
    pub(super) fn show_here(&mut self, words: &[String]) -> Result<Output> {
        let mut all = self.place_words();
        all.extend_from_slice(words);
        let mut output = self.show_tree(Datastore::Candidate, &all)?;
        output.lines = below(output.lines, self.place.path.segments.len());
        Ok(output)
    }

    /// Runs a command with the place at the top; the place stays where it was.
    fn at_top<T>(&mut self, run: impl FnOnce(&mut Shell) -> Result<T>) -> Result<T> {
        let here = std::mem::take(&mut self.place.path);
        let result = run(self);
        self.place.path = here;
        result
    }

    /// The node `words` name below the place (values after a leaf are allowed, so that the
    /// error can say it is a leaf).
    fn target(&self, command: &str, words: &[String]) -> Result<DataPath> {
        let mut all = self.place_words();
        all.extend_from_slice(words);
        if all.is_empty() {
            return fail(format!("{command}: expected a path"));
        }
        let targets = setlines::parse_words(self.schema, Verb::Delete, &all)
            .map_err(|e| ShellError(format!("{command}: {e}")))?;
        match targets.as_slice() {
            [(path, _)] => Ok(path.clone()),
            _ => fail(format!(
                "{command} {}: expected one path",
                excerpt(&quoted_line(words))
            )),
        }
    }

    /// A place `edit` can go to: a container or a list entry.
    fn level(&self, command: &str, words: &[String]) -> Result<DataPath> {
        let path = self.target(command, words)?;
        let Some(id) = path.node() else {
            return Ok(path);
        };
        let node = self.schema.node(id);
        let typed = format!("{command} {}", excerpt(&quoted_line(words)));
        match node.kind {
            NodeKind::Container => Ok(path),
            NodeKind::List if is_entry(&path) => Ok(path),
            NodeKind::List => fail(format!("{typed}: {}", needs_key(self.schema, id))),
            _ => fail(format!(
                "{typed}: {} is a leaf, not a level; {command} goes to a container or a list entry (set {} VALUE sets the leaf)",
                node.name, node.name
            )),
        }
    }

    /// `rename PATH to NAME` and `copy PATH to NAME`: a list entry under another key.
    /// References to the old name are not changed (Junos's rename does not either): the
    /// warnings say which ones a rename broke.
    pub(super) fn rename_or_copy(
        &mut self,
        which: ConfigCommand,
        words: &[String],
    ) -> Result<Output> {
        let command = which.word();
        let (from, to) = self.old_and_new(command, words)?;
        let old = self.entry_lines(&from)?;
        if old.is_empty() {
            return fail(format!(
                "{command} {}: no such entry in the candidate",
                setlines::words(self.schema, &from)
            ));
        }
        if !self.entry_lines(&to)?.is_empty() {
            return fail(format!(
                "{command}: {} already exists; choose a name not in use, or delete that entry first",
                setlines::words(self.schema, &to)
            ));
        }
        let moved = rekeyed(self.schema, &old, &from, &to)?;
        let lines = if which == ConfigCommand::Rename {
            self.rename_lines(&from, &to, moved)?
        } else {
            moved
        };
        let reply = self.client().edit_lines(&lines.join("\n"))?;
        let mut said = broken_references(&reply.broken);
        if which == ConfigCommand::Rename && !said.is_empty() {
            said.push(format!(
                "rename changes no reference: set them to {} (or rename it back)",
                quote_word(last_key(&to))
            ));
        }
        Ok(Output::lines(said))
    }

    /// The entry `PATH` names and the same entry under the name after `to` (`NAME`, or
    /// Junos's `LIST NAME`).
    fn old_and_new(&self, command: &str, words: &[String]) -> Result<(DataPath, DataPath)> {
        let usage = format!(
            "usage: {command} PATH to NAME, PATH naming a list entry (e.g. {command} ecofilter-balancer flow bgp to bgp2)"
        );
        let mut first_error = None;
        // A key may itself be "to": the first split that names an entry wins.
        for at in (1..words.len()).filter(|i| words[*i] == "to") {
            match self.list_entry(command, &words[..at]) {
                Ok(from) => return self.renamed(command, from, &words[at + 1..]),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Err(first_error.unwrap_or(ShellError(usage)))
    }

    /// A list entry of a list with one key, below the place.
    fn list_entry(&self, command: &str, words: &[String]) -> Result<DataPath> {
        let path = self.target(command, words)?;
        let typed = format!("{command} {}", excerpt(&quoted_line(words)));
        let Some(id) = path.node() else {
            return fail(format!("{typed}: expected a list entry"));
        };
        let node = self.schema.node(id);
        match node.kind {
            NodeKind::List if node.keys.len() != 1 => fail(format!(
                "{typed}: entries of {} have several keys; {command} takes entries with one",
                node.name
            )),
            NodeKind::List if is_entry(&path) => Ok(path),
            NodeKind::List => fail(format!("{typed}: {}", needs_key(self.schema, id))),
            _ => fail(format!(
                "{typed}: {} is not a list entry; {command} takes one, e.g. {command} ecofilter-balancer flow bgp to bgp2",
                node.name
            )),
        }
    }

    fn renamed(
        &self,
        command: &str,
        from: DataPath,
        new: &[String],
    ) -> Result<(DataPath, DataPath)> {
        let Some(list) = from.node() else {
            return fail(format!("{command}: expected a list entry"));
        };
        let node = self.schema.node(list);
        let key = node.keys[0];
        let name = match new {
            [name] => name,
            [word, name] if *word == node.name => name,
            _ => {
                return fail(format!(
                    "{command} {}: after to, expected the new {} of the {} (NAME, or {} NAME)",
                    setlines::words(self.schema, &from),
                    self.schema.node(key).name,
                    node.name,
                    node.name
                ));
            }
        };
        let value = self.schema.value(key, name).map_err(|e| {
            ShellError(format!(
                "{command} {} to: {e}; expected {}",
                setlines::words(self.schema, &from),
                self.schema.node(key).accepts()
            ))
        })?;
        let to = from.parent().child(Segment::with_keys(list, vec![value]));
        if to == from {
            return fail(format!(
                "{command} {}: the new name is the old one",
                setlines::words(self.schema, &from)
            ));
        }
        Ok((from, to))
    }

    /// The set lines of what the candidate has at `path` (none: it has nothing there).
    fn entry_lines(&mut self, path: &DataPath) -> Result<Vec<String>> {
        let text = self.client().get(
            Datastore::Candidate,
            &path.display(self.schema),
            Format::Set,
            false,
        )?;
        Ok(text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect())
    }

    /// `annotate PATH "TEXT"`: the model keeps no comments, so the text becomes the
    /// entry's description; `""` removes it. Below an entry, `annotate "TEXT"` is for the
    /// entry itself.
    pub(super) fn annotate(&mut self, words: &[String]) -> Result<Output> {
        let Some((text, path_words)) = words.split_last() else {
            return fail(
                "usage: annotate PATH \"TEXT\" (the text becomes the entry's description)",
            );
        };
        let entry = if path_words.is_empty() {
            self.place.path.clone()
        } else {
            self.target("annotate", path_words)?
        };
        let Some(description) = description_leaf(self.schema, &entry) else {
            return fail(self.not_annotatable(&entry, words));
        };
        let at = entry.child(Segment::new(description));
        let line = if text.is_empty() {
            if self.entry_lines(&at)?.is_empty() {
                return Ok(Output::none());
            }
            format!("delete {}", setlines::words(self.schema, &at))
        } else {
            format!(
                "set {} {}",
                setlines::words(self.schema, &at),
                quote_word(text)
            )
        };
        let reply = self.client().edit_lines(&line)?;
        Ok(Output::lines(broken_references(&reply.broken)))
    }

    fn not_annotatable(&self, entry: &DataPath, words: &[String]) -> String {
        let lists = annotatable_lists(self.schema).join(", ");
        // `annotate ports port p1` without the text: the words name an entry.
        let whole = self.target("annotate", words).ok();
        if whole.is_some_and(|p| description_leaf(self.schema, &p).is_some()) {
            return format!(
                "annotate {}: expected the text after the entry, in quotes",
                excerpt(&quoted_line(words))
            );
        }
        let named = if entry.is_root() {
            "the top".to_string()
        } else {
            setlines::words(self.schema, entry)
        };
        format!(
            "annotate: {named} cannot be annotated: the model keeps no comments, and annotate sets the description of an entry of: {lists}"
        )
    }
}

/// The words of a path as typed (keys unquoted).
fn plain_words(schema: &Schema, path: &DataPath) -> Vec<String> {
    let mut out = Vec::new();
    for segment in &path.segments {
        out.push(schema.node(segment.node).name.clone());
        out.extend(segment.keys.iter().map(|k| k.as_str().to_string()));
    }
    out
}

/// Words as one line the parser reads back as the same words.
fn quoted_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| quote_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_entry(path: &DataPath) -> bool {
    path.last().is_some_and(|s| !s.keys.is_empty())
}

fn last_key(path: &DataPath) -> &str {
    path.last()
        .and_then(|s| s.keys.first())
        .map_or("", |k| k.as_str())
}

/// `port needs its name (a string ...)`.
fn needs_key(schema: &Schema, list: SchemaId) -> String {
    let node = schema.node(list);
    match node.keys.first() {
        Some(key) => format!(
            "{} needs its {} ({})",
            node.name,
            schema.node(*key).name,
            schema.node(*key).accepts()
        ),
        None => format!("{} is a list without keys", node.name),
    }
}

/// The lines of an entry under its new key.
fn rekeyed(
    schema: &Schema,
    lines: &[String],
    from: &DataPath,
    to: &DataPath,
) -> Result<Vec<String>> {
    let old = format!("set {}", setlines::words(schema, from));
    let new = format!("set {}", setlines::words(schema, to));
    lines
        .iter()
        .map(|line| {
            if *line == old {
                return Ok(new.clone());
            }
            match line.strip_prefix(&old).and_then(|r| r.strip_prefix(' ')) {
                Some(rest) => Ok(format!("{new} {rest}")),
                None => fail(format!("efbd sent a line outside {old}: {line}")),
            }
        })
        .collect()
}

/// The `description` leaf of the entry `path` names, when its list has one.
fn description_leaf(schema: &Schema, path: &DataPath) -> Option<SchemaId> {
    let list = path.node().filter(|_| is_entry(path))?;
    schema
        .child(list, "description")
        .filter(|id| schema.node(*id).config && schema.node(*id).is_leaf())
}

/// `ports port, ecofilter-balancer flow, ...`: the lists whose entries have a description.
fn annotatable_lists(schema: &Schema) -> Vec<String> {
    config_lists(schema, |list| {
        schema
            .child(list, "description")
            .is_some_and(|d| schema.node(d).config)
    })
}

/// The configuration lists `keep` keeps, each as the words that name it.
fn config_lists(schema: &Schema, keep: impl Fn(SchemaId) -> bool) -> Vec<String> {
    schema
        .nodes()
        .filter(|n| n.kind == NodeKind::List && schema.is_config_data(n.id) && keep(n.id))
        .map(|n| {
            schema
                .lineage(n.id)
                .iter()
                .map(|id| schema.node(*id).name.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Lines of `show` at a place `depth` levels down without those levels: the opening lines
/// of the levels above, their closing braces, and their indentation.
fn below(lines: Vec<String>, depth: usize) -> Vec<String> {
    let framed = depth > 0
        && lines.len() >= 2 * depth
        && lines[..depth].iter().all(|l| l.ends_with('{'))
        && lines[lines.len() - depth..].iter().all(|l| l.trim() == "}");
    if !framed {
        return lines;
    }
    let pad = " ".repeat(4 * depth);
    lines[depth..lines.len() - depth]
        .iter()
        .map(|l| l.strip_prefix(&pad).unwrap_or(l.trim_start()).to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn show_below_a_place_drops_the_levels_above_it() {
        let shown = lines(
            "ecofilter-balancer {\n    flow bgp {\n        priority 10;\n        match {\n            dst-port 179;\n        }\n    }\n}",
        );
        assert_eq!(
            below(shown.clone(), 2),
            lines("priority 10;\nmatch {\n    dst-port 179;\n}")
        );
        assert_eq!(below(shown.clone(), 0), shown);
        assert!(below(Vec::new(), 2).is_empty(), "nothing there yet");
    }

    #[test]
    fn the_lists_with_a_description_can_be_annotated() {
        let schema = Schema::load().unwrap();
        let lists = annotatable_lists(&schema);
        for list in [
            "ports port",
            "ecofilter-balancer link",
            "ecofilter-balancer ecofilter-unit",
            "ecofilter-balancer ecofilter-unit pair",
            "ecofilter-balancer flow",
        ] {
            assert!(lists.contains(&list.to_string()), "{list}: {lists:?}");
        }
    }
}
