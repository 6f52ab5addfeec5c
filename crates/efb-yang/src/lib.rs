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
pub mod digest;
mod error;
pub mod explain;
pub mod inactive;
pub mod input;
pub mod json;
mod json_syntax;
mod ly;
pub mod path;
mod problem;
pub mod protocols;
pub mod rpc;
pub mod schema;
pub mod setlines;
pub mod text;
pub mod tree;
pub mod validate;
mod value;

pub use diff::{Change, RecordKey};
pub use error::Error;
pub use ly::{BaseType, EnumItem, TypeInfo};
pub use path::{DataPath, Segment};
pub use problem::Problem;
pub use schema::{JsonKind, NodeKind, Schema, SchemaId, SchemaNodeInfo};
pub use tree::{Child, DataTree, EditError, Inner, Keys, LeafList, List, NodeRef, Value};
