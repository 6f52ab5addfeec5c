//! Junos's `show | compare`: the changes from one configuration to another under
//! `[edit PLACE]` headers, a `-` line for what goes and a `+` line for what comes, in the
//! curly-brace form `show configuration` prints; an entry added or removed whole is shown
//! whole. Walked from both trees side by side, so that a removed entry shows what it held.

use crate::diff::{holds_default, natural_key};
use crate::schema::{JsonKind, Schema, SchemaId};
use crate::setlines::quote_word;
use crate::tree::{Child, DataTree, Inner, Keys, LeafList, List, Value};

/// The changes from `old` to `new`, hierarchically; empty when they are the same.
pub fn hierarchical(schema: &Schema, old: &DataTree, new: &DataTree) -> Vec<String> {
    let mut render = Render {
        schema,
        place: Vec::new(),
        headed: None,
        lines: Vec::new(),
    };
    render.inner(old.root(), new.root());
    render.lines
}

struct Render<'a> {
    schema: &'a Schema,
    /// Words of the place being compared: `ecofilter-balancer flow dns`.
    place: Vec<String>,
    /// The place whose `[edit ...]` header was written last.
    headed: Option<Vec<String>>,
    lines: Vec<String>,
}

#[derive(Clone, Copy)]
enum Sign {
    Gone,
    Came,
}

impl Render<'_> {
    fn name(&self, id: SchemaId) -> &str {
        &self.schema.node(id).name
    }

    /// One line at the current place, after its header if the last line was elsewhere.
    fn line(&mut self, sign: Sign, depth: usize, text: &str) {
        if self.headed.as_ref() != Some(&self.place) {
            let header = if self.place.is_empty() {
                "[edit]".to_string()
            } else {
                format!("[edit {}]", self.place.join(" "))
            };
            self.lines.push(header);
            self.headed = Some(self.place.clone());
        }
        let mark = match sign {
            Sign::Gone => '-',
            Sign::Came => '+',
        };
        self.lines
            .push(format!("{mark}   {}{text}", "    ".repeat(depth)));
    }

    fn inner(&mut self, old: &Inner, new: &Inner) {
        if old == new {
            return;
        }
        for id in old.child_ids_with(new) {
            match (old.get(id), new.get(id)) {
                // A leaf written with the value in force anyway (its default) changes nothing.
                (Some(Child::Leaf(v)), None) | (None, Some(Child::Leaf(v)))
                    if holds_default(self.schema, id, v) => {}
                (Some(gone), None) => self.whole(Sign::Gone, 0, id, gone),
                (None, Some(came)) => self.whole(Sign::Came, 0, id, came),
                (Some(a), Some(b)) => self.child(id, a, b),
                (None, None) => {}
            }
        }
    }

    fn child(&mut self, id: SchemaId, old: &Child, new: &Child) {
        match (old, new) {
            (Child::Leaf(a), Child::Leaf(b)) if a != b => {
                let name = self.name(id).to_string();
                self.line(Sign::Gone, 0, &leaf(&name, a));
                self.line(Sign::Came, 0, &leaf(&name, b));
            }
            (Child::LeafList(a), Child::LeafList(b)) => self.items(id, a, b),
            (Child::Container(a), Child::Container(b)) => {
                self.place.push(self.name(id).to_string());
                self.inner(a, b);
                self.place.pop();
            }
            (Child::List(a), Child::List(b)) => self.list(id, a, b),
            (Child::Leaf(_), Child::Leaf(_)) => {}
            // Kinds cannot differ under one schema node; shown as a replacement if they do.
            (a, b) => {
                self.whole(Sign::Gone, 0, id, a);
                self.whole(Sign::Came, 0, id, b);
            }
        }
    }

    fn items(&mut self, id: SchemaId, old: &LeafList, new: &LeafList) {
        let name = self.name(id).to_string();
        for gone in old.iter().filter(|v| !new.iter().any(|n| n == *v)) {
            self.line(Sign::Gone, 0, &leaf(&name, gone));
        }
        for came in new.iter().filter(|v| !old.iter().any(|o| o == *v)) {
            self.line(Sign::Came, 0, &leaf(&name, came));
        }
    }

    /// Entries in both are compared inside (`[edit ... flow dns]`); one on one side only
    /// is shown whole.
    fn list(&mut self, id: SchemaId, old: &List, new: &List) {
        let name = self.name(id).to_string();
        // Removed entries first, then the new ones in their order; a list the system orders
        // is shown as people count (`p2` before `p10`).
        let mut keys: Vec<&Keys> = old.keys().filter(|k| new.get(k).is_none()).collect();
        keys.extend(new.keys());
        if !self.schema.node(id).user_ordered {
            keys.sort_by_cached_key(|keys| natural_key(keys));
        }
        for key in keys {
            match (old.get(key), new.get(key)) {
                (Some(a), Some(b)) => {
                    self.place.push(entry_words(&name, key));
                    self.inner(a, b);
                    self.place.pop();
                }
                (Some(gone), None) => self.entry(Sign::Gone, 0, id, key, gone),
                (None, Some(came)) => self.entry(Sign::Came, 0, id, key, came),
                (None, None) => {}
            }
        }
    }

    /// A node that is only on one side, with all it holds.
    fn whole(&mut self, sign: Sign, depth: usize, id: SchemaId, child: &Child) {
        let name = self.name(id).to_string();
        match child {
            Child::Leaf(v) => self.line(sign, depth, &leaf(&name, v)),
            Child::LeafList(items) => {
                for v in items.iter() {
                    self.line(sign, depth, &leaf(&name, v));
                }
            }
            Child::Container(inner) => {
                self.line(sign, depth, &format!("{name} {{"));
                self.contents(sign, depth + 1, inner);
                self.line(sign, depth, "}");
            }
            Child::List(list) => {
                let mut entries: Vec<(&Keys, &Inner)> = list.iter().collect();
                if !self.schema.node(id).user_ordered {
                    entries.sort_by_cached_key(|(keys, _)| natural_key(keys));
                }
                for (key, entry) in entries {
                    self.entry(sign, depth, id, key, entry);
                }
            }
        }
    }

    fn entry(&mut self, sign: Sign, depth: usize, id: SchemaId, key: &Keys, entry: &Inner) {
        let words = entry_words(self.name(id), key);
        let keys = &self.schema.node(id).keys;
        let held = entry.children().any(|(c, _)| !keys.contains(&c));
        if !held {
            return self.line(sign, depth, &format!("{words};"));
        }
        self.line(sign, depth, &format!("{words} {{"));
        self.contents(sign, depth + 1, entry);
        self.line(sign, depth, "}");
    }

    /// What a container or entry holds, keys aside (its header line names them).
    fn contents(&mut self, sign: Sign, depth: usize, inner: &Inner) {
        for (id, child) in inner.children() {
            if !self.schema.node(id).is_key {
                self.whole(sign, depth, id, child);
            }
        }
    }
}

fn leaf(name: &str, value: &Value) -> String {
    if value.as_str().is_empty() || value.kind() == JsonKind::Empty {
        return format!("{name};");
    }
    format!("{name} {};", quote_word(value.as_str()))
}

fn entry_words(name: &str, keys: &Keys) -> String {
    let mut words = vec![name.to_string()];
    words.extend(keys.iter().map(|k| quote_word(k.as_str())));
    words.join(" ")
}
