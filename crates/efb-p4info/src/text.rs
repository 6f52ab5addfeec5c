//! The P4Info text format (what p4c writes with --p4runtime-files x.txtpb), read and
//! written through prost-reflect with the descriptors of our own proto transcription, so
//! that field names in the text are checked against exactly the messages we compile.

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage};

use p4runtime_proto::p4::config::v1::P4Info;

use crate::P4InfoError;

const P4INFO_MESSAGE: &str = "p4.config.v1.P4Info";

fn descriptor() -> Result<prost_reflect::MessageDescriptor, P4InfoError> {
    let pool = DescriptorPool::decode(p4runtime_proto::FILE_DESCRIPTOR_SET)
        .map_err(|e| P4InfoError::Text(format!("descriptor set: {e}")))?;
    pool.get_message_by_name(P4INFO_MESSAGE)
        .ok_or_else(|| P4InfoError::Text(format!("{P4INFO_MESSAGE} is not in the descriptors")))
}

/// Parses P4Info text format into the generated prost type.
pub fn p4info_from_text(text: &str) -> Result<P4Info, P4InfoError> {
    let dynamic = DynamicMessage::parse_text_format(descriptor()?, text)
        .map_err(|e| P4InfoError::Text(e.to_string()))?;
    P4Info::decode(dynamic.encode_to_vec().as_slice())
        .map_err(|e| P4InfoError::Text(format!("transcoding: {e}")))
}

/// Prints a P4Info in text format (for logs and golden files).
pub fn p4info_to_text(p4info: &P4Info) -> Result<String, P4InfoError> {
    let dynamic = DynamicMessage::decode(descriptor()?, p4info.encode_to_vec().as_slice())
        .map_err(|e| P4InfoError::Text(format!("transcoding: {e}")))?;
    Ok(dynamic.to_text_format())
}
