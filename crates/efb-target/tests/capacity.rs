//! Every table the controller writes holds what the P4Info advertises (the compiler's
//! placement, which the driver reads as the chip's capacity), and one more entry is refused
//! with RESOURCE_EXHAUSTED, as the chip refuses it. Driven by the P4Info alone: a table
//! added to the program or resized is filled here without a change.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Bench, b, entity, insert};
use efb_p4info::{ActionScope, MatchKind, TableInfo};
use efb_target::Profile;
use p4runtime_proto::p4::v1 as p4;

/// Entries written per batch: the driver's batches are smaller; this keeps the test short.
const BATCH: usize = 8192;

/// The `n`th entry of `table`: the number `n` spread over the key fields (exact, or ternary
/// with every bit cared for), the first action a table entry may take with zero parameters.
fn nth_entry(bench: &Bench, table: &TableInfo, n: u128) -> p4::TableEntry {
    let mut shift = 0;
    let r#match = table
        .fields
        .iter()
        .map(|field| {
            let all = u128::MAX >> (128 - field.bitwidth);
            let value = n.checked_shr(shift).unwrap_or(0) & all;
            shift += field.bitwidth;
            let kind = match field.kind {
                MatchKind::Exact => {
                    p4::field_match::FieldMatchType::Exact(p4::field_match::Exact {
                        value: b(value),
                    })
                }
                MatchKind::Ternary => {
                    p4::field_match::FieldMatchType::Ternary(p4::field_match::Ternary {
                        value: b(value),
                        mask: b(all),
                    })
                }
                other => panic!("{}: no filling for {other:?} fields", table.name),
            };
            p4::FieldMatch {
                field_id: field.id,
                field_match_type: Some(kind),
            }
        })
        .collect();
    let (action_id, _) = table
        .actions
        .iter()
        .find(|(_, scope)| *scope != ActionScope::DefaultOnly)
        .unwrap_or_else(|| panic!("{} has no action for entries", table.name));
    let action = bench.index.action(*action_id).unwrap();
    let params = action
        .params
        .iter()
        .map(|p| p4::action::Param {
            param_id: p.id,
            value: b(0),
        })
        .collect();
    p4::TableEntry {
        table_id: table.id,
        r#match,
        action: Some(p4::TableAction {
            r#type: Some(p4::table_action::Type::Action(p4::Action {
                action_id: *action_id,
                params,
            })),
        }),
        priority: if table.needs_priority() { 1 } else { 0 },
        ..Default::default()
    }
}

fn key_space(table: &TableInfo) -> u128 {
    let bits: u32 = table.fields.iter().map(|f| f.bitwidth).sum();
    1u128.checked_shl(bits).unwrap_or(u128::MAX)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_table_holds_its_advertised_size_and_refuses_one_more() {
    let (mut bench, _session) = Bench::ready(Profile::StratumTofino).await;
    let tables: Vec<TableInfo> = bench
        .index
        .tables()
        .filter(|t| !t.is_const && !t.fields.is_empty())
        .cloned()
        .collect();
    assert!(
        tables.len() >= 8,
        "the program's writable tables: {}",
        tables.len()
    );
    for table in &tables {
        let size = table.size;
        let started = std::time::Instant::now();
        let entries: Vec<p4::Update> = (0..u128::from(size))
            .map(|n| insert(nth_entry(&bench, table, n)))
            .collect();
        for batch in entries.chunks(BATCH) {
            if let Err(e) = bench.write(batch.to_vec()).await {
                let refused = e.details.iter().find(|d| d.canonical_code != 0);
                panic!("{}: filling to {size} refused: {refused:?}", table.name);
            }
        }
        let held = bench
            .read(vec![entity(p4::TableEntry {
                table_id: table.id,
                ..Default::default()
            })])
            .await
            .unwrap()
            .len();
        assert_eq!(held as u64, size, "{} holds what was written", table.name);
        // A table keyed by all its key space (ports, ids) has no further key to refuse.
        let beyond = key_space(table) > u128::from(size);
        if beyond {
            let one_more = nth_entry(&bench, table, u128::from(size));
            let (code, message) = bench.write_one(insert(one_more)).await;
            assert_eq!(
                code,
                tonic::Code::ResourceExhausted,
                "{}: entry {} of {size}: {message}",
                table.name,
                size + 1
            );
        }
        println!(
            "{}: {size} entries written in {:.1} s; {}",
            table.name,
            started.elapsed().as_secs_f64(),
            if beyond {
                "the next refused"
            } else {
                "every key of the table held"
            }
        );
    }
}
