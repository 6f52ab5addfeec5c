use super::*;
use crate::fixtures::unit;
use efb_model::Prefix;

fn flow(name: &str, priority: u32, matches: FlowMatch, action: Action) -> Flow {
    Flow {
        name: name.into(),
        priority,
        direction: Default::default(),
        links: Vec::new(),
        matches,
        action,
        description: None,
    }
}

/// A flow that matches both directions of its sessions, as DNS to a unit should.
fn both(mut flow: Flow) -> Flow {
    flow.direction = efb_model::Direction::Both;
    flow
}

fn to(unit: &str) -> Action {
    Action::ToUnit(unit.into())
}

fn udp(lo: u16, hi: u16) -> FlowMatch {
    FlowMatch {
        ip_proto: Some(17),
        dst_port: Some(PortRange { lo, hi }),
        ..FlowMatch::default()
    }
}

fn net(prefix: &str) -> FlowMatch {
    FlowMatch {
        dst_ipv4: Prefix::parse(prefix),
        ..FlowMatch::default()
    }
}

/// Units ef1 and ef2 (2 pairs, 8 cores each) and the flows given.
fn config(flows: &[&Flow]) -> Config {
    let mut c = Config::default();
    for u in [unit("ef1", 2, 8), unit("ef2", 2, 8)] {
        c.units.insert(u.name.clone(), u);
    }
    for f in flows {
        c.flows.insert(f.name.clone(), Arc::new((*f).clone()));
    }
    c
}

#[test]
fn an_added_flow_takes_its_traffic_from_no_flow() {
    let dns = both(flow("dns", 200, udp(53, 53), to("ef2")));
    assert_eq!(
        flow_consequences(&config(&[]), &config(&[&dns])),
        [
            "flow dns added (priority 200, udp dst-port 53 (both directions), every link): that traffic goes to \
          unit ef2 instead of bypass; its sessions meet filter cores that have not seen them"
        ]
    );
}

#[test]
fn an_added_flow_over_a_lower_bypass_flow_names_it() {
    // `web` overlaps part of dns's traffic and `all` the rest; `rest` is below the
    // catch-all and never saw any of it.
    let web = flow("web", 100, net("192.0.2.0/24"), to("ef1"));
    let all = flow("all", 10, FlowMatch::default(), Action::Bypass);
    let rest = flow("rest", 5, FlowMatch::default(), Action::Drop);
    let dns = both(flow("dns", 200, udp(53, 53), to("ef2")));
    assert_eq!(
        flow_consequences(
            &config(&[&web, &all, &rest]),
            &config(&[&web, &all, &rest, &dns])
        ),
        [
            "flow dns added (priority 200, udp dst-port 53 (both directions), every link): that traffic goes to \
          unit ef2 instead of unit ef1 (flow web) or bypass (flow all); its sessions meet \
          filter cores that have not seen them"
        ]
    );
}

#[test]
fn a_higher_overlapping_flow_keeps_its_traffic_and_is_named() {
    let mgmt = flow("mgmt", 300, net("10.0.0.0/8"), Action::Bypass);
    let dns = both(flow("dns", 200, udp(53, 53), to("ef2")));
    assert_eq!(
        flow_consequences(&config(&[&mgmt]), &config(&[&mgmt, &dns])),
        [
            "flow dns added (priority 200, udp dst-port 53 (both directions), every link): that traffic goes to \
          unit ef2 instead of bypass, except where flow mgmt (priority 300) matches; its \
          sessions meet filter cores that have not seen them"
        ]
    );
}

#[test]
fn a_flow_wholly_under_a_higher_one_changes_nothing() {
    let all = flow("all", 300, FlowMatch::default(), to("ef1"));
    let dns = both(flow("dns", 200, udp(53, 53), to("ef2")));
    assert!(flow_consequences(&config(&[&all]), &config(&[&all, &dns])).is_empty());
}

#[test]
fn a_bypass_flow_where_no_flow_matched_changes_nothing() {
    let bgp = flow("bgp", 500, udp(179, 179), Action::Bypass);
    assert!(flow_consequences(&config(&[]), &config(&[&bgp])).is_empty());
}

