//! What the next program's pre-classification costs the driver at the flow counts it is
//! for: each flow's atoms (`flow_atoms`), the class table laid out afresh, and again from
//! the previous layout when one flow brings a new VLAN id. Prints figures;
//! `cargo bench -p efb-p4 --bench classes` (EFB_BENCH_QUICK=1: one round).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use efb_model::{FlowMatch, PortRange};
use efb_p4::frame_classes::{Atom, Layout, classify, flow_atoms};

/// The class table's size in the program variant it is for.
const TABLE_SIZE: usize = 512;

/// Flow `i` of a site of `links` links and `vlans` VLAN ids: one link each, a VLAN id on
/// half of them, a port on a third.
fn flow_match(i: usize, vlans: u16) -> FlowMatch {
    FlowMatch {
        vlan_tags: [
            i.is_multiple_of(2).then(|| 100 + (i as u16 / 2) % vlans),
            None,
            None,
        ],
        dst_port: i.is_multiple_of(3).then_some(PortRange { lo: 53, hi: 53 }),
        ip_proto: Some(17),
        ..FlowMatch::default()
    }
}

fn atoms_of(flows: usize, links: u32, vlans: u16) -> BTreeSet<Atom> {
    (0..flows)
        .flat_map(|i| {
            let link = [i as u32 % links];
            flow_atoms(&flow_match(i, vlans), &link).expect("frames can match")
        })
        .collect()
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    let rounds = if std::env::var_os("EFB_BENCH_QUICK").is_some() {
        1
    } else {
        20
    };
    for (flows, links, vlans) in [(2_048, 4, 4), (8_192, 8, 6)] {
        let mut atoms_time = Vec::new();
        let mut fresh_time = Vec::new();
        let mut kept_time = Vec::new();
        let mut last = None;
        for _ in 0..rounds {
            let started = Instant::now();
            let atoms = atoms_of(flows, links, vlans);
            atoms_time.push(started.elapsed());
            let started = Instant::now();
            let fresh = classify(&atoms, &Layout::default(), TABLE_SIZE).expect("fits");
            fresh_time.push(started.elapsed());
            // One more flow, on a VLAN id no flow had.
            let mut grown = atoms.clone();
            let new_vlan = FlowMatch {
                vlan_tags: [Some(4000), None, None],
                ..flow_match(0, vlans)
            };
            grown.extend(flow_atoms(&new_vlan, &[0]).expect("frames can match"));
            let started = Instant::now();
            let kept = classify(&grown, &fresh.layout, TABLE_SIZE).expect("fits");
            kept_time.push(started.elapsed());
            last = Some((atoms.len(), fresh, kept));
        }
        let (atoms, fresh, kept) = last.expect("a round");
        println!(
            "{flows} flows, {links} links, {vlans} VLAN ids: {atoms} atoms, {} class entries of {TABLE_SIZE}, {} bits; atoms {:.2} ms, layout afresh {:.2} ms, one new VLAN id from the layout {:.2} ms ({})",
            fresh.entries.len(),
            fresh.layout.bits(),
            median(atoms_time),
            median(fresh_time),
            median(kept_time),
            if kept.relaid { "relaid" } else { "layout kept" },
        );
    }
}
