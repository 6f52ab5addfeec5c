//! The management API between the shell and the daemon, generated from
//! `proto/efb/mgmt/v1/mgmt.proto`.

#![allow(clippy::all, clippy::pedantic)]

pub mod v1 {
    tonic::include_proto!("efb.mgmt.v1");
}
