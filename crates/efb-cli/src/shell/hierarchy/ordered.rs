//! Lists the user orders (a unit's pairs: their order is part of the balancing, and every
//! crossed balancer must list them alike). efbd keeps an entry where it was set, at the
//! end; so moving one (`insert`, or the new name of a `rename`) is sent as the entries
//! from the first one whose place changes deleted and set again in their new order, in
//! one edit.

use efb_yang::setlines::{self, quote_word};
use efb_yang::{DataPath, Segment};

use super::{Output, Result, Shell, broken_references, config_lists, fail, last_key, quoted_line};
use efb_yang::text::excerpt;

/// An entry's key and its set lines.
type Entry = (String, Vec<String>);

impl Shell {
    /// `insert PATH before|after NAME` (or `... before LIST NAME`, as Junos types it): the
    /// entry PATH names moves next to its sibling NAME.
    pub(in crate::shell) fn insert(&mut self, words: &[String]) -> Result<Output> {
        let Some(at) = words.iter().rposition(|w| w == "before" || w == "after") else {
            return fail(
                "usage: insert PATH before|after NAME, PATH naming an entry of an ordered list \
                 (e.g. insert ecofilter-balancer ecofilter-unit ef1 pair f1-b before f1-a)",
            );
        };
        let entry = self.list_entry("insert", &words[..at])?;
        let typed = format!("insert {}", excerpt(&quoted_line(&words[..at])));
        let Some(list) = entry.node() else {
            return fail(format!("{typed}: expected a list entry"));
        };
        let node = self.schema.node(list);
        if !node.user_ordered {
            return fail(format!(
                "{typed}: {} entries are kept in the order of their names; insert moves \
                 entries of a list the user orders ({})",
                node.name,
                ordered_lists(self.schema).join(", ")
            ));
        }
        let anchor = match &words[at + 1..] {
            [name] => name,
            [word, name] if *word == node.name => name,
            _ => {
                return fail(format!(
                    "{typed} {}: expected the {} to put it next to (NAME, or {} NAME)",
                    words[at], node.name, node.name
                ));
            }
        };
        let (prefix, entries) = self.siblings(&entry)?;
        let moved = last_key(&entry);
        let names = || {
            let names: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
            names.join(", ")
        };
        let Some(from) = entries.iter().position(|(k, _)| k == moved) else {
            return fail(format!("{typed}: no such entry in the candidate"));
        };
        if anchor == moved {
            return fail(format!("{typed}: an entry cannot move next to itself"));
        }
        let mut order = entries.clone();
        let taken = order.remove(from);
        let Some(to) = order.iter().position(|(k, _)| k == anchor) else {
            return fail(format!(
                "{typed} {}: no {} {} in the candidate; its {}s are, in order: {}",
                words[at],
                node.name,
                quote_word(anchor),
                node.name,
                names()
            ));
        };
        order.insert(if words[at] == "after" { to + 1 } else { to }, taken);
        let lines = reordered_lines(&prefix, &entries, &order);
        if lines.is_empty() {
            return Ok(Output::lines(vec![format!(
                "{} {} is already {} {}",
                node.name,
                quote_word(moved),
                words[at],
                quote_word(anchor)
            )]));
        }
        let reply = self.client().edit_lines(&lines.join("\n"))?;
        Ok(Output::lines(broken_references(&reply.broken)))
    }

    /// The lines of a rename: the old entry deleted, the new one set, in a user-ordered
    /// list at the old one's place.
    pub(super) fn rename_lines(
        &mut self,
        from: &DataPath,
        to: &DataPath,
        moved: Vec<String>,
    ) -> Result<Vec<String>> {
        let list = from.node().filter(|id| self.schema.node(*id).user_ordered);
        let delete = format!("delete {}", setlines::words(self.schema, from));
        if list.is_none() {
            return Ok(std::iter::once(delete).chain(moved).collect());
        }
        let (prefix, entries) = self.siblings(from)?;
        let old = last_key(from);
        let order: Vec<Entry> = entries
            .iter()
            .map(|(key, lines)| {
                if key == old {
                    (last_key(to).to_string(), moved.clone())
                } else {
                    (key.clone(), lines.clone())
                }
            })
            .collect();
        Ok(reordered_lines(&prefix, &entries, &order))
    }

    /// `set PATH-TO-LIST ` and the entries of the list `entry` belongs to, in order.
    fn siblings(&mut self, entry: &DataPath) -> Result<(String, Vec<Entry>)> {
        let Some(list) = entry.node() else {
            return fail("expected a list entry");
        };
        let lines = self.entry_lines(&entry.parent())?;
        let prefix = format!(
            "set {} ",
            setlines::words(self.schema, &entry.parent().child(Segment::new(list)))
        );
        let entries = entries_in_order(&lines, &prefix);
        Ok((prefix, entries))
    }
}

/// The lines that turn the `old` order into the `new` one: from the first place where they
/// differ on, every old entry deleted and every new one set again.
fn reordered_lines(prefix: &str, old: &[Entry], new: &[Entry]) -> Vec<String> {
    let first = old
        .iter()
        .zip(new)
        .position(|(a, b)| a.0 != b.0)
        .unwrap_or(old.len().min(new.len()));
    let deletes = old[first..]
        .iter()
        .map(|(key, _)| format!("delete {}{}", &prefix[4..], quote_word(key)));
    let sets = new[first..]
        .iter()
        .flat_map(|(_, lines)| lines.iter().cloned());
    deletes.chain(sets).collect()
}

/// The entries of a list in the lines of its parent, in their order, with their lines.
fn entries_in_order(lines: &[String], prefix: &str) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    for line in lines {
        let Some(rest) = line.strip_prefix(prefix) else {
            continue;
        };
        let Some(key) = setlines::split_words(rest)
            .ok()
            .and_then(|w| w.into_iter().next())
        else {
            continue;
        };
        match entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, entry)) => entry.push(line.clone()),
            None => entries.push((key, vec![line.clone()])),
        }
    }
    entries
}

/// `ecofilter-balancer ecofilter-unit pair`: the lists whose entries the user orders.
fn ordered_lists(schema: &efb_yang::Schema) -> Vec<String> {
    config_lists(schema, |list| schema.node(list).user_ordered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str) -> Entry {
        (key.to_string(), vec![format!("set l x {key} a 1")])
    }

    #[test]
    fn entries_keep_their_order_and_lines() {
        let parent: Vec<String> = [
            "set u ef1 cores 4",
            "set u ef1 pair b lan-port p1",
            "set u ef1 pair b wan-port p2",
            "set u ef1 pair \"a x\" lan-port p3",
        ]
        .map(String::from)
        .to_vec();
        let entries = entries_in_order(&parent, "set u ef1 pair ");
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a x"]);
        assert_eq!(entries[0].1.len(), 2);
    }

    #[test]
    fn only_entries_from_the_first_moved_place_on_are_set_again() {
        let old = [entry("a"), entry("b"), entry("c"), entry("d")];
        let new = [entry("a"), entry("c"), entry("b"), entry("d")];
        assert_eq!(
            reordered_lines("set l x ", &old, &new),
            [
                "delete l x b",
                "delete l x c",
                "delete l x d",
                "set l x c a 1",
                "set l x b a 1",
                "set l x d a 1",
            ]
        );
        assert!(reordered_lines("set l x ", &old, &old).is_empty());
    }
}
