//! lookup-session: flow selection, the plain-frame assumption, and the unit rules.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::{config, flow, profile, session, to_unit, unit};
use efb_balancing::matching::flow_matches;
use efb_balancing::{
    BalancingError, BypassMode, LiveState, Lookup, Session, UnitLayout, lookup_session,
    session_hash,
};
use efb_model::{Action, Config, FlowMatch, MacMatch, PortRange, Prefix};

fn all_to(unit_name: &str) -> efb_model::Flow {
    flow("all", 1, FlowMatch::default(), to_unit(unit_name))
}

fn look(c: &Config, s: &Session) -> Lookup {
    lookup_session(c, s, &LiveState::all_up()).unwrap()
}

fn down(pairs: &[(&str, &str)]) -> LiveState {
    LiveState {
        down_pairs: pairs
            .iter()
            .map(|(u, p)| (u.to_string(), p.to_string()))
            .collect::<BTreeSet<_>>(),
        ..LiveState::all_up()
    }
}

fn with_mode(mut live: LiveState, unit_name: &str, mode: BypassMode) -> LiveState {
    live.modes.insert(unit_name.to_string(), mode);
    live
}

/// A session whose bucket, with every pair live, falls on pair `index` of `unit_name`.
fn session_on_pair(c: &Config, unit_name: &str, index: usize) -> Session {
    let layout = UnitLayout::of(&c.units[unit_name]);
    (0..=255u8)
        .flat_map(|a| {
            (0..=255u8).map(move |b| session(&format!("10.1.{a}.{b}"), "192.0.2.1", 6, 0, 0))
        })
        .find(|s| {
            let bucket = layout.bucket_of(session_hash(c.balancing_method, s).unwrap());
            layout.pair_core(bucket % layout.slots()).0 == index
        })
        .unwrap()
}

#[test]
fn no_matching_flow_bypasses() {
    let c = config(vec![unit("u", 2, 4, false)], vec![]);
    let l = look(&c, &session("10.0.0.1", "10.0.0.2", 6, 1, 2));
    assert_eq!(l.action, Action::Bypass);
    assert_eq!((l.flow, l.unit, l.bucket), (None, None, None));
    assert!(!l.software_bypass);
    assert!(l.reason.contains("no flow"), "{}", l.reason);
}

#[test]
fn highest_priority_wins() {
    let c = config(
        vec![unit("u", 2, 4, false)],
        vec![
            flow("a-low", 10, FlowMatch::default(), Action::Drop),
            flow("z-high", 20, FlowMatch::default(), to_unit("u")),
            flow("m-lowest", 0, FlowMatch::default(), Action::Bypass),
        ],
    );
    let l = look(&c, &session("10.0.0.1", "10.0.0.2", 6, 1, 2));
    assert_eq!(l.flow.as_deref(), Some("z-high"));
    assert_eq!(l.action, to_unit("u"));
    assert_eq!(l.unit.as_deref(), Some("u"));
}

#[test]
fn equal_priority_goes_to_the_first_name_in_byte_order() {
    let c = config(
        vec![],
        vec![
            flow("b", 5, FlowMatch::default(), Action::Drop),
            flow("a", 5, FlowMatch::default(), Action::Bypass),
            flow("c", 5, FlowMatch::default(), Action::Drop),
        ],
    );
    let l = look(&c, &session("10.0.0.1", "10.0.0.2", 6, 1, 2));
    assert_eq!((l.flow.as_deref(), l.action), (Some("a"), Action::Bypass));

    // Byte order, not case-insensitive order: "Z" (0x5a) sorts before "a" (0x61).
    let c = config(
        vec![],
        vec![
            flow("a", 5, FlowMatch::default(), Action::Bypass),
            flow("Z", 5, FlowMatch::default(), Action::Drop),
        ],
    );
    let l = look(&c, &session("10.0.0.1", "10.0.0.2", 6, 1, 2));
    assert_eq!((l.flow.as_deref(), l.action), (Some("Z"), Action::Drop));
}

