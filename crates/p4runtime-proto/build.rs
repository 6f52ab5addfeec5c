//! Compiles the P4Runtime protos of `proto/` with protox (pure Rust: the machine has no
//! protoc) and generates prost messages and tonic client and server code from them.
//! The file descriptor set is kept too, so that tools can read the P4Info text format
//! through prost-reflect with exactly these definitions.

use std::path::PathBuf;

const FILES: &[&str] = &[
    "p4/v1/p4runtime.proto",
    "p4/v1/p4data.proto",
    "p4/config/v1/p4info.proto",
    "p4/config/v1/p4types.proto",
    "google/rpc/status.proto",
    "google/rpc/code.proto",
    "stratum/hal/lib/barefoot/bf.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let proto_root = manifest.join("../../proto").canonicalize()?;
    for file in FILES {
        println!("cargo:rerun-if-changed={}", proto_root.join(file).display());
    }
    let fds = protox::compile(FILES, [&proto_root])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("p4runtime_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
