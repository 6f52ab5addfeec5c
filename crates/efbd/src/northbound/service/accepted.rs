//! The values of the proto's enums each request accepts, and reading one.

use efb_mgmt_proto::v1::*;
use tonic::Status;

pub(super) type ProtoLoadMode = efb_mgmt_proto::v1::LoadMode;

pub(super) type Which = efb_mgmt_proto::v1::Datastore;

pub(super) const LOAD_MODES: [ProtoLoadMode; 2] = [ProtoLoadMode::Merge, ProtoLoadMode::Override];

pub(super) const LOAD_FORMATS: [Format; 2] = [Format::Json, Format::Set];

/// Compare's default (JSON) gives `set` / `delete` lines, as the proto says.
pub(super) const COMPARE_FORMATS: [Format; 4] =
    [Format::Json, Format::Set, Format::Paths, Format::Hierarchy];

pub(super) const GET_FORMATS: [Format; 2] = [Format::Json, Format::Set];

pub(super) const COUNTED: [Counted; 2] = [Counted::Ports, Counted::Flows];

pub(super) const DATASTORES: [Which; 4] = [
    Which::Running,
    Which::Candidate,
    Which::Startup,
    Which::Operational,
];

/// The value of an enum field, if this request may have it. prost reads a number the
/// proto does not define as the default, which would make `mode = 99` a merge: refused
/// instead, naming the field and what it accepts.
pub(super) fn known<E: Copy + Into<i32>>(
    field: &str,
    value: i32,
    accepted: &[E],
    name: fn(&E) -> &'static str,
) -> Result<E, Status> {
    accepted
        .iter()
        .copied()
        .find(|e| (*e).into() == value)
        .ok_or_else(|| {
            tracing::warn!(
                field,
                value,
                "request refused: a value its enum does not define"
            );
            let names: Vec<String> = accepted
                .iter()
                .map(|e| format!("{} ({})", name(e), (*e).into()))
                .collect();
            Status::invalid_argument(format!(
                "{field} = {value} is not accepted here; {field} is one of: {}",
                names.join(", ")
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_values_the_proto_does_not_define_are_refused_by_name() {
        let mode = known("mode", 1, &LOAD_MODES, ProtoLoadMode::as_str_name).unwrap();
        assert_eq!(mode, ProtoLoadMode::Override);
        let err = known("mode", 99, &LOAD_MODES, ProtoLoadMode::as_str_name).unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert_eq!(
            err.message(),
            "mode = 99 is not accepted here; mode is one of: LOAD_MODE_MERGE (0), LOAD_MODE_OVERRIDE (1)"
        );
        // Defined, but not for this request: a load has no path-level format.
        let err = known("format", 2, &LOAD_FORMATS, Format::as_str_name).unwrap_err();
        assert!(
            err.message().contains("FORMAT_SET (1)"),
            "{}",
            err.message()
        );
    }
}