#[test]
fn links_scope_flows() {
    let mut only_l1 = flow("only-l1", 10, FlowMatch::default(), Action::Drop);
    only_l1.links = vec!["l1".to_string(), "l3".to_string()];
    let everywhere = flow("everywhere", 1, FlowMatch::default(), Action::Bypass);
    let mut c = config(vec![], vec![only_l1.clone(), everywhere.clone()]);
    for name in ["l1", "l2", "l3"] {
        c.links.insert(
            name.into(),
            efb_model::Link {
                name: name.into(),
                lan_port: format!("{name}-lan"),
                wan_port: format!("{name}-wan"),
                description: None,
            },
        );
    }
    let mut s = session("10.0.0.1", "10.0.0.2", 6, 1, 2);
    for (link, expected) in [
        (Some("l1"), "only-l1"),
        (Some("l3"), "only-l1"),
        (Some("l2"), "everywhere"),
        (None, "everywhere"),
    ] {
        s.link = link.map(str::to_string);
        assert_eq!(look(&c, &s).flow.as_deref(), Some(expected), "{link:?}");
        assert!(flow_matches(&everywhere, &s));
    }
    // A link the configuration does not have is refused, naming those it has.
    s.link = Some("l9".into());
    let refused = lookup_session(&c, &s, &LiveState::all_up()).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "link l9: no such link; links are: l1, l2, l3"
    );
    // With no link named and only link-scoped flows, nothing matches.
    let c = config(vec![], vec![only_l1]);
    s.link = None;
    assert_eq!(look(&c, &s).flow, None);
}

#[test]
fn ports_match_only_protocols_with_ports() {
    let dns = FlowMatch {
        dst_port: Some(PortRange { lo: 53, hi: 53 }),
        ..FlowMatch::default()
    };
    let f = flow("dns", 1, dns, Action::Drop);
    for proto in [6, 17, 33, 132, 136] {
        assert!(
            flow_matches(&f, &session("10.0.0.1", "10.0.0.2", proto, 999, 53)),
            "{proto}"
        );
        assert!(
            !flow_matches(&f, &session("10.0.0.1", "10.0.0.2", proto, 999, 54)),
            "{proto}"
        );
    }
    for proto in [0, 1, 47, 50, 58] {
        assert!(
            !flow_matches(&f, &session("10.0.0.1", "10.0.0.2", proto, 999, 53)),
            "{proto}"
        );
    }
    // A source range, inclusive at both ends.
    let high = FlowMatch {
        src_port: Some(PortRange {
            lo: 1024,
            hi: 65535,
        }),
        ip_proto: Some(17),
        ..FlowMatch::default()
    };
    let f = flow("high", 1, high, Action::Drop);
    assert!(flow_matches(
        &f,
        &session("10.0.0.1", "10.0.0.2", 17, 1024, 1)
    ));
    assert!(flow_matches(
        &f,
        &session("10.0.0.1", "10.0.0.2", 17, 65535, 1)
    ));
    assert!(!flow_matches(
        &f,
        &session("10.0.0.1", "10.0.0.2", 17, 1023, 1)
    ));
    assert!(!flow_matches(
        &f,
        &session("10.0.0.1", "10.0.0.2", 6, 2000, 1)
    ));
}

