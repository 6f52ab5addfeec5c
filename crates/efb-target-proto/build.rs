//! Generates the target's control service (proto/efb/target/v1/control.proto) with protox
//! and tonic, client and server, without protoc.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let proto_root = manifest.join("../../proto").canonicalize()?;
    let file = "efb/target/v1/control.proto";
    println!("cargo:rerun-if-changed={}", proto_root.join(file).display());
    let fds = protox::compile([file], [&proto_root])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
