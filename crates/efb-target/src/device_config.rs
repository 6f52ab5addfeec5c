//! What Stratum on Tofino checks in a pipeline push: `p4_device_config` must be a
//! serialized `BfPipelineConfig` (program name, bfrt.json, per profile context.json and
//! the chip image), and the P4Info must describe the program inside it: Stratum maps every
//! P4Info table to a BfRt table by id, then by name (bfrt names carry the pipeline's
//! prefix, `pipe.`), and a P4Info naming what the program lacks is refused.

use efb_p4info::P4InfoIndex;
use p4runtime_proto::stratum::hal::barefoot::BfPipelineConfig;
use prost::Message;

/// Why a pipeline push is refused, in Stratum's terms.
#[derive(Debug, thiserror::Error)]
pub enum DeviceConfigError {
    #[error(
        "missing P4 device config: Tofino needs the compiled program, a serialized \
         BfPipelineConfig (p4_name, bfruntime_info = bfrt.json, profiles with context.json \
         and tofino.bin)"
    )]
    Missing,
    #[error("p4_device_config is not a BfPipelineConfig: {0}")]
    NotBfPipelineConfig(#[from] prost::DecodeError),
    #[error("BfPipelineConfig.p4_name is empty")]
    NoProgramName,
    #[error("BfPipelineConfig has no profile (context.json and tofino.bin)")]
    NoProfile,
    #[error("profile {profile:?}: context is not JSON: {error}")]
    ContextNotJson {
        profile: String,
        error: serde_json::Error,
    },
    #[error("profile {profile:?}: the chip image (binary) is empty")]
    EmptyImage { profile: String },
    #[error("bfruntime_info is not JSON (bfrt.json): {0}")]
    BfrtNotJson(serde_json::Error),
    #[error("bfruntime_info has no \"tables\" array: it is not bfrt.json")]
    NoTables,
    #[error("bfrt.json table without name or id: {0}")]
    TableWithoutNameOrId(serde_json::Value),
    #[error(
        "P4Info object {name} (id {id}) is not in the program's bfrt.json: the P4Info is not \
         the one the program was compiled with"
    )]
    NotInProgram { name: String, id: u32 },
    #[error("P4Info table {name} has size {p4info}, the compiled program {compiled}")]
    SizeDiffers {
        name: String,
        p4info: u64,
        compiled: u64,
    },
}

/// One BfRt table as bfrt.json lists it.
struct BfrtTable {
    name: String,
    id: u64,
    size: Option<u64>,
}

/// Checks `bytes` as Stratum-bfrt would; on success, the program's name.
pub fn check(index: &P4InfoIndex, bytes: &[u8]) -> Result<String, DeviceConfigError> {
    if bytes.is_empty() {
        return Err(DeviceConfigError::Missing);
    }
    let config = BfPipelineConfig::decode(bytes)?;
    if config.p4_name.is_empty() {
        return Err(DeviceConfigError::NoProgramName);
    }
    if config.profiles.is_empty() {
        return Err(DeviceConfigError::NoProfile);
    }
    for profile in &config.profiles {
        let name = &profile.profile_name;
        // Checked, not kept: a 4 MB context.json need not become a tree of values.
        serde_json::from_slice::<serde::de::IgnoredAny>(&profile.context).map_err(|error| {
            DeviceConfigError::ContextNotJson {
                profile: name.clone(),
                error,
            }
        })?;
        if profile.binary.is_empty() {
            return Err(DeviceConfigError::EmptyImage {
                profile: name.clone(),
            });
        }
    }
    let tables = bfrt_tables(&config.bfruntime_info)?;
    check_tables(index, &tables)?;
    Ok(config.p4_name)
}

fn bfrt_tables(bfrt: &[u8]) -> Result<Vec<BfrtTable>, DeviceConfigError> {
    let json: serde_json::Value =
        serde_json::from_slice(bfrt).map_err(DeviceConfigError::BfrtNotJson)?;
    let tables = json
        .get("tables")
        .and_then(|t| t.as_array())
        .ok_or(DeviceConfigError::NoTables)?;
    tables
        .iter()
        .map(|t| {
            let name = t.get("name").and_then(|n| n.as_str());
            let id = t.get("id").and_then(|n| n.as_u64());
            match (name, id) {
                (Some(name), Some(id)) => Ok(BfrtTable {
                    name: name.to_string(),
                    id,
                    size: t.get("size").and_then(|s| s.as_u64()),
                }),
                _ => Err(DeviceConfigError::TableWithoutNameOrId(t.clone())),
            }
        })
        .collect()
}