#[test]
fn prefixes_match_their_own_family() {
    let v4 = FlowMatch {
        dst_ipv4: Some(Prefix::parse("192.0.2.0/24").unwrap()),
        ..FlowMatch::default()
    };
    let any_v4 = FlowMatch {
        src_ipv4: Some(Prefix::parse("0.0.0.0/0").unwrap()),
        ..FlowMatch::default()
    };
    let any_v6 = FlowMatch {
        src_ipv6: Some(Prefix::parse("::/0").unwrap()),
        ..FlowMatch::default()
    };
    let v6 = FlowMatch {
        dst_ipv6: Some(Prefix::parse("2001:db8::/32").unwrap()),
        ..FlowMatch::default()
    };
    let [v4, any_v4, any_v6, v6] = [v4, any_v4, any_v6, v6].map(|m| flow("f", 1, m, Action::Drop));
    let s4_in = session("10.0.0.1", "192.0.2.200", 6, 1, 2);
    let s4_out = session("10.0.0.1", "192.0.3.1", 6, 1, 2);
    let s6_in = session("2001:db9::1", "2001:db8:1::1", 6, 1, 2);
    let s6_out = session("2001:db8::1", "2001:db9::1", 6, 1, 2);
    let mapped = session("::ffff:10.0.0.1", "::ffff:192.0.2.1", 6, 1, 2);
    assert!(flow_matches(&v4, &s4_in));
    assert!(!flow_matches(&v4, &s4_out));
    assert!(!flow_matches(&v4, &mapped));
    assert!(flow_matches(&any_v4, &s4_out) && !flow_matches(&any_v4, &s6_in));
    assert!(flow_matches(&any_v6, &s6_in) && flow_matches(&any_v6, &mapped));
    assert!(!flow_matches(&any_v6, &s4_in));
    assert!(flow_matches(&v6, &s6_in));
    assert!(!flow_matches(&v6, &s6_out));
    assert!(!flow_matches(&v6, &s4_in));
}

#[test]
fn packet_type_is_the_family_ethertype() {
    let m = |t| FlowMatch {
        packet_type: Some(t),
        ..FlowMatch::default()
    };
    let (f4, f6, arp) = (
        flow("v4", 1, m(0x0800), Action::Drop),
        flow("v6", 1, m(0x86dd), Action::Drop),
        flow("arp", 1, m(0x0806), Action::Drop),
    );
    let s4 = session("10.0.0.1", "10.0.0.2", 6, 1, 2);
    let s6 = session("2001:db8::1", "2001:db8::2", 6, 1, 2);
    assert!(flow_matches(&f4, &s4) && !flow_matches(&f4, &s6));
    assert!(flow_matches(&f6, &s6) && !flow_matches(&f6, &s4));
    assert!(!flow_matches(&arp, &s4) && !flow_matches(&arp, &s6));
}

#[test]
fn frame_criteria_a_session_cannot_have_do_not_match() {
    let mac = Some(MacMatch {
        addr: [0; 6],
        mask: [0; 6],
    });
    let never = [
        FlowMatch {
            vlan_tags: [Some(100), None, None],
            ..FlowMatch::default()
        },
        FlowMatch {
            vlan_tags: [None, None, Some(0)],
            ..FlowMatch::default()
        },
        FlowMatch {
            vlan_depth: Some(1),
            ..FlowMatch::default()
        },
        FlowMatch {
            mpls_depth: Some(2),
            ..FlowMatch::default()
        },
        // Even a mask of all zeros: the session does not know its MACs.
        FlowMatch {
            src_mac: mac,
            ..FlowMatch::default()
        },
        FlowMatch {
            dst_mac: mac,
            ..FlowMatch::default()
        },
        FlowMatch {
            llc_dsap: Some(0x42),
            ..FlowMatch::default()
        },
        FlowMatch {
            llc_ssap: Some(0x42),
            ..FlowMatch::default()
        },
    ];
    let s = session("10.0.0.1", "10.0.0.2", 6, 1, 2);
    for m in never {
        let f = flow("f", 1, m.clone(), Action::Drop);
        assert!(!flow_matches(&f, &s), "{m:?}");
    }
    let always = [
        FlowMatch {
            vlan_depth: Some(0),
            ..FlowMatch::default()
        },
        FlowMatch {
            mpls_depth: Some(0),
            ..FlowMatch::default()
        },
        FlowMatch {
            ip_proto: Some(6),
            vlan_depth: Some(0),
            mpls_depth: Some(0),
            ..FlowMatch::default()
        },
    ];
    for m in always {
        let f = flow("f", 1, m.clone(), Action::Drop);
        assert!(flow_matches(&f, &s), "{m:?}");
    }
    let f = flow(
        "udp",
        1,
        FlowMatch {
            ip_proto: Some(17),
            ..FlowMatch::default()
        },
        Action::Drop,
    );
    assert!(!flow_matches(&f, &s));
}

