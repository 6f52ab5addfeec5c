//! Generates the management API from proto/ at build time (no protoc on the machine), and
//! keeps its descriptors: efbd reads them to tell what a request decodes to before it does.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = "../../proto";
    let file = "efb/mgmt/v1/mgmt.proto";
    println!("cargo:rerun-if-changed={proto_dir}/{file}");
    let descriptors = protox::compile([file], [proto_dir])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("mgmt_descriptor.bin"),
        prost::Message::encode_to_vec(&descriptors),
    )?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