/// Every P4Info table and indexed counter has its BfRt table, found as Stratum's id
/// mapper finds it, with the same size.
fn check_tables(index: &P4InfoIndex, bfrt: &[BfrtTable]) -> Result<(), DeviceConfigError> {
    let objects = index
        .tables()
        .map(|t| (t.id, t.name.as_str(), Some(t.size)))
        .chain(index.counters().map(|c| (c.id, c.name.as_str(), None)));
    for (id, name, size) in objects {
        let found = bfrt
            .iter()
            .find(|b| u64::from(id) == b.id && names_match(&b.name, name))
            .or_else(|| bfrt.iter().find(|b| names_match(&b.name, name)));
        let Some(table) = found else {
            return Err(DeviceConfigError::NotInProgram {
                name: name.to_string(),
                id,
            });
        };
        if let (Some(p4info), Some(bfrt)) = (size, table.size)
            && p4info != bfrt
        {
            return Err(DeviceConfigError::SizeDiffers {
                name: name.to_string(),
                p4info,
                compiled: bfrt,
            });
        }
    }
    Ok(())
}

/// bfrt.json names carry the pipeline's prefix (`pipe.EfbIngress.units`).
fn names_match(bfrt: &str, p4info: &str) -> bool {
    bfrt == p4info
        || bfrt
            .strip_suffix(p4info)
            .is_some_and(|prefix| prefix.ends_with('.'))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use efb_p4info::device_config::{bf_pipeline_config, device_config};

    fn index_of(text: &str) -> P4InfoIndex {
        P4InfoIndex::new(&efb_p4info::p4info_from_text(text).unwrap()).unwrap()
    }

    #[test]
    fn the_compiled_program_and_its_p4info_are_accepted() {
        let index = efb_p4info::index().unwrap();
        assert_eq!(check(&index, &device_config()).unwrap(), "efb");
    }

    #[test]
    fn an_empty_or_foreign_device_config_is_refused() {
        let index = efb_p4info::index().unwrap();
        let empty = check(&index, &[]).unwrap_err();
        assert!(matches!(empty, DeviceConfigError::Missing));
        assert!(
            empty.to_string().contains("missing P4 device config"),
            "{empty}"
        );
        let text = check(&index, b"efb.p4 for the software target").unwrap_err();
        assert!(
            matches!(text, DeviceConfigError::NotBfPipelineConfig(_)),
            "{text}"
        );
        assert!(
            text.to_string().contains("not a BfPipelineConfig"),
            "{text}"
        );
    }

    #[test]
    fn a_config_without_image_or_with_bad_json_is_refused() {
        let index = efb_p4info::index().unwrap();
        let mut no_image = bf_pipeline_config();
        no_image.profiles[0].binary.clear();
        let err = check(&index, &no_image.encode_to_vec()).unwrap_err();
        assert!(err.to_string().contains("chip image"), "{err}");
        let mut bad_bfrt = bf_pipeline_config();
        bad_bfrt.bfruntime_info = b"{\"tables\": 3}".to_vec();
        let err = check(&index, &bad_bfrt.encode_to_vec()).unwrap_err();
        assert!(matches!(err, DeviceConfigError::NoTables), "{err}");
        assert!(err.to_string().contains("\"tables\""), "{err}");
    }

    #[test]
    fn a_p4info_that_is_not_the_compiled_programs_is_refused() {
        let renamed = efb_p4info::P4INFO_TEXT.replacen(
            "name: \"EfbIngress.units\"",
            "name: \"EfbIngress.cells\"",
            1,
        );
        let err = check(&index_of(&renamed), &device_config()).unwrap_err();
        assert!(err.to_string().contains("EfbIngress.cells"), "{err}");
        let units = efb_p4info::index()
            .unwrap()
            .table_by_name(efb_p4info::names::tables::UNITS)
            .unwrap()
            .size;
        let resized = efb_p4info::P4INFO_TEXT.replacen(
            &format!("size: {units}\n"),
            &format!("size: {}\n", units + 1),
            1,
        );
        assert_ne!(resized, efb_p4info::P4INFO_TEXT);
        let err = check(&index_of(&resized), &device_config()).unwrap_err();
        assert!(
            matches!(err, DeviceConfigError::SizeDiffers { compiled, .. } if compiled == units),
            "{err}"
        );
    }
}
