//! The board as built (`/board` of the state tree): every physical port of the front panel
//! and its lanes, from the port map, and what the running configuration makes of them
//! (which configured port uses a lane, which link or pair uses that port). Counters and
//! status come from the chip and are put in by `state`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use efb_model::Config;
use efb_p4info::{PortMap, PortName};

/// The shipped port map, read once: every state tree and every read of the counters
/// needs it.
pub fn port_map() -> Option<&'static PortMap> {
    static MAP: OnceLock<Option<PortMap>> = OnceLock::new();
    MAP.get_or_init(|| PortMap::builtin().ok()).as_ref()
}

/// How the configuration uses a physical port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    Whole,
    BrokenOut,
    Free,
}

impl Usage {
    /// The model's enum name.
    pub fn as_str(self) -> &'static str {
        match self {
            Usage::Whole => "whole",
            Usage::BrokenOut => "broken-out",
            Usage::Free => "free",
        }
    }
}

/// One physical port and its lanes, in lane order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardPort {
    pub number: u32,
    pub usage: Usage,
    pub lanes: Vec<Lane>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    pub lane: u32,
    pub device_port: u32,
    /// The configured port on this lane (a whole port is on all of them).
    pub port: Option<String>,
    /// What uses that port: "link l1 lan", "pair ef1/f1-te1-te2 wan".
    pub used_by: Option<String>,
}

/// The board of `map` as `config` uses it, physical ports in number order.
pub fn board(map: &PortMap, config: &Config) -> Vec<BoardPort> {
    let users = users(config);
    let mut lanes: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new();
    for device_port in map.device_ports() {
        if let Some(PortName {
            port,
            lane: Some(lane),
        }) = map.name_of(device_port)
        {
            lanes.entry(port).or_default().push((lane, device_port));
        }
    }
    lanes
        .into_iter()
        .map(|(number, mut found)| {
            found.sort_unstable();
            physical_port(config, &users, number, &found)
        })
        .collect()
}

fn physical_port(
    config: &Config,
    users: &BTreeMap<&str, Vec<String>>,
    number: u32,
    lanes: &[(u32, u32)],
) -> BoardPort {
    let on = |lane: Option<u32>| {
        config
            .ports
            .values()
            .find(|p| u32::from(p.number) == number && p.lane.map(u32::from) == lane)
    };
    // The rules refuse a port both whole and broken out; were it so, whole wins here.
    let whole = on(None);
    let lanes: Vec<Lane> = lanes
        .iter()
        .map(|&(lane, device_port)| {
            let port = whole.or_else(|| on(Some(lane))).map(|p| p.name.clone());
            let used_by = port
                .as_deref()
                .and_then(|p| users.get(p))
                .map(|u| u.join(", "));
            Lane {
                lane,
                device_port,
                port,
                used_by,
            }
        })
        .collect();
    let usage = if whole.is_some() {
        Usage::Whole
    } else if lanes.iter().any(|l| l.port.is_some()) {
        Usage::BrokenOut
    } else {
        Usage::Free
    };
    BoardPort {
        number,
        usage,
        lanes,
    }
}

/// The links and pairs using each configured port, in words.
fn users(config: &Config) -> BTreeMap<&str, Vec<String>> {
    let links = config
        .links
        .values()
        .map(|l| (format!("link {}", l.name), &l.lan_port, &l.wan_port));
    let pairs = config.units.values().flat_map(|unit| {
        unit.pairs.iter().map(move |p| {
            (
                format!("pair {}/{}", unit.name, p.name),
                &p.lan_port,
                &p.wan_port,
            )
        })
    });
    let mut users: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (user, lan, wan) in links.chain(pairs) {
        for (port, side) in [(lan, "lan"), (wan, "wan")] {
            users
                .entry(port.as_str())
                .or_default()
                .push(format!("{user} {side}"));
        }
    }
    users
}

#[cfg(test)]
mod tests {
    use efb_model::{Link, Pair, Port, Speed, Unit};

    use super::*;

    fn port(name: &str, number: u8, lane: Option<u8>, speed: Speed) -> (String, Port) {
        (
            name.to_string(),
            Port {
                name: name.into(),
                number,
                lane,
                speed,
                mtu: 9000,
                description: None,
                enabled: true,
            },
        )
    }

    #[test]
    fn every_physical_port_whole_broken_out_or_free_with_its_users() {
        let mut config = Config::default();
        config.ports.extend([
            port("p1", 1, None, Speed::G100),
            port("p2", 2, None, Speed::G100),
            port("p9-0", 9, Some(0), Speed::G10),
            port("p9-1", 9, Some(1), Speed::G10),
        ]);
        config.links.insert(
            "l1".into(),
            Link {
                name: "l1".into(),
                lan_port: "p2".into(),
                wan_port: "p1".into(),
                description: None,
            },
        );
        let unit = Unit {
            name: "ef1".into(),
            cores: 1,
            cores_set: false,
            liveness_profile: None,
            rebalance: false,
            pairs: vec![Pair {
                name: "f1".into(),
                lan_port: "p9-0".into(),
                wan_port: "p9-1".into(),
                description: None,
            }],
            description: None,
        };
        config.units.insert("ef1".into(), unit);
        let map = PortMap::builtin().unwrap();

        let board = board(&map, &config);
        assert_eq!(board.len(), 32);
        assert!(board.iter().all(|p| p.lanes.len() == 4));
        let p1 = &board[0];
        assert_eq!((p1.number, p1.usage), (1, Usage::Whole));
        assert!(p1.lanes.iter().all(
            |l| l.port.as_deref() == Some("p1") && l.used_by.as_deref() == Some("link l1 wan")
        ));
        assert_eq!(p1.lanes[0].device_port, 132, "the port map's");
        let p9 = &board[8];
        assert_eq!((p9.number, p9.usage), (9, Usage::BrokenOut));
        let lane = |l: &Lane| (l.port.clone(), l.used_by.clone());
        assert_eq!(
            p9.lanes.iter().map(lane).collect::<Vec<_>>(),
            [
                (Some("p9-0".into()), Some("pair ef1/f1 lan".into())),
                (Some("p9-1".into()), Some("pair ef1/f1 wan".into())),
                (None, None),
                (None, None),
            ]
        );
        let p5 = &board[4];
        assert_eq!((p5.number, p5.usage), (5, Usage::Free));
        assert!(p5.lanes.iter().all(|l| l.port.is_none()));
    }
}
