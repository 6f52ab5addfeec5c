#![allow(clippy::unwrap_used)]

//! The shipped P4Info holds everything the compiler and the target use, with the widths and
//! match kinds they assume; the port map is a real map.

use efb_p4info::contract::Departure;
use efb_p4info::{MatchKind, PortMap, PortName, contract, names};

#[test]
fn shipped_p4info_satisfies_the_contract() {
    let index = efb_p4info::index().unwrap();
    let problems = contract::check(&index);
    assert!(problems.is_empty(), "contract broken: {problems:#?}");
}

/// The names written at build time (by build.rs's own reading of the text format) are the
/// P4Info's as the index reads it: every table and key field, and no action or counter the
/// index does not know.
#[test]
fn the_generated_names_are_the_p4infos() {
    let index = efb_p4info::index().unwrap();
    let sorted = |names: &[names::TableName]| {
        let mut names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        names.sort();
        names
    };
    let mut tables: Vec<String> = index.tables().map(|t| t.name.clone()).collect();
    tables.sort();
    assert_eq!(sorted(names::tables::ALL), tables);
    for counter in index.counters() {
        assert!(names::CounterName::find(&counter.name).is_some());
    }
    for &counter in names::counters::ALL {
        let found =
            index.counter_by_name(counter).is_ok() || index.direct_counter_by_name(counter).is_ok();
        assert!(found, "{counter}");
    }
    for &action in names::actions::ALL {
        assert!(index.action_by_name(action).is_ok(), "{action}");
    }
    for table in index.tables() {
        for field in &table.fields {
            let nameable = field
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
            assert_eq!(
                names::FieldName::find(&field.name).is_some(),
                nameable,
                "{}: {}",
                table.name,
                field.name
            );
        }
    }
}

#[test]
fn contract_check_catches_a_wrong_width_and_a_missing_action() {
    let text = efb_p4info::P4INFO_TEXT
        .replacen(
            "name: \"ipv4_src\"\n    bitwidth: 32",
            "name: \"ipv4_src\"\n    bitwidth: 31",
            1,
        )
        .replacen(
            "name: \"EfbIngress.pair_down\"",
            "name: \"EfbIngress.pair_gone\"",
            1,
        );
    let p4info = efb_p4info::p4info_from_text(&text).unwrap();
    let index = efb_p4info::P4InfoIndex::new(&p4info).unwrap();
    let problems = contract::check(&index);
    let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert!(
        said.iter()
            .any(|p| p.contains("ipv4_src is ternary bit<31>")),
        "{said:?}"
    );
    assert!(
        problems.contains(&Departure::FieldShape {
            table: names::flows::IPV4.table,
            field: names::fields::IPV4_SRC,
            kind: MatchKind::Ternary,
            bits: 31,
            wants_kind: MatchKind::Ternary,
            wants_bits: 32,
        }),
        "{problems:?}"
    );
    let pair_down = names::actions::PAIR_DOWN.as_str();
    assert!(
        problems.contains(&Departure::Missing(efb_p4info::P4InfoError::Missing {
            kind: "action",
            name: pair_down.to_string(),
        })),
        "{problems:?}"
    );
    assert!(said.iter().any(|p| p.contains(pair_down)), "{said:?}");
}

#[test]
fn flow_tables_resolve_by_name_and_match_only_by_value_and_mask() {
    let index = efb_p4info::index().unwrap();
    for flows in names::flows::ALL {
        let table = index.table_by_name(flows.table).unwrap();
        let alias = flows.table.as_str().trim_start_matches("EfbIngress.");
        assert_eq!(table.alias, alias);
        assert!(table.needs_priority());
        // Tofino's TCAM: no range or optional fields in these wide keys.
        assert!(
            table.fields.iter().all(|f| f.kind == MatchKind::Ternary),
            "{}",
            flows.table
        );
        assert!(table.size > 0);
    }
    let to_pair = index.action_by_name(names::actions::TO_PAIR).unwrap();
    assert_eq!(to_pair.param(names::fields::CORE).unwrap().bitwidth, 8);
}

#[test]
fn p4info_with_duplicate_ids_is_refused() {
    let index = efb_p4info::index().unwrap();
    let mut ids = index.tables().map(|t| t.id);
    let (first, second) = (ids.next().unwrap(), ids.next().unwrap());
    let text =
        efb_p4info::P4INFO_TEXT.replacen(&format!("id: {second}\n"), &format!("id: {first}\n"), 1);
    assert_ne!(text, efb_p4info::P4INFO_TEXT);
    let p4info = efb_p4info::p4info_from_text(&text).unwrap();
    let err = efb_p4info::P4InfoIndex::new(&p4info).unwrap_err();
    assert!(err.to_string().contains("used twice"), "{err}");
}

#[test]
fn text_format_errors_name_the_problem() {
    let err = efb_p4info::p4info_from_text("tables { preamble { idd: 1 } }").unwrap_err();
    assert!(err.to_string().contains("idd"), "{err}");
}

#[test]
fn port_map_is_complete_and_not_monotonic() {
    let map = PortMap::builtin().unwrap();
    assert_eq!(map.device_ports().len(), 128);
    let front: Vec<u32> = (1..=32)
        .map(|p| {
            map.device_port(PortName {
                port: p,
                lane: None,
            })
            .unwrap()
        })
        .collect();
    assert!(
        front.windows(2).any(|w| w[0] > w[1]),
        "device ports follow the front panel"
    );
    let dev = map.resolve("p4-2").unwrap();
    assert_eq!(map.name_of(dev).unwrap().to_string(), "p4-2");
    assert_eq!(map.resolve("p4").unwrap(), map.resolve("p4-0").unwrap());
    assert!(map.resolve("p33").is_err());
    assert!(map.resolve("x1").is_err());
    assert!(map.resolve(&map.cpu_port().to_string()).is_err());
}

/// The committed outputs are the compiler's for the committed source: change efb.p4 and this
/// fails until `p4/compile.sh` has written them again (CI has no Tofino compiler).
#[test]
fn compiled_outputs_belong_to_the_source_as_committed() {
    use sha2::{Digest, Sha256};

    let source = std::fs::read(p4_dir().join("efb.p4")).unwrap();
    let digest: String = Sha256::digest(&source)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let recorded = std::fs::read_to_string(p4_dir().join("compiled/source.sha256")).unwrap();
    assert_eq!(
        recorded.split_whitespace().collect::<Vec<_>>(),
        [digest.as_str(), "efb.p4"],
        "p4/efb.p4 changed since p4/compiled/ was written: compile it again (p4/README.md)"
    );
}

fn p4_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../p4")
}

/// The program as the compiler placed it: four times the 2 048 IPv4 flows of the program
/// before the class table (issue 27), 2 560 IPv6 and 2 048 non-IP, the class table of 512,
/// in Tofino 1's twelve ingress stages.
#[test]
fn the_program_holds_four_times_the_flows_in_twelve_stages() {
    use efb_p4info::names::{flows, tables};

    let index = efb_p4info::index().unwrap();
    let size = |table: names::TableName| index.table_by_name(table).unwrap().size;
    assert_eq!(size(flows::IPV4.table), 4 * 2048);
    assert_eq!(size(flows::IPV6.table), 2560);
    assert_eq!(size(flows::OTHER.table), 2048);
    assert_eq!(size(tables::FRAME_CLASSES), 512);
    let resources = std::fs::read_to_string(p4_dir().join("compiled/resources.txt")).unwrap();
    assert!(
        resources.contains("ingress uses stages 0..11 of the 12"),
        "{resources}"
    );
}