#[test]
fn to_ecofilter_reports_the_slot_pair_core_and_ports() {
    let c = config(vec![unit("u", 3, 5, false)], vec![all_to("u")]);
    let s = session("10.0.0.1", "10.0.0.2", 6, 1, 2);
    let l = look(&c, &s);
    let hash = session_hash(c.balancing_method, &s).unwrap();
    let bucket = hash & 255; // S = 15 -> M = 256
    let slot = bucket % 15;
    let (pair, core) = (slot / 5, slot % 5);
    assert_eq!(l.bucket, Some(bucket));
    assert_eq!(l.slot, Some(slot));
    assert_eq!(l.pair, Some(format!("u-p{pair}")));
    assert_eq!(l.core, Some(core as u16));
    assert_eq!(l.lan_egress_port, Some(format!("u-lan{pair}")));
    assert_eq!(l.wan_egress_port, Some(format!("u-wan{pair}")));
    assert_eq!(l.pair_live, Some(true));
    assert!(!l.software_bypass);
}

#[test]
fn a_dead_pair_without_rebalance_is_software_bypassed() {
    let c = config(vec![unit("u", 3, 2, false)], vec![all_to("u")]);
    let s = session_on_pair(&c, "u", 1);
    let live = down(&[("u", "u-p1")]);
    let l = lookup_session(&c, &s, &live).unwrap();
    assert!(l.software_bypass);
    assert_eq!(l.pair.as_deref(), Some("u-p1"));
    assert_eq!(l.pair_live, Some(false));
    assert_eq!((l.lan_egress_port, l.wan_egress_port), (None, None));
    assert!(l.reason.contains("u-p1"), "{}", l.reason);
    // The other pairs keep working.
    let other = lookup_session(&c, &session_on_pair(&c, "u", 2), &live).unwrap();
    assert!(!other.software_bypass);
    assert_eq!(other.pair.as_deref(), Some("u-p2"));
}

#[test]
fn a_dead_pair_with_rebalance_moves_to_a_live_slot() {
    let c = config(vec![unit("u", 3, 2, true)], vec![all_to("u")]);
    let s = session_on_pair(&c, "u", 1);
    let l = lookup_session(&c, &s, &down(&[("u", "u-p1")])).unwrap();
    let bucket = l.bucket.unwrap() as usize;
    // Live slots [0, 1, 4, 5]; S = 6; dead slots 2 (number 0) and 3 (number 1): D = 2.
    let j = bucket % 6 - 2;
    let slot = [0, 1, 4, 5][((bucket / 6) * 2 + j) % 4];
    assert_eq!(l.slot, Some(slot as u32));
    assert_eq!(l.pair, Some(format!("u-p{}", slot / 2)));
    assert_eq!(l.lan_egress_port, Some(format!("u-lan{}", slot / 2)));
    assert_eq!((l.pair_live, l.software_bypass), (Some(true), false));
    // With every pair down there is nowhere to go.
    let all_down = down(&[("u", "u-p0"), ("u", "u-p1"), ("u", "u-p2")]);
    assert!(lookup_session(&c, &s, &all_down).unwrap().software_bypass);
}

#[test]
fn bypass_mode_bypasses_the_whole_unit() {
    let c = config(
        vec![unit("u", 3, 2, false), unit("v", 1, 1, false)],
        vec![all_to("u")],
    );
    let live = with_mode(LiveState::all_up(), "u", BypassMode::Bypass);
    for index in 0..3 {
        let l = lookup_session(&c, &session_on_pair(&c, "u", index), &live).unwrap();
        assert!(l.software_bypass, "{l:?}");
        assert_eq!(l.lan_egress_port, None);
        assert_eq!(l.pair_live, Some(true));
    }
    // Another unit's mode does not matter.
    let live = with_mode(LiveState::all_up(), "v", BypassMode::Bypass);
    assert!(
        !lookup_session(&c, &session_on_pair(&c, "u", 0), &live)
            .unwrap()
            .software_bypass
    );
}

