//! Configuration kept but not applied: Junos's `deactivate` and `activate`. A deactivated
//! node leaves the configuration tree, so validation, the chip, gNMI and the hash never see
//! it, and is kept here with the path it came from. `activate` merges it back; an entry of
//! a list the user orders (a unit's pairs, whose order is part of the balancing) goes back
//! after the entry it followed. What is typed at or below an inactive node edits it where
//! it is kept, as in Junos; a delete there deletes it for good.

use serde::{Deserialize, Serialize};

use crate::json::{self, PrintOptions};
use crate::path::{DataPath, Segment};
use crate::schema::Schema;
use crate::setlines;
use crate::tree::{DataTree, EditError, NodeRef};
use crate::{Error, Value};

/// The inactive nodes of one configuration, in the order they were deactivated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inactive {
    nodes: Vec<Deactivated>,
}

/// One deactivated node.
#[derive(Clone, Debug, PartialEq)]
struct Deactivated {
    path: DataPath,
    /// The node with its ancestors (and their keys), as it was taken out.
    data: DataTree,
    place: Place,
}

/// Where an entry goes back to in its list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Place {
    /// Not in a list the user orders: wherever the list sorts it.
    Sorted,
    First,
    /// After the entry with these keys (last if it is gone).
    After(Vec<String>),
}

/// How a configuration's inactive nodes are written down: a JSON array of these.
#[derive(Serialize, Deserialize)]
struct Stored {
    path: String,
    data: serde_json::Value,
    place: Place,
}

impl Inactive {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The inactive nodes' paths, in the order they were deactivated.
    pub fn paths(&self) -> impl Iterator<Item = &DataPath> {
        self.nodes.iter().map(|n| &n.path)
    }

    /// Takes the node at `path` out of `tree` and keeps it.
    pub fn deactivate(
        &mut self,
        schema: &Schema,
        tree: &mut DataTree,
        path: &DataPath,
    ) -> Result<(), EditError> {
        let Some(id) = path.node() else {
            return Err(invalid(schema, path, "deactivate takes a path"));
        };
        if schema.node(id).is_key {
            return Err(invalid(
                schema,
                path,
                "a key cannot be deactivated; deactivate the entry",
            ));
        }
        if !tree.contains(schema, path) {
            return Err(match self.holding(path) {
                Some(node) => invalid(
                    schema,
                    path,
                    &format!(
                        "already inactive ({} is)",
                        setlines::words(schema, &node.path)
                    ),
                ),
                None => EditError::Missing(path.display(schema)),
            });
        }
        let place = place_in_list(schema, tree, path);
        let data = tree.subtree(path);
        tree.delete(schema, path)?;
        self.nodes.push(Deactivated {
            path: path.clone(),
            data,
            place,
        });
        Ok(())
    }

    /// Puts the node deactivated at `path` back into `tree`.
    pub fn activate(
        &mut self,
        schema: &Schema,
        tree: &mut DataTree,
        path: &DataPath,
    ) -> Result<(), EditError> {
        let Some(at) = self.nodes.iter().position(|n| n.path == *path) else {
            let message = match self.holding(path) {
                Some(node) => format!(
                    "inside inactive {}: activate that",
                    setlines::words(schema, &node.path)
                ),
                None => "not inactive".to_string(),
            };
            return Err(invalid(schema, path, &message));
        };
        let node = self.nodes.remove(at);
        node.put_back(schema, tree);
        Ok(())
    }

    /// After a `set`: what it made at or below an inactive node's path moves into that node
    /// (the set edits the inactive node, which stays inactive).
    pub fn absorb(&mut self, schema: &Schema, tree: &mut DataTree) {
        for node in &mut self.nodes {
            if tree.contains(schema, &node.path) {
                let part = tree.subtree(&node.path);
                tree.remove(&node.path);
                node.data.merge(schema, &part);
            }
        }
    }

    /// `delete`: below an inactive node, from that node; elsewhere from `tree`, with every
    /// inactive node at or below `path`. An error when neither holds anything there.
    pub fn delete(
        &mut self,
        schema: &Schema,
        tree: &mut DataTree,
        path: &DataPath,
    ) -> Result<(), EditError> {
        if let Some(node) = self
            .nodes
            .iter_mut()
            .find(|n| n.path.contains(path) && n.path != *path)
        {
            return node.data.delete(schema, path);
        }
        let before = self.nodes.len();
        self.nodes.retain(|n| !path.contains(&n.path));
        let forgot = self.nodes.len() < before;
        match tree.delete(schema, path) {
            Err(EditError::Missing(_)) if forgot => Ok(()),
            result => result,
        }
    }

    /// `tree` with every inactive node back in place: the configuration as written.
    pub fn whole(&self, schema: &Schema, tree: &DataTree) -> DataTree {
        let mut whole = tree.clone();
        // Newest first: a node deactivated inside one deactivated later goes back into it.
        for node in self.nodes.iter().rev() {
            node.put_back(schema, &mut whole);
        }
        whole
    }

