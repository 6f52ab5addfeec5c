//! The data-plane contract shared by the software target and the southbound compiler:
//! the P4Info of `p4/efb.p4` (embedded, protobuf text format), an index that resolves
//! names to ids, widths and match kinds, the names both sides use ([`names`]), the
//! expectations checked against the P4Info ([`contract`]), and the platform's port map
//! (front-panel port/lane -> device port), which the program's tables are keyed by.

pub mod contract;
pub mod device_config;
mod error;
mod index;
pub mod names;
pub mod port_map;
mod text;

pub use error::P4InfoError;
pub use index::{
    ActionInfo, ActionProfileInfo, ActionScope, CounterInfo, FieldInfo, MatchKind, P4InfoIndex,
    PacketMetadataInfo, ParamInfo, RegisterInfo, TableInfo,
};
pub use port_map::{PortMap, PortMapError, PortName};
pub use text::{p4info_from_text, p4info_to_text};

use p4runtime_proto::p4::config::v1::P4Info;

/// The P4Info of `p4/efb.p4`, as shipped in the repository.
pub const P4INFO_TEXT: &str = include_str!("../../../p4/compiled/efb.p4info.txtpb");

/// The embedded P4Info, decoded.
pub fn p4info() -> Result<P4Info, P4InfoError> {
    p4info_from_text(P4INFO_TEXT)
}

/// The embedded P4Info, indexed.
pub fn index() -> Result<P4InfoIndex, P4InfoError> {
    P4InfoIndex::new(&p4info()?)
}
