//! Generates gNMI from proto/ at build time (no protoc on the machine), and reads the gNMI
//! service version from the `gnmi_service` file option so that Capabilities reports exactly
//! what the transcribed file says.

use std::path::PathBuf;

const FILES: &[&str] = &["gnmi/gnmi.proto", "gnmi_ext/gnmi_ext.proto"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let proto_root = manifest.join("../../proto").canonicalize()?;
    for file in FILES {
        println!("cargo:rerun-if-changed={}", proto_root.join(file).display());
    }
    let text = std::fs::read_to_string(proto_root.join(FILES[0]))?;
    let version = service_version(&text).ok_or("gnmi.proto has no `option (gnmi_service)`")?;
    println!("cargo:rustc-env=GNMI_SERVICE_VERSION={version}");
    let fds = protox::compile(FILES, [&proto_root])?;
    // The same descriptors, imports included, for gRPC server reflection (grpcurl).
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("gnmi_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}

/// `option (gnmi_service) = "0.10.0";` -> `0.10.0`
fn service_version(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("option (gnmi_service)")?;
        let value = rest.trim().strip_prefix('=')?.trim().strip_suffix(';')?;
        Some(value.trim().trim_matches('"').to_string())
    })
}
