//! Operational commands that read (`get` in the grammar): the list or leaf at the
//! command's path, the entries named (names, `*` wildcards) kept, drawn as the command's
//! drawing or view says.

use efb_mgmt_proto::v1::{Datastore, Format};
use efb_yang::{DataPath, Segment};
use serde_json::Value as Json;

use super::{Output, Result, Shell, ShellError, fail, wildcard_match};
use crate::grammar::{Command, Drawing, Render};
use crate::view;

impl Shell {
    pub(super) fn run_get(&mut self, command: &Command, rest: &[String]) -> Result<Output> {
        let Some(get) = &command.get else {
            return fail("internal: not a get command");
        };
        // The grammar's path, read against the schema once; the request names it in
        // libyang's form.
        let at = DataPath::parse(self.schema, &get.path).map_err(|e| ShellError(e.to_string()))?;
        let mut render = command.render.as_ref();
        let mut rest = rest;
        if let Some((last, before)) = rest.split_last()
            && let Some(view) = command.switches.get(last)
        {
            render = Some(view);
            rest = before;
        }
        let selection = self.selection(command, &at, rest)?;
        let path = match &selection {
            Selection::One(entry) => entry.clone(),
            _ => at.clone(),
        };
        let datastore = match get.datastore.as_str() {
            "running" => Datastore::Running,
            _ => Datastore::Operational,
        };
        let text = self
            .client()
            .get(datastore, &path.display(self.schema), Format::Json, true)?;
        let answer: Json = serde_json::from_str(&text)
            .map_err(|e| ShellError(format!("efbd sent bad JSON: {e}")))?;
        let names = view::member_names(self.schema, &at);
        let mut doc = view::only_at(&answer, &names);
        view::natural_order(self.schema, &mut doc);
        if let Some(entries) = view::at_mut(&mut doc, &names).and_then(Json::as_array_mut) {
            self.select(command, &at, &selection, entries)?;
            if let Some(order) = &get.order {
                view::sort_by_order(entries, order);
            }
        }
        let found = view::at(&doc, &names);
        let lines = match render {
            Some(Render::Drawing(Drawing::Value)) => vec![
                found
                    .map(view::text)
                    .unwrap_or_else(|| view::UNKNOWN.to_string()),
            ],
            Some(Render::Drawing(Drawing::Json)) | None => {
                vec![serde_json::to_string_pretty(&doc).unwrap_or_default()]
            }
            Some(drawing) => {
                let entries: Vec<&Json> = found
                    .and_then(Json::as_array)
                    .map(|a| a.iter().collect())
                    .unwrap_or_default();
                if entries.is_empty() {
                    if let [name] = rest {
                        return Err(self.no_such_entry(command, &at, name));
                    }
                    vec![format!(
                        "(no {} configured)",
                        names.last().map(String::as_str).unwrap_or("entries")
                    )]
                } else {
                    let found = match drawing {
                        Render::View(name) => self.grammar.views.get(name),
                        _ => None,
                    };
                    match found {
                        Some(v) => view::render_view(v, &entries),
                        None => return fail(format!("no view {drawing}")),
                    }
                }
            }
        };
        Ok(Output::data(lines, doc))
    }

    /// The entries a `show` names: all of the list, one entry (read alone), or several
    /// names and `*` wildcards (`show ports p1 p2`, `show ports p9*`). Names without a
    /// wildcard are checked as the key's type says.
    fn selection(&self, command: &Command, list: &DataPath, names: &[String]) -> Result<Selection> {
        let arg = command.get.as_ref().and_then(|g| g.arg.as_deref());
        match (names, arg) {
            ([], _) => Ok(Selection::All),
            ([name], Some(_)) if !name.contains('*') => Ok(Selection::One(self.entry(list, name)?)),
            (_, Some(_)) => {
                for name in names.iter().filter(|n| !n.contains('*')) {
                    self.entry(list, name)?;
                }
                Ok(Selection::Some(names.to_vec()))
            }
            (_, None) => fail(format!(
                "{}: unexpected \"{}\"; expected nothing more",
                command.words,
                names.join(" ")
            )),
        }
    }

    /// Keeps the entries `selection` names; each name or wildcard must find one.
    fn select(
        &self,
        command: &Command,
        list: &DataPath,
        selection: &Selection,
        entries: &mut Vec<Json>,
    ) -> Result<()> {
        let Selection::Some(patterns) = selection else {
            return Ok(());
        };
        let key = list
            .node()
            .and_then(|id| self.schema.node(id).keys.first().copied())
            .map(|k| self.schema.node(k).name.clone())
            .unwrap_or_default();
        let key_of = |entry: &Json| entry.get(&key).map(view::text).unwrap_or_default();
        for pattern in patterns {
            if !entries.iter().any(|e| wildcard_match(pattern, &key_of(e))) {
                if !pattern.contains('*') {
                    return Err(self.no_such_entry(command, list, pattern));
                }
                let shown = efb_yang::text::excerpt(pattern);
                return fail(format!("{}: no entry matches {shown}", command.words));
            }
        }
        entries.retain(|e| patterns.iter().any(|p| wildcard_match(p, &key_of(e))));
        Ok(())
    }

    /// The entry of the list at `list` whose first key is `value`, the value checked.
    fn entry(&self, list: &DataPath, value: &str) -> Result<DataPath> {
        let found = list
            .node()
            .and_then(|id| Some((id, *self.schema.node(id).keys.first()?)));
        let Some((id, key)) = found else {
            return fail(format!("{} is not a list", list.display(self.schema)));
        };
        let checked = self.schema.value(key, value).map_err(|e| {
            ShellError(format!("{e}; expected {}", self.schema.node(key).accepts()))
        })?;
        Ok(list.parent().child(Segment::with_keys(id, vec![checked])))
    }
}

/// The entries of a list a `show` names.
enum Selection {
    All,
    One(DataPath),
    Some(Vec<String>),
}