#[test]
fn a_removed_flow_leaves_its_traffic_to_the_flow_below() {
    let all = flow("all", 10, FlowMatch::default(), to("ef1"));
    let dns = both(flow("dns", 200, udp(53, 53), to("ef2")));
    assert_eq!(
        flow_consequences(&config(&[&all, &dns]), &config(&[&all])),
        [
            "flow dns removed (priority 200, udp dst-port 53 (both directions), every link): that traffic goes \
          to unit ef1 (flow all) instead of unit ef2; its sessions meet filter cores that \
          have not seen them"
        ]
    );
}

#[test]
fn a_changed_action_says_where_the_traffic_goes_now() {
    let web = flow("web", 100, net("192.0.2.0/24"), to("ef1"));
    let bypassed = flow("web", 100, net("192.0.2.0/24"), Action::Bypass);
    assert_eq!(
        flow_consequences(&config(&[&web]), &config(&[&bypassed])),
        [
            "flow web changed: its traffic now goes to bypass instead of unit ef1; its sessions \
          lose filtering"
        ]
    );
}

#[test]
fn a_wider_match_takes_traffic_and_a_narrower_one_gives_it_back() {
    let all = flow("all", 10, FlowMatch::default(), to("ef1"));
    let narrow = both(flow("dns", 200, udp(53, 53), to("ef2")));
    let wide = both(flow("dns", 200, udp(53, 54), to("ef2")));
    assert_eq!(
        flow_consequences(&config(&[&all, &narrow]), &config(&[&all, &wide])),
        [
            "flow dns changed (dst-port 53 -> 53-54): newly matched traffic goes to unit ef2 \
          instead of unit ef1 (flow all); its sessions meet filter cores that have not seen \
          them"
        ]
    );
    assert_eq!(
        flow_consequences(&config(&[&all, &wide]), &config(&[&all, &narrow])),
        [
            "flow dns changed (dst-port 53-54 -> 53): traffic no longer matched goes to unit \
          ef1 (flow all) instead of unit ef2; its sessions meet filter cores that have not \
          seen them"
        ]
    );
}

#[test]
fn a_raised_priority_takes_only_from_the_flows_it_passes() {
    // `mgmt` sits between the old and the new priority; `all` stays below both, so what
    // dns takes comes from mgmt alone, and no traffic came from no flow.
    let all = flow("all", 10, FlowMatch::default(), to("ef1"));
    let mgmt = flow("mgmt", 250, net("10.0.0.0/8"), Action::Drop);
    let low = both(flow("dns", 200, udp(53, 53), to("ef2")));
    let mut high = low.clone();
    high.priority = 300;
    assert_eq!(
        flow_consequences(
            &config(&[&all, &mgmt, &low]),
            &config(&[&all, &mgmt, &high])
        ),
        [
            "flow dns changed (priority 200 -> 300): newly matched traffic goes to unit ef2 \
          instead of drop (flow mgmt); its sessions meet filter cores that have not seen \
          them"
        ]
    );
}

#[test]
fn changed_links_are_told_in_words() {
    let everywhere = both(flow("dns", 200, udp(53, 53), to("ef2")));
    let mut one = everywhere.clone();
    one.links = vec!["l1".into()];
    assert_eq!(
        flow_consequences(&config(&[&everywhere]), &config(&[&one])),
        [
            "flow dns changed (links every link -> l1): traffic no longer matched goes to \
          bypass instead of unit ef2; its sessions lose filtering"
        ]
    );
}

#[test]
fn a_description_is_not_a_consequence() {
    let web = flow("web", 100, net("192.0.2.0/24"), to("ef1"));
    let mut described = web.clone();
    described.description = Some("the web farm".into());
    assert!(flow_consequences(&config(&[&web]), &config(&[&described])).is_empty());
}

#[test]
fn a_removed_unit_names_its_size_and_the_flows_that_fed_it() {
    let dns = both(flow("dns", 200, udp(53, 53), to("ef2")));
    let before = config(&[&dns]);
    let mut after = config(&[]);
    after.units.remove("ef2");
    assert_eq!(
        flow_consequences(&before, &after),
        [
            "flow dns removed (priority 200, udp dst-port 53 (both directions), every link): that traffic goes \
             to bypass instead of unit ef2; its sessions lose filtering",
            "unit ef2 removed: its 2 pairs and 256 buckets are gone; flow dns sent traffic \
             to it",
        ]
    );
}

