//! Builders for hand-made configurations; each test binary uses a different subset.
#![allow(dead_code)]

use std::net::IpAddr;
use std::sync::Arc;

use efb_balancing::Session;
use efb_model::{Action, Config, Flow, FlowMatch, Pair, Profile, Unit};

/// Pair `i` of a unit gets ports `<unit>-lan<i>` / `<unit>-wan<i>`, so tests can check
/// which pair's ports a lookup reports.
pub fn unit(name: &str, pairs: usize, cores: u16, rebalance: bool) -> Unit {
    Unit {
        name: name.to_string(),
        cores,
        cores_set: true,
        liveness_profile: None,
        rebalance,
        pairs: (0..pairs)
            .map(|i| Pair {
                name: format!("{name}-p{i}"),
                lan_port: format!("{name}-lan{i}"),
                wan_port: format!("{name}-wan{i}"),
                description: None,
            })
            .collect(),
        description: None,
    }
}

pub fn profile(name: &str, active_pairs: u16) -> Profile {
    Profile {
        name: name.to_string(),
        initial_delay_ms: 8000,
        interval_ms: 100,
        round_timeout_ms: 5,
        probes_down_count: 5,
        probes_up_count: 5,
        active_pairs,
        description: None,
    }
}

pub fn flow(name: &str, priority: u32, matches: FlowMatch, action: Action) -> Flow {
    Flow {
        name: name.to_string(),
        priority,
        direction: Default::default(),
        links: Vec::new(),
        matches,
        action,
        description: None,
    }
}

pub fn to_unit(name: &str) -> Action {
    Action::ToUnit(name.to_string())
}

pub fn config(units: Vec<Unit>, flows: Vec<Flow>) -> Config {
    let mut config = Config::default();
    for u in units {
        config.units.insert(u.name.clone(), u);
    }
    for f in flows {
        config.flows.insert(f.name.clone(), Arc::new(f));
    }
    config
}

pub fn session(src: &str, dst: &str, ip_proto: u8, src_port: u16, dst_port: u16) -> Session {
    Session {
        src: src.parse::<IpAddr>().unwrap(),
        dst: dst.parse::<IpAddr>().unwrap(),
        ip_proto,
        src_port,
        dst_port,
        link: None,
    }
}

pub fn swapped(s: &Session) -> Session {
    Session {
        src: s.dst,
        dst: s.src,
        src_port: s.dst_port,
        dst_port: s.src_port,
        ..s.clone()
    }
}
