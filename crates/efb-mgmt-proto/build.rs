//! Generates the management API from proto/ at build time (no protoc on the machine).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = "../../proto";
    let file = "efb/mgmt/v1/mgmt.proto";
    println!("cargo:rerun-if-changed={proto_dir}/{file}");
    let descriptors = protox::compile([file], [proto_dir])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
