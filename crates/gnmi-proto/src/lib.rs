//! gNMI and its extensions, generated from `proto/gnmi/gnmi.proto` and
//! `proto/gnmi_ext/gnmi_ext.proto` (our transcription of openconfig/gnmi): prost messages,
//! the tonic server trait and a client.

#![allow(clippy::all, clippy::pedantic)]

pub mod gnmi {
    tonic::include_proto!("gnmi");
}

pub mod gnmi_ext {
    tonic::include_proto!("gnmi_ext");
}

/// The gNMI service version of the transcribed `gnmi.proto` (its `gnmi_service` option).
pub const GNMI_VERSION: &str = env!("GNMI_SERVICE_VERSION");

/// The file descriptor set of gnmi.proto and gnmi_ext.proto with everything they import,
/// as protox compiled them: what gRPC server reflection serves.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/gnmi_descriptor.bin"));
