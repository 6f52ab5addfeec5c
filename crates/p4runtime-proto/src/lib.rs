//! The P4Runtime wire definitions, one crate for both ends (the software target and the
//! driver), generated from our transcription in `proto/` (P4Runtime v1.4), with Stratum's
//! Tofino device config (`BfPipelineConfig`), the `p4_device_config` a real switch takes.

#![allow(clippy::all, clippy::pedantic, missing_docs)]

pub mod google {
    pub mod rpc {
        include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
    }
}

pub mod p4 {
    pub mod v1 {
        include!(concat!(env!("OUT_DIR"), "/p4.v1.rs"));
    }
    pub mod config {
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/p4.config.v1.rs"));
        }
    }
}

/// Stratum's device config for Tofino: what `p4_device_config` carries to stratum-bfrt.
pub mod stratum {
    pub mod hal {
        pub mod barefoot {
            include!(concat!(env!("OUT_DIR"), "/stratum.hal.barefoot.rs"));
        }
    }
}

/// The encoded `FileDescriptorSet` of every file above (and google/protobuf/any.proto),
/// for reflection: parsing the P4Info text format, printing messages as text.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/p4runtime_descriptor.bin"));

/// The version of the P4Runtime API these definitions correspond to.
pub const P4RUNTIME_API_VERSION: &str = "1.4.1";
