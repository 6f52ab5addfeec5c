//! Building the index from libyang's schema tree: choices and cases flattened, RPC input
//! and output made nodes of their own.

use std::collections::HashMap;

use yang2::schema::{SchemaNode, SchemaNodeKind};

use crate::ly;

use super::node::{CaseOf, NodeKind, SchemaId, SchemaNodeInfo};

#[derive(Default)]
pub(super) struct IndexBuilder {
    pub(super) nodes: Vec<SchemaNodeInfo>,
    pub(super) raw: Vec<usize>,
    pub(super) by_raw: HashMap<usize, SchemaId>,
}

impl IndexBuilder {
    pub(super) fn add_siblings<'a>(
        &mut self,
        siblings: impl Iterator<Item = SchemaNode<'a>>,
        parent: Option<SchemaId>,
        cases: &[CaseOf],
    ) -> Vec<SchemaId> {
        let mut ids = Vec::new();
        for node in siblings {
            match node.kind() {
                SchemaNodeKind::Choice => {
                    let choice = node.path(yang2::schema::SchemaPathFormat::LOG);
                    for case in node.children() {
                        let mut inner = cases.to_vec();
                        inner.push(CaseOf {
                            choice: choice.clone(),
                            case: case.name().to_string(),
                        });
                        // A shorthand case (a leaf directly in the choice) is its own case.
                        if case.kind() == SchemaNodeKind::Case {
                            ids.extend(self.add_siblings(case.children(), parent, &inner));
                        } else {
                            ids.extend(self.add_siblings(std::iter::once(case), parent, &inner));
                        }
                    }
                    if let (Some(parent), Some(default)) = (parent, node.default_case()) {
                        self.nodes[parent.index()].default_cases.push(CaseOf {
                            choice,
                            case: default.name().to_string(),
                        });
                    }
                }
                SchemaNodeKind::Case | SchemaNodeKind::AnyData | SchemaNodeKind::Action => {}
                _ => ids.push(self.add_node(&node, parent, cases)),
            }
        }
        ids
    }

    fn add_node(
        &mut self,
        node: &SchemaNode<'_>,
        parent: Option<SchemaId>,
        cases: &[CaseOf],
    ) -> SchemaId {
        let kind = match node.kind() {
            SchemaNodeKind::Container => NodeKind::Container,
            SchemaNodeKind::List => NodeKind::List,
            SchemaNodeKind::Leaf => NodeKind::Leaf,
            SchemaNodeKind::LeafList => NodeKind::LeafList,
            SchemaNodeKind::Rpc | SchemaNodeKind::Action => NodeKind::Rpc,
            SchemaNodeKind::Input => NodeKind::Input,
            SchemaNodeKind::Output => NodeKind::Output,
            _ => NodeKind::Notification,
        };
        let leaf_type = matches!(kind, NodeKind::Leaf | NodeKind::LeafList)
            .then(|| ly::leaf_type_info(node))
            .flatten();
        let in_operation = matches!(
            kind,
            NodeKind::Rpc | NodeKind::Input | NodeKind::Output | NodeKind::Notification
        ) || node.is_within_input()
            || node.is_within_output()
            || node.is_within_notification();
        let id = self.push(SchemaNodeInfo {
            id: SchemaId(0),
            name: node.name().to_string(),
            module: node.module().name().to_string(),
            kind,
            config: node.is_config() && !in_operation,
            parent,
            children: Vec::new(),
            keys: Vec::new(),
            is_key: node.is_list_key(),
            user_ordered: node.is_user_ordered(),
            mandatory: node.is_mandatory(),
            // yang2 reads the default without checking it exists: ask first.
            default: if kind == NodeKind::Leaf && node.has_default() {
                node.default_value_canonical().map(str::to_string)
            } else {
                None
            },
            description: node
                .description()
                .map(normalize_description)
                .unwrap_or_default(),
            units: node.units().map(str::to_string),
            cases: cases.to_vec(),
            leaf_type,
            schema_path: node.path(yang2::schema::SchemaPathFormat::DATA),
            default_cases: Vec::new(),
            constrained: node.musts().is_some_and(|m| m.count() > 0) || node.whens().count() > 0,
            bounded: kind == NodeKind::List
                && (node.min_elements().is_some()
                    || node.max_elements().is_some()
                    || ly::list_has_unique(node)),
        });
        self.raw[id.index()] = node.as_raw() as usize;
        self.by_raw.insert(node.as_raw() as usize, id);
        let children = match kind {
            NodeKind::Rpc => {
                let mut ids = Vec::new();
                if let Some((children, _)) = node.input() {
                    ids.push(self.add_operation_part(id, "input", NodeKind::Input, children));
                }
                if let Some((children, _)) = node.output() {
                    ids.push(self.add_operation_part(id, "output", NodeKind::Output, children));
                }
                ids
            }
            _ => self.add_siblings(node.children(), Some(id), &[]),
        };
        let keys = if kind == NodeKind::List {
            node.list_keys()
                .filter_map(|k| self.by_raw.get(&(k.as_raw() as usize)).copied())
                .collect()
        } else {
            Vec::new()
        };
        let entry = &mut self.nodes[id.index()];
        entry.children = children;
        entry.keys = keys;
        id
    }

    fn push(&mut self, mut info: SchemaNodeInfo) -> SchemaId {
        let id = SchemaId(self.nodes.len() as u32);
        info.id = id;
        self.nodes.push(info);
        self.raw.push(0);
        id
    }

    /// RPC input and output are not nodes libyang hands out; they are ours, holding the
    /// parameters as children.
    pub(super) fn add_operation_part<'a>(
        &mut self,
        rpc: SchemaId,
        name: &str,
        kind: NodeKind,
        children: impl Iterator<Item = SchemaNode<'a>>,
    ) -> SchemaId {
        let rpc_node = &self.nodes[rpc.index()];
        let id = self.push(SchemaNodeInfo {
            id: SchemaId(0),
            name: name.to_string(),
            module: rpc_node.module.clone(),
            kind,
            config: false,
            parent: Some(rpc),
            children: Vec::new(),
            keys: Vec::new(),
            is_key: false,
            user_ordered: false,
            mandatory: false,
            default: None,
            description: String::new(),
            units: None,
            cases: Vec::new(),
            leaf_type: None,
            schema_path: format!("{}/{name}", rpc_node.schema_path),
            default_cases: Vec::new(),
            constrained: false,
            bounded: false,
        });
        let children = self.add_siblings(children, Some(id), &[]);
        self.nodes[id.index()].children = children;
        id
    }
}

/// YANG descriptions are wrapped and indented in the module; the shell wants one paragraph.
fn normalize_description(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
