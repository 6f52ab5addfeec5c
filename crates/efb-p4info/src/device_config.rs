//! The compiled program as Stratum on Tofino takes it: `p4_device_config` of
//! SetForwardingPipelineConfig is a serialized `BfPipelineConfig` (stratum's `bf.proto`)
//! holding the compiler's bfrt.json and, per pipeline profile, context.json and the chip
//! image tofino.bin. All of it is what `p4/compile.sh` wrote under `p4/compiled/`,
//! embedded here with the P4Info it belongs to.

use p4runtime_proto::stratum::hal::barefoot::{BfPipelineConfig, bf_pipeline_config::Profile};
use prost::Message;

/// The program's name in the compiler's output.
pub const PROGRAM_NAME: &str = "efb";

/// The pipeline profile: TNA's `Pipeline(...) pipe`, the same program on every pipe.
pub const PROFILE_NAME: &str = "pipe";

/// bfrt.json: BfRt names and ids of every table, action and counter.
pub const BFRT_JSON: &[u8] = include_bytes!("../../../p4/compiled/bfrt.json");

/// The pipe's context.json: where the compiler placed everything.
pub const CONTEXT_JSON: &[u8] = include_bytes!("../../../p4/compiled/pipe/context.json");

/// The pipe's chip image.
pub const TOFINO_BIN: &[u8] = include_bytes!("../../../p4/compiled/pipe/tofino.bin");

/// The embedded outputs as a `BfPipelineConfig`.
pub fn bf_pipeline_config() -> BfPipelineConfig {
    BfPipelineConfig {
        p4_name: PROGRAM_NAME.to_string(),
        bfruntime_info: BFRT_JSON.to_vec(),
        profiles: vec![Profile {
            profile_name: PROFILE_NAME.to_string(),
            context: CONTEXT_JSON.to_vec(),
            binary: TOFINO_BIN.to_vec(),
            // Empty: every pipe runs the profile.
            pipe_scope: Vec::new(),
        }],
    }
}

/// The bytes `p4_device_config` carries.
pub fn device_config() -> Vec<u8> {
    bf_pipeline_config().encode_to_vec()
}
