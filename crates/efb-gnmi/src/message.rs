//! The parts of gNMI messages that Get, Set and Subscribe read or write the same way: a
//! request's encoding, `use_models` and extensions; a response's timestamp and values.

use std::time::{SystemTime, UNIX_EPOCH};

use efb_yang::Schema;
use gnmi_proto::gnmi::{self, ModelData};
use gnmi_proto::gnmi_ext::extension::Ext;
use tonic::Status;

use crate::encode::Encoding;
use crate::errors;

pub(crate) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// JSON, JSON_IETF or PROTO; anything else refused as the specification says.
pub(crate) fn encoding(number: i32) -> Result<Encoding, Status> {
    match gnmi::Encoding::try_from(number) {
        Ok(gnmi::Encoding::Json) => Ok(Encoding::Json),
        Ok(gnmi::Encoding::JsonIetf) => Ok(Encoding::JsonIetf),
        Ok(gnmi::Encoding::Proto) => Ok(Encoding::Proto),
        _ => Err(errors::encoding(number)),
    }
}

/// The prefix of a response's notifications: the request's target, reflected as the
/// specification says (nothing else: update paths are whole).
pub(crate) fn reflected_prefix(prefix: Option<&gnmi::Path>) -> Option<gnmi::Path> {
    prefix.filter(|p| !p.target.is_empty()).map(|p| gnmi::Path {
        target: p.target.clone(),
        ..gnmi::Path::default()
    })
}

/// A notification's timestamp for values read now: the time of the read, or later when
/// the backend read counters and stamped the snapshot with their time.
pub(crate) fn read_stamp(read_at: i64, snapshot_ns: u64) -> i64 {
    read_at.max(i64::try_from(snapshot_ns).unwrap_or(i64::MAX))
}

/// `use_models` may only name the model this target serves.
pub(crate) fn check_models(schema: &Schema, models: &[ModelData]) -> Result<(), Status> {
    let module = &schema.module().name;
    match models.iter().find(|m| m.name != *module) {
        Some(other) => Err(Status::invalid_argument(format!(
            "use_models: this target serves model {module} only, not {}",
            other.name
        ))),
        None => Ok(()),
    }
}

/// Extensions a read RPC cannot honour are refused rather than ignored.
pub(crate) fn check_read_extensions(
    extensions: &[gnmi_proto::gnmi_ext::Extension],
) -> Result<(), Status> {
    for ext in extensions {
        match &ext.ext {
            Some(Ext::Depth(_)) => {
                return Err(Status::unimplemented(
                    "the depth extension is not supported",
                ));
            }
            Some(Ext::History(_)) => {
                return Err(Status::unimplemented(
                    "the history extension is not supported",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}