#[test]
fn a_removed_pair_gives_its_share_of_buckets_to_the_others() {
    let mut before = Config::default();
    before.units.insert("ef1".into(), unit("ef1", 4, 16));
    let mut after = Config::default();
    let mut three = unit("ef1", 4, 16);
    three.pairs.remove(3);
    after.units.insert("ef1".into(), three);
    assert_eq!(
        flow_consequences(&before, &after),
        ["unit ef1: pair p3 removed; its 256 of 1 024 buckets (25 %) go to the other pairs"]
    );
    assert_eq!(
        flow_consequences(&after, &before),
        ["unit ef1: pair p3 added; it takes 256 of 1 024 buckets (25 %) from the other pairs"]
    );
}

#[test]
fn a_removed_middle_pair_counts_its_own_buckets() {
    // 3 pairs x 5 cores: 15 slots, 256 buckets; the middle pair has slots 5-9, so
    // buckets b with b mod 15 in 5..10: 17 full rounds of 5 plus 256 - 255 = 1 left over
    // (bucket 255 is slot 0).
    let mut before = Config::default();
    before.units.insert("ef1".into(), unit("ef1", 3, 5));
    let mut after = Config::default();
    let mut two = unit("ef1", 3, 5);
    two.pairs.remove(1);
    after.units.insert("ef1".into(), two);
    assert_eq!(
        flow_consequences(&before, &after),
        ["unit ef1: pair p1 removed; its 85 of 256 buckets (33 %) go to the other pairs"]
    );
}

#[test]
fn a_flow_is_described_with_its_leaves() {
    let mut f = flow("voice", 7, udp(5060, 5061), Action::Drop);
    f.matches.vlan_tags[0] = Some(100);
    f.matches.src_ipv4 = Prefix::parse("10.0.0.0/8");
    f.matches.ip_proto = Some(99);
    f.links = vec!["l2".into(), "l1".into()];
    assert_eq!(
        describe(&f),
        "priority 7, vlan0-tag 100 src-ipv4 10.0.0.0/8 ip-proto 99 dst-port 5060-5061, \
         links l1, l2"
    );
}

#[test]
fn many_flow_changes_are_summed_up() {
    let flows: Vec<Flow> = (0..TOLD_FLOWS + 3)
        .map(|i| {
            flow(
                &format!("f{i:02}"),
                100,
                udp(1000 + i as u16, 1000 + i as u16),
                to("ef1"),
            )
        })
        .collect();
    let refs: Vec<&Flow> = flows.iter().collect();
    let told = flow_consequences(&config(&[]), &config(&refs));
    assert_eq!(told.len(), TOLD_FLOWS + 2);
    assert_eq!(
        told[TOLD_FLOWS],
        "sessions of flows f00, f01 and 18 more are split: their reverse goes elsewhere (the \
         warnings say where; `direction both` keeps them together)"
    );
    assert_eq!(
        told[TOLD_FLOWS + 1],
        "3 more flows added, removed or changed: their consequences are not told one by one"
    );
}

#[test]
fn a_one_direction_flow_to_a_unit_is_told_splitting_its_sessions() {
    let all = flow("all", 10, FlowMatch::default(), to("ef1"));
    let dns = flow("dns", 200, udp(53, 53), to("ef2"));
    let told = flow_consequences(&config(&[&all]), &config(&[&all, &dns]));
    assert_eq!(
        told.last().map(String::as_str),
        Some(
            "sessions of flow dns are split: the reverse (src-port 53) goes to unit ef1 (flow \
             all) (`direction both` keeps them together)"
        ),
        "{told:#?}"
    );
    let together = both(dns.clone());
    let told = flow_consequences(&config(&[&all]), &config(&[&all, &together]));
    assert!(told.iter().all(|t| !t.contains("split")), "{told:#?}");
}
