//! Paths and values from the schema: node names, list keys (live from the daemon), and a
//! leaf's values from its type (enums, booleans, references, protocol names).

use std::collections::{BTreeSet, HashSet};

use efb_yang::schema::{NodeKind, Schema, SchemaId};
use efb_yang::setlines::{self, Expect, Verb};
use efb_yang::{BaseType, TypeInfo};
use efb_yang::{DataPath, Segment};

use super::{Candidate, Completer, end, first_sentence};
use crate::protocol;

impl Completer<'_> {
    /// Schema-driven: node names, list keys, leaf values.
    pub(super) fn paths(&self, verb: Verb, words: &[String]) -> Vec<Candidate> {
        match setlines::expect_next(self.schema, verb, words) {
            Ok(Expect::Node { choices, .. }) => {
                let mut out: Vec<Candidate> =
                    choices.iter().map(|id| self.node_candidate(*id)).collect();
                if !words.is_empty() {
                    out.extend(end());
                }
                out
            }
            Ok(Expect::Key { path, key, .. }) => {
                let mut out = vec![self.placeholder_for(key)];
                out.extend(
                    self.keys_at(&path.display(self.schema), "")
                        .into_iter()
                        .map(|k| Candidate::word(k, "")),
                );
                out
            }
            Ok(Expect::Value { path, leaf }) => {
                let mut out = self.values(leaf);
                if is_port_use(self.schema, leaf) {
                    let used = self.ports_in_use(&path);
                    out.retain(|c| c.placeholder || !used.contains(&c.word));
                }
                out
            }
            Ok(Expect::End) => end(),
            Err(_) => Vec::new(),
        }
    }

    fn node_candidate(&self, id: SchemaId) -> Candidate {
        let node = self.schema.node(id);
        Candidate::word(node.name.clone(), first_sentence(&node.description))
    }

    fn placeholder_for(&self, id: SchemaId) -> Candidate {
        let node = self.schema.node(id);
        let accepts = match &node.units {
            Some(units) => format!("{}, in {units}", node.accepts()),
            None => node.accepts(),
        };
        let help = format!("{} ({accepts})", first_sentence(&node.description));
        Candidate::placeholder(format!("<{}>", node.name), help)
    }

    pub(super) fn values(&self, leaf: SchemaId) -> Vec<Candidate> {
        let node = self.schema.node(leaf);
        let Some(t) = &node.leaf_type else {
            return Vec::new();
        };
        if t.base == BaseType::Empty {
            return end();
        }
        if self.schema.is_protocol_leaf(leaf) {
            return protocol_values(node);
        }
        let mut out = vec![self.placeholder_for(leaf)];
        self.type_values(t, &mut out);
        out
    }

    fn type_values(&self, t: &TypeInfo, out: &mut Vec<Candidate>) {
        match t.base {
            BaseType::Enumeration => {
                for e in &t.enums {
                    out.push(Candidate::word(
                        e.name.clone(),
                        e.description
                            .as_deref()
                            .map(first_sentence)
                            .unwrap_or_default(),
                    ));
                }
            }
            BaseType::Bool => {
                out.push(Candidate::word("true", ""));
                out.push(Candidate::word("false", ""));
            }
            BaseType::LeafRef => {
                if let Some(list) = t.leafref_path.as_deref().and_then(leafref_list) {
                    out.extend(
                        self.keys_at(&list, "")
                            .into_iter()
                            .map(|k| Candidate::word(k, "")),
                    );
                }
            }
            BaseType::Union => {
                for member in &t.members {
                    self.type_values(member, out);
                }
            }
            _ => {}
        }
    }

    /// Keys from the daemon, as people count them (`show` lists them so too).
    pub(super) fn keys_at(&self, list_path: &str, prefix: &str) -> Vec<String> {
        let mut keys = self.keys.keys(list_path, prefix);
        keys.sort_by(|a, b| efb_text_table::natural_cmp(a, b));
        keys
    }
}

impl Completer<'_> {
    /// The ports the configuration's port uses name, except the one at `except` (the leaf
    /// being set keeps its own port on offer).
    fn ports_in_use(&self, except: &DataPath) -> HashSet<String> {
        let leaves: Vec<SchemaId> = self
            .schema
            .nodes()
            .filter(|n| is_port_use(self.schema, n.id))
            .map(|n| n.id)
            .collect();
        // The lists holding them (links, units), each read once.
        let lists: BTreeSet<String> = leaves
            .iter()
            .filter_map(|leaf| self.outermost_list(*leaf))
            .collect();
        let mut used = HashSet::new();
        for list in lists {
            for line in self.keys.set_lines(&list) {
                let Some(words) = line
                    .strip_prefix("set ")
                    .and_then(|rest| setlines::split_words(rest).ok())
                else {
                    continue;
                };
                let Ok(targets) = setlines::parse_words(self.schema, Verb::Set, &words) else {
                    continue;
                };
                for (path, value) in targets {
                    let is_use = path.node().is_some_and(|id| leaves.contains(&id));
                    if let Some(value) = value.filter(|_| is_use && path != *except) {
                        used.insert(value.as_str().to_string());
                    }
                }
            }
        }
        used
    }

    /// `/ecofilter-balancer:ecofilter-balancer/ecofilter-unit` for a pair's port.
    fn outermost_list(&self, leaf: SchemaId) -> Option<String> {
        let lineage = self.schema.lineage(leaf);
        let at = lineage
            .iter()
            .position(|id| self.schema.node(*id).kind == NodeKind::List)?;
        let path = lineage[..=at].iter().fold(DataPath::default(), |path, id| {
            path.child(Segment::new(*id))
        });
        Some(path.display(self.schema))
    }
}

/// A configuration leaf that refers to a port takes the port for itself: a port is used by
/// one link or one pair (the model's rule), so Tab offers only the free ports there.
fn is_port_use(schema: &Schema, leaf: SchemaId) -> bool {
    let node = schema.node(leaf);
    node.config
        && node
            .leaf_type
            .as_ref()
            .and_then(|t| t.leafref_path.as_deref())
            .and_then(leafref_list)
            .is_some_and(|list| list == PORTS)
}

/// The list of the configured ports, as a leafref to it names it.
const PORTS: &str = "/ecofilter-balancer:ports/port";

/// The value of an `ip-proto` leaf: a number, or the name of a common protocol.
fn protocol_values(node: &efb_yang::schema::SchemaNodeInfo) -> Vec<Candidate> {
    let mut out = vec![Candidate::placeholder(
        format!("<{}>", node.name),
        format!("IP protocol: {}", protocol::ACCEPTED),
    )];
    out.extend(
        protocol::PROTOCOLS
            .iter()
            .map(|(name, n, what)| Candidate::word(*name, format!("{n}: {what}"))),
    );
    out
}

/// `/efb:ports/efb:port/efb:name` -> `/ecofilter-balancer:ports/port`.
fn leafref_list(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let steps: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| s.rsplit(':').next().unwrap_or(s))
        .collect();
    let (_, list) = steps.split_last()?;
    let (first, others) = list.split_first()?;
    let mut text = format!("/{}:{first}", efb_yang::schema::MODULE_NAME);
    for step in others {
        text.push('/');
        text.push_str(step);
    }
    Some(text)
}
