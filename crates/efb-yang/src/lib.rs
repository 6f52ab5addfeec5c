//! The `ecofilter-balancer` YANG schema and the configuration data shaped by it.
//!
//! - [`Schema`]: the module embedded in the binary, loaded into libyang, indexed for Rust.
//! - [`DataTree`]: persistent configuration trees (cheap snapshots, diffs proportional to
//!   the change), edited by [`DataPath`].
//! - [`input`]: configuration from outside (files, API content): one reader, one verdict.
//! - [`json`]: RFC 7951 JSON out of our trees and, through libyang, into them.
//! - [`diff`]: path-level changes between two trees, and the records they are stored as.
//! - [`setlines`]: the shell's `set` / `delete` lines, both ways.
//! - [`validate`]: libyang validation of a whole tree or of the part a change touches.

pub mod compare;
pub mod diff;
pub mod explain;
pub mod input;
pub mod json;
mod ly;
pub mod path;
pub mod rpc;
pub mod schema;
pub mod setlines;
pub mod text;
pub mod tree;
pub mod validate;

pub use diff::{Change, RecordKey};
pub use ly::{BaseType, EnumItem, TypeInfo};
pub use path::{DataPath, Segment};
pub use schema::{JsonKind, NodeKind, Schema, SchemaId, SchemaNodeInfo};
pub use tree::{Child, DataTree, EditError, Inner, Keys, LeafList, List, NodeRef, Value};

/// One thing wrong with some data: where, and why.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Problem {
    /// Data path in libyang's form, e.g. `/ecofilter-balancer:ports/port[name='p1']/mtu`.
    pub path: String,
    pub message: String,
}

impl Problem {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The data (or the module) is not valid; each problem names its path.
    #[error("{}", list_problems(.0))]
    Invalid(Vec<Problem>),
    /// The schema could not be loaded or indexed.
    #[error("YANG schema: {0}")]
    Schema(String),
}

impl Error {
    /// The problems of an `Invalid` error; a schema error as one problem.
    pub fn problems(&self) -> Vec<Problem> {
        match self {
            Error::Invalid(problems) => problems.clone(),
            Error::Schema(message) => vec![Problem::new("", message.clone())],
        }
    }
}

fn list_problems(problems: &[Problem]) -> String {
    text::problem_lines(problems, "")
}