#[test]
fn primary_mode_ignores_liveness() {
    let mut u = unit("u", 3, 2, true);
    u.liveness_profile = Some("prof".to_string());
    let mut c = config(vec![u], vec![all_to("u")]);
    c.profiles.insert("prof".to_string(), profile("prof", 3));
    let s = session_on_pair(&c, "u", 1);
    let home = look(&c, &s);
    let live = with_mode(down(&[("u", "u-p1")]), "u", BypassMode::Primary);
    let l = lookup_session(&c, &s, &live).unwrap();
    assert!(!l.software_bypass);
    assert_eq!(
        (l.slot, &l.pair, l.core),
        (home.slot, &home.pair, home.core)
    );
    assert_eq!(l.pair_live, Some(false));
    assert_eq!(l.lan_egress_port.as_deref(), Some("u-lan1"));
    // Auto, the same liveness: 2 live < active-pairs 3, the whole unit bypasses.
    let auto = with_mode(down(&[("u", "u-p1")]), "u", BypassMode::Auto);
    assert!(lookup_session(&c, &s, &auto).unwrap().software_bypass);
}

#[test]
fn active_pairs_threshold_bypasses_the_unit() {
    let mut u = unit("u", 4, 2, false);
    u.liveness_profile = Some("prof".to_string());
    let mut c = config(vec![u], vec![all_to("u")]);
    c.profiles.insert("prof".to_string(), profile("prof", 3));
    let on_p0 = session_on_pair(&c, "u", 0);
    // One pair down: 3 live >= 3, per-pair rules; p0 is live, so it goes to the filter.
    let l = lookup_session(&c, &on_p0, &down(&[("u", "u-p3")])).unwrap();
    assert!(!l.software_bypass);
    assert_eq!(l.pair.as_deref(), Some("u-p0"));
    // Two down: 2 live < 3, even p0's sessions bypass.
    let l = lookup_session(&c, &on_p0, &down(&[("u", "u-p3"), ("u", "u-p2")])).unwrap();
    assert!(l.software_bypass);
    assert_eq!(l.pair_live, Some(true));
    assert!(l.reason.contains("active-pairs"), "{}", l.reason);
    // Down pairs of another unit with the same pair names do not count.
    let l = lookup_session(&c, &on_p0, &down(&[("x", "u-p3"), ("x", "u-p2")])).unwrap();
    assert!(!l.software_bypass);
}

#[test]
fn a_unit_without_pairs_is_bypassed() {
    let c = config(vec![unit("empty", 0, 4, true)], vec![all_to("empty")]);
    let l = look(&c, &session("10.0.0.1", "10.0.0.2", 6, 1, 2));
    assert_eq!(l.action, to_unit("empty"));
    assert_eq!(l.unit.as_deref(), Some("empty"));
    assert!(l.software_bypass);
    assert_eq!((l.bucket, l.slot, l.pair), (None, None, None));
    assert!(l.reason.contains("no pairs"), "{}", l.reason);
}

#[test]
fn lookups_serialize_in_kebab_case_without_absent_fields() {
    let c = config(vec![unit("u", 3, 5, false)], vec![all_to("u")]);
    let json = serde_json::to_value(look(&c, &session("10.0.0.1", "10.0.0.2", 6, 1, 2))).unwrap();
    assert_eq!(json["action"], "to-ecofilter");
    assert_eq!(json["unit"], "u");
    assert_eq!(json["pair-live"], true);
    assert_eq!(json["software-bypass"], false);
    assert!(json["lan-egress-port"].is_string() && json["wan-egress-port"].is_string());
    let none = serde_json::to_value(look(
        &config(vec![], vec![]),
        &session("10.0.0.1", "10.0.0.2", 6, 1, 2),
    ))
    .unwrap();
    let mut keys: Vec<&String> = none.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["action", "reason", "software-bypass", "split"]);
    assert_eq!(none["action"], "bypass");
    let drop = config(
        vec![],
        vec![flow("d", 1, FlowMatch::default(), Action::Drop)],
    );
    let json =
        serde_json::to_value(look(&drop, &session("10.0.0.1", "10.0.0.2", 6, 1, 2))).unwrap();
    assert_eq!(
        (json["action"].as_str(), json["flow"].as_str()),
        (Some("drop"), Some("d"))
    );
}