    /// The configuration as set lines that make it again: the whole tree's, then one
    /// `deactivate` line per inactive node.
    pub fn set_lines(&self, schema: &Schema, tree: &DataTree) -> Vec<String> {
        let mut lines = setlines::render_tree(schema, &self.whole(schema, tree));
        lines.extend(self.deactivate_lines(schema));
        lines
    }

    /// `deactivate PATH` for each inactive node.
    pub fn deactivate_lines(&self, schema: &Schema) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("deactivate {}", setlines::words(schema, &n.path)))
            .collect()
    }

    /// The nodes inactive in `new` and not in `old` (deactivated), and those inactive in
    /// `old` only (activated or deleted).
    pub fn changes<'a>(
        old: &'a Inactive,
        new: &'a Inactive,
    ) -> (Vec<&'a DataPath>, Vec<&'a DataPath>) {
        let only = |a: &'a Inactive, b: &Inactive| {
            a.paths()
                .filter(|p| !b.paths().any(|q| q == *p))
                .collect::<Vec<_>>()
        };
        (only(new, old), only(old, new))
    }

    /// As it is stored (a JSON array; empty: `[]`).
    pub fn to_json(&self, schema: &Schema) -> String {
        let stored: Vec<Stored> = self
            .nodes
            .iter()
            .map(|n| Stored {
                path: n.path.display(schema),
                data: serde_json::from_str(&json::to_json(
                    schema,
                    &n.data,
                    PrintOptions::default(),
                ))
                .unwrap_or_default(),
                place: n.place.clone(),
            })
            .collect();
        serde_json::to_string(&stored).unwrap_or_else(|_| "[]".into())
    }

    /// Reads what [`Self::to_json`] wrote.
    pub fn from_json(schema: &Schema, text: &str) -> Result<Inactive, Error> {
        let fail = |message: String| Error::Invalid(vec![crate::Problem::new("", message)]);
        let stored: Vec<Stored> =
            serde_json::from_str(text).map_err(|e| fail(format!("inactive nodes: {e}")))?;
        let nodes = stored
            .into_iter()
            .map(|s| {
                Ok(Deactivated {
                    path: DataPath::parse(schema, &s.path)?,
                    data: json::from_trusted_json(schema, &s.data.to_string())?,
                    place: s.place,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Inactive { nodes })
    }

    /// The inactive node `path` is at or below, if any.
    fn holding(&self, path: &DataPath) -> Option<&Deactivated> {
        self.nodes.iter().find(|n| n.path.contains(path))
    }
}

impl Deactivated {
    fn put_back(&self, schema: &Schema, tree: &mut DataTree) {
        tree.merge(schema, &self.data);
        let after: Option<Vec<Value>> = match &self.place {
            Place::Sorted => return,
            Place::First => None,
            Place::After(keys) => {
                let Some(list) = self.path.node() else {
                    return;
                };
                let key_ids = &schema.node(list).keys;
                let values: Option<Vec<Value>> = key_ids
                    .iter()
                    .zip(keys)
                    .map(|(id, k)| schema.value(*id, k).ok())
                    .collect();
                match values {
                    Some(v) => Some(v),
                    None => return,
                }
            }
        };
        tree.place_after(&self.path, after.as_deref());
    }
}

/// Where the entry `path` names sits in a list the user orders.
fn place_in_list(schema: &Schema, tree: &DataTree, path: &DataPath) -> Place {
    let (Some(list), Some(last)) = (path.node(), path.last()) else {
        return Place::Sorted;
    };
    if !schema.node(list).user_ordered || last.keys.is_empty() {
        return Place::Sorted;
    }
    let whole_list = path.parent().child(Segment::new(list));
    let Some(NodeRef::List(entries)) = tree.get(schema, &whole_list) else {
        return Place::Sorted;
    };
    let mut before = None;
    for keys in entries.keys() {
        if keys[..] == last.keys[..] {
            break;
        }
        before = Some(keys);
    }
    match before {
        None => Place::First,
        Some(keys) => Place::After(keys.iter().map(|v| v.as_str().to_string()).collect()),
    }
}

fn invalid(schema: &Schema, path: &DataPath, message: &str) -> EditError {
    EditError::Invalid {
        path: path.display(schema),
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SITE: &str = "set ports port p1 number 1 speed 100g
set ecofilter-balancer flow web priority 10 match dst-port 443
set ecofilter-balancer flow web action bypass
set ecofilter-balancer flow dns priority 20 action bypass
set ecofilter-balancer ecofilter-unit ef1 pair a lan-port p1
set ecofilter-balancer ecofilter-unit ef1 pair b lan-port p1
set ecofilter-balancer ecofilter-unit ef1 pair c lan-port p1";

    fn site(schema: &Schema) -> (DataTree, Inactive) {
        let mut tree = DataTree::new();
        let mut inactive = Inactive::default();
        setlines::apply_lines_keeping(schema, &mut tree, &mut inactive, SITE).unwrap();
        (tree, inactive)
    }

    fn apply(schema: &Schema, tree: &mut DataTree, inactive: &mut Inactive, text: &str) {
        setlines::apply_lines_keeping(schema, tree, inactive, text).unwrap();
    }

    fn pairs(schema: &Schema, tree: &DataTree) -> Vec<String> {
        setlines::render_tree(schema, tree)
            .into_iter()
            .filter_map(|l| {
                let rest = l.strip_prefix("set ecofilter-balancer ecofilter-unit ef1 pair ")?;
                Some(rest.split(' ').next()?.to_string())
            })
            .collect()
    }

    #[test]
    fn a_deactivated_flow_is_kept_out_of_the_tree_and_written_back_as_lines() {
        let schema = Schema::load().unwrap();
        let (mut tree, mut inactive) = site(&schema);
        let written = tree.clone();
        apply(
            &schema,
            &mut tree,
            &mut inactive,
            "deactivate ecofilter-balancer flow web",
        );
        assert!(
            !setlines::render_tree(&schema, &tree)
                .iter()
                .any(|l| l.contains("flow web"))
        );
        assert_eq!(inactive.whole(&schema, &tree), written);
        let lines = inactive.set_lines(&schema, &tree);
        assert_eq!(
            lines.last().unwrap(),
            "deactivate ecofilter-balancer flow web"
        );
        // The lines make the same again.
        let (mut again, mut kept) = (DataTree::new(), Inactive::default());
        apply(&schema, &mut again, &mut kept, &lines.join("\n"));
        assert_eq!((&again, &kept), (&tree, &inactive));
        // Stored and read back.
        let stored = inactive.to_json(&schema);
        assert_eq!(Inactive::from_json(&schema, &stored).unwrap(), inactive);
        // Typed below it, a line edits it where it is kept; activate brings it back so.
        apply(
            &schema,
            &mut tree,
            &mut inactive,
            "set ecofilter-balancer flow web priority 11",
        );
        assert!(
            !setlines::render_tree(&schema, &tree)
                .iter()
                .any(|l| l.contains("flow web"))
        );
        apply(
            &schema,
            &mut tree,
            &mut inactive,
            "activate ecofilter-balancer flow web",
        );
        assert!(inactive.is_empty());
        let lines = setlines::render_tree(&schema, &tree);
        assert!(lines.contains(&"set ecofilter-balancer flow web priority 11".to_string()));
        assert!(lines.contains(&"set ecofilter-balancer flow web match dst-port 443".to_string()));
    }

    #[test]
    fn a_pair_goes_back_to_its_place() {
        let schema = Schema::load().unwrap();
        let (mut tree, mut inactive) = site(&schema);
        for pair in ["b", "a"] {
            let path = format!("ecofilter-balancer ecofilter-unit ef1 pair {pair}");
            apply(
                &schema,
                &mut tree,
                &mut inactive,
                &format!("deactivate {path}"),
            );
            assert!(!pairs(&schema, &tree).contains(&pair.to_string()));
            apply(
                &schema,
                &mut tree,
                &mut inactive,
                &format!("activate {path}"),
            );
            assert_eq!(pairs(&schema, &tree), ["a", "b", "c"]);
        }
    }

    #[test]
    fn what_cannot_be_done_is_refused_naming_why() {
        let schema = Schema::load().unwrap();
        let (mut tree, mut inactive) = site(&schema);
        let refused = |tree: &mut DataTree, inactive: &mut Inactive, line: &str| {
            setlines::apply_lines_keeping(&schema, tree, inactive, line)
                .unwrap_err()
                .to_string()
        };
        let said = refused(
            &mut tree,
            &mut inactive,
            "activate ecofilter-balancer flow web",
        );
        assert!(said.contains("not inactive"), "{said}");
        let said = refused(
            &mut tree,
            &mut inactive,
            "deactivate ecofilter-balancer flow nope",
        );
        assert!(said.contains("no such data"), "{said}");
        let said = refused(&mut tree, &mut inactive, "deactivate ports port p1 name");
        assert!(said.contains("a key cannot be deactivated"), "{said}");
        apply(
            &schema,
            &mut tree,
            &mut inactive,
            "deactivate ecofilter-balancer flow web",
        );
        let said = refused(
            &mut tree,
            &mut inactive,
            "activate ecofilter-balancer flow web priority",
        );
        assert!(
            said.contains("inside inactive ecofilter-balancer flow web"),
            "{said}"
        );
        // A delete of it, or of the list, deletes it for good.
        apply(
            &schema,
            &mut tree,
            &mut inactive,
            "delete ecofilter-balancer flow web match",
        );
        apply(
            &schema,
            &mut tree,
            &mut inactive,
            "delete ecofilter-balancer flow",
        );
        assert!(inactive.is_empty());
        let said = refused(&mut tree, &mut inactive, "delete ecofilter-balancer flow");
        assert!(said.contains("no such data"), "{said}");
    }
}
