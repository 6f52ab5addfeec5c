//! The management API between the shell and the daemon, generated from
//! `proto/efb/mgmt/v1/mgmt.proto`.

#![allow(clippy::all, clippy::pedantic)]

pub mod v1 {
    tonic::include_proto!("efb.mgmt.v1");
}

/// The file descriptor set of mgmt.proto, as protox compiled it: what efbd's guard reads to
/// tell what a request decodes to.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/mgmt_descriptor.bin"));