#[test]
fn inconsistent_input_is_an_error() {
    let c = config(vec![], vec![all_to("ghost")]);
    let err = lookup_session(
        &c,
        &session("10.0.0.1", "10.0.0.2", 6, 1, 2),
        &LiveState::all_up(),
    );
    assert!(
        matches!(err, Err(BalancingError::UnknownUnit { .. })),
        "{err:?}"
    );

    let err = lookup_session(
        &c,
        &session("10.0.0.1", "2001:db8::1", 6, 1, 2),
        &LiveState::all_up(),
    );
    assert!(
        matches!(err, Err(BalancingError::MixedFamilies { .. })),
        "{err:?}"
    );

    let mut u = unit("u", 2, 1, false);
    u.liveness_profile = Some("missing".to_string());
    let c = config(vec![u], vec![all_to("u")]);
    let err = lookup_session(
        &c,
        &session("10.0.0.1", "10.0.0.2", 6, 1, 2),
        &LiveState::all_up(),
    );
    assert!(
        matches!(err, Err(BalancingError::UnknownProfile { .. })),
        "{err:?}"
    );
}

/// The site: every session to ef1, and a flow for 192.0.2.0/24 written for one
/// direction only.
fn one_direction_site(direction: efb_model::Direction) -> Config {
    let mut to_ef2 = flow(
        "to-ef2",
        150,
        FlowMatch {
            dst_ipv4: Prefix::parse("192.0.2.0/24"),
            ..FlowMatch::default()
        },
        to_unit("ef2"),
    );
    to_ef2.direction = direction;
    config(
        vec![unit("ef1", 2, 4, false), unit("ef2", 2, 4, false)],
        vec![all_to("ef1"), to_ef2],
    )
}

#[test]
fn a_session_whose_reverse_meets_another_filter_is_called_split() {
    let c = one_direction_site(efb_model::Direction::AsWritten);
    let l = look(&c, &session("10.1.1.1", "192.0.2.5", 6, 40000, 443));
    assert_eq!(l.unit.as_deref(), Some("ef2"));
    assert!(l.split);
    let reverse = l.reverse.unwrap_or_default();
    assert!(
        reverse.contains("unit ef1") && reverse.contains("(flow all)") && reverse.contains("split"),
        "{reverse}"
    );
    let json =
        serde_json::to_value(look(&c, &session("192.0.2.5", "10.1.1.1", 6, 443, 40000))).unwrap();
    assert_eq!(
        (json["unit"].as_str(), json["split"].as_bool()),
        (Some("ef1"), Some(true))
    );
}

#[test]
fn direction_both_takes_the_mirror_so_both_directions_meet_one_filter() {
    let c = one_direction_site(efb_model::Direction::Both);
    for s in [
        session("10.1.1.1", "192.0.2.5", 6, 40000, 443),
        session("192.0.2.5", "10.1.1.1", 6, 443, 40000),
    ] {
        let l = look(&c, &s);
        assert_eq!(
            (l.unit.as_deref(), l.flow.as_deref(), l.split, &l.reverse),
            (Some("ef2"), Some("to-ef2"), false, &None),
            "{s:?}"
        );
    }
    let elsewhere = look(&c, &session("10.1.1.1", "198.51.100.7", 6, 40000, 443));
    assert_eq!(
        (elsewhere.unit.as_deref(), elsewhere.split),
        (Some("ef1"), false)
    );
}
