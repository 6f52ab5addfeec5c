//! The index's nodes: what the data tree, JSON, set lines, the shell and gNMI read of
//! each data-bearing node of the schema.

use crate::ly::TypeInfo;

use crate::value::JsonKind;

use super::types::{describe_type, effective_base};

/// Index of a node in the schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SchemaId(pub(crate) u32);

impl SchemaId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// Kinds of data-bearing schema nodes. Choices and cases are not data nodes: their children
/// appear directly under the enclosing node, with [`SchemaNodeInfo::cases`] recording where
/// they came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Container,
    List,
    Leaf,
    LeafList,
    Rpc,
    Input,
    Output,
    Notification,
}

/// A choice/case a node sits in: nodes of different cases of one choice exclude each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseOf {
    /// Schema path of the choice (unique within the module).
    pub choice: String,
    pub case: String,
}

/// One data-bearing node of the schema.
#[derive(Clone, Debug)]
pub struct SchemaNodeInfo {
    pub id: SchemaId,
    pub name: String,
    pub module: String,
    pub kind: NodeKind,
    /// Configuration (`config true`) or state.
    pub config: bool,
    pub parent: Option<SchemaId>,
    /// Data children in schema order, choices and cases flattened.
    pub children: Vec<SchemaId>,
    /// Key leaves of a list, in key order.
    pub keys: Vec<SchemaId>,
    pub is_key: bool,
    pub user_ordered: bool,
    pub mandatory: bool,
    /// Canonical default of a leaf.
    pub default: Option<String>,
    pub description: String,
    pub units: Option<String>,
    /// Choices and cases between this node and its data parent, outermost first.
    pub cases: Vec<CaseOf>,
    pub leaf_type: Option<TypeInfo>,
    /// Descendant paths in libyang's data form, without predicates: `/ecofilter-balancer:ports/port/mtu`.
    pub schema_path: String,
    /// Default case of each choice directly under this node: (choice path, case name).
    pub default_cases: Vec<CaseOf>,
    /// Has `must` or `when` statements (their XPath may look anywhere in the data).
    pub constrained: bool,
    /// A list with `min-elements`, `max-elements` or `unique`: constraints over all entries.
    pub bounded: bool,
}

impl SchemaNodeInfo {
    pub fn is_leaf(&self) -> bool {
        self.kind == NodeKind::Leaf
    }

    pub fn is_inner(&self) -> bool {
        matches!(
            self.kind,
            NodeKind::Container
                | NodeKind::List
                | NodeKind::Rpc
                | NodeKind::Input
                | NodeKind::Output
                | NodeKind::Notification
        )
    }

    /// JSON encoding of this leaf's values when the type alone decides it.
    pub fn json_kind(&self) -> JsonKind {
        match &self.leaf_type {
            Some(t) => JsonKind::of(effective_base(t)),
            None => JsonKind::String,
        }
    }

    /// A short phrase saying what values the leaf accepts, for error messages and help.
    pub fn accepts(&self) -> String {
        match &self.leaf_type {
            Some(t) => describe_type(t),
            None => String::new(),
        }
    }
}
