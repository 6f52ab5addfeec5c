//! The rules of MODEL.md, each seen failing (or warning) on a configuration that breaks
//! it, through the same validation a commit runs.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use efb_model::validation::Validator;
use efb_yang::json::{self, Check};
use efb_yang::{DataTree, NodeKind, Schema, setlines};

fn validator() -> Validator {
    Validator::new(Arc::new(Schema::load().unwrap())).unwrap()
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../examples/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn site(v: &Validator) -> DataTree {
    json::from_json(
        v.schema(),
        &example("one-filter-site.json"),
        Check::Complete,
    )
    .unwrap()
}

fn with_lines(v: &Validator, tree: &DataTree, lines: &str) -> DataTree {
    let mut tree = tree.clone();
    setlines::apply_lines(v.schema(), &mut tree, lines).unwrap();
    tree
}

/// Errors (path, message) of a tree.
fn errors(v: &Validator, tree: &DataTree) -> Vec<String> {
    v.validate(tree, false)
        .report
        .errors
        .iter()
        .map(|p| p.to_string())
        .collect()
}

fn warnings(v: &Validator, tree: &DataTree) -> Vec<String> {
    v.validate(tree, false)
        .report
        .warnings
        .iter()
        .map(|p| p.to_string())
        .collect()
}

fn assert_one(found: &[String], path_part: &str, message_part: &str) {
    let hits: Vec<&String> = found
        .iter()
        .filter(|f| f.contains(path_part) && f.contains(message_part))
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "want one finding with {path_part:?} and {message_part:?} in {found:#?}"
    );
}

#[test]
fn example_sites_are_valid_without_warnings() {
    let v = validator();
    for name in ["one-filter-site.json", "ten-filter-site.json"] {
        let tree = json::from_json(v.schema(), &example(name), Check::Complete).unwrap();
        let validated = v.validate(&tree, false);
        assert!(
            validated.report.errors.is_empty(),
            "{name}: {:#?}",
            validated.report.errors
        );
        assert!(
            validated.report.warnings.is_empty(),
            "{name}: {:#?}",
            validated.report.warnings
        );
    }
}

#[test]
fn a_port_used_twice_is_an_error() {
    let v = validator();
    let tree = with_lines(
        &v,
        &site(&v),
        "set ecofilter-balancer link l3 lan-port p2 wan-port p9-1",
    );
    let found = errors(&v, &tree);
    assert_one(
        &found,
        "link[name='l3']/lan-port",
        "p2 is already used by link l1",
    );
    assert_one(
        &found,
        "f1-te1-te2']/wan-port",
        "p9-1 is already used by link l3",
    );
}

#[test]
fn port_placement_errors() {
    let v = validator();
    let tree = with_lines(
        &v,
        &site(&v),
        "set ports port p5 number 5 lane 1 speed 100g\n\
         set ports port p6 number 6 speed 100g\n\
         set ports port p6-0 number 6 lane 0 speed 25g\n\
         set ports port p7a number 7 lane 3 speed 10g\n\
         set ports port p7b number 7 lane 3 speed 10g",
    );
    let found = errors(&v, &tree);
    assert_one(
        &found,
        "port[name='p5']/lane",
        "a 100g port uses the whole port",
    );
    assert_one(&found, "port[name='p6-0']", "also configured whole as p6");
    assert_one(&found, "port[name='p7b']", "already configured as p7a");
}

#[test]
fn a_round_is_judged_within_its_interval() {
    let v = validator();
    let base = site(&v);
    let tree = with_lines(
        &v,
        &base,
        "set liveness profile standard interval 10 round-timeout 11",
    );
    assert_one(
        &errors(&v, &tree),
        "profile[name='standard']/round-timeout",
        "round-timeout 11 ms is longer than the interval 10 ms",
    );
    let tree = with_lines(
        &v,
        &base,
        "set liveness profile standard interval 10 round-timeout 10",
    );
    assert!(errors(&v, &tree).is_empty());
    // The chip times keep-alives: the software path to it takes none of a short timeout.
    let tree = with_lines(&v, &base, "set liveness profile standard round-timeout 1");
    assert!(errors(&v, &tree).is_empty() && warnings(&v, &tree).is_empty());
}

#[test]
fn unit_rules() {
    let v = validator();
    let base = site(&v);
    let tree = with_lines(&v, &base, "set liveness profile standard active-pairs 9");
    assert_one(
        &errors(&v, &tree),
        "ecofilter-unit[name='ef1']/liveness-profile",
        "needs 9 active pairs but unit ef1 has 8",
    );
    let tree = with_lines(&v, &base, "set liveness profile standard active-pairs 8");
    assert_one(
        &warnings(&v, &tree),
        "ecofilter-unit[name='ef1']/liveness-profile",
        "one failed pair bypasses the whole unit",
    );
    // The type says what the header can carry, so `set`, `?` and commit agree.
    let mut tree = base.clone();
    let refused = setlines::apply_lines(
        v.schema(),
        &mut tree,
        "set ecofilter-balancer ecofilter-unit ef1 cores 256",
    )
    .unwrap_err()
    .to_string();
    assert!(
        refused.contains("cores") && refused.contains("1..255"),
        "{refused}"
    );
    let tree = with_lines(
        &v,
        &base,
        "delete ecofilter-balancer ecofilter-unit ef1 cores",
    );
    assert_one(
        &warnings(&v, &tree),
        "ef1']/cores",
        "left at its default of 1",
    );
    let tree = with_lines(
        &v,
        &base,
        "set ecofilter-balancer ecofilter-unit empty cores 3\nset ecofilter-balancer flow to-filters action to-ecofilter ecofilter-unit empty",
    );
    assert_one(
        &errors(&v, &tree),
        "flow[name='to-filters']/action",
        "unit empty has no pairs",
    );
}

#[test]
fn dangling_references_are_errors_with_their_path() {
    let v = validator();
    let tree = with_lines(
        &v,
        &site(&v),
        "set ecofilter-balancer flow bgp-to links l9\n\
         set ecofilter-balancer ecofilter-unit ef1 liveness-profile nope",
    );
    let found = errors(&v, &tree);
    assert!(
        found
            .iter()
            .any(|e| e.contains("flow[name='bgp-to']/links") && e.contains("l9")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|e| e.contains("ef1']/liveness-profile") && e.contains("nope")),
        "{found:#?}"
    );
}

#[test]
fn too_many_links_is_an_error() {
    let v = validator();
    let mut lines = String::new();
    for n in 1..=32u8 {
        for lane in 0..4u8 {
            lines.push_str(&format!(
                "set ports port x{n}-{lane} number {n} lane {lane} speed 10g\n"
            ));
        }
    }
    // 128 links need 256 ports: reuse ports, the count is what this test is about.
    for l in 0..128 {
        let n = l % 32 + 1;
        lines.push_str(&format!(
            "set ecofilter-balancer link k{l} lan-port x{n}-0 wan-port x{n}-1\n"
        ));
    }
    let tree = with_lines(&v, &DataTree::new(), &lines);
    assert_one(
        &errors(&v, &tree),
        "/ecofilter-balancer:ecofilter-balancer/link:",
        "128 links configured",
    );
}

#[test]
fn warnings_for_conventions_mtu_method_and_overlaps() {
    let v = validator();
    let base = site(&v);
    let tree = with_lines(
        &v,
        &base,
        "set ecofilter-balancer link l1 lan-port p1 wan-port p2",
    );
    let found = warnings(&v, &tree);
    assert_one(&found, "link[name='l1']/lan-port", "not even");
    assert_one(&found, "link[name='l1']/wan-port", "not odd");

    let tree = with_lines(&v, &base, "set ports port p9-0 mtu 9000");
    assert_one(&warnings(&v, &tree), "f1-te1-te2']/lan-port", "needs 9004");

    let tree = with_lines(&v, &base, "set ecofilter-balancer balancing-method dst-ip");
    assert_one(
        &warnings(&v, &tree),
        "balancing-method",
        "not session-symmetric",
    );

    let tree = with_lines(
        &v,
        &base,
        "set ecofilter-balancer flow dns priority 310 match ip-proto 6",
    );
    assert_one(
        &warnings(&v, &tree),
        "flow[name='bgp-to']",
        "flows bgp-to and dns have the same priority 310",
    );
    // Same priority but IPv4 against IPv6: no packet matches both (the example relies on it).
    assert!(warnings(&v, &base).is_empty());
}

#[test]
fn flow_match_rules() {
    let v = validator();
    let tree = with_lines(
        &v,
        &site(&v),
        "set ecofilter-balancer flow r match dst-port 2000-1000\nset ecofilter-balancer flow m match src-mac-mask ff:ff:ff:00:00:00",
    );
    let found = errors(&v, &tree);
    assert_one(&found, "flow[name='r']/match/dst-port", "reversed");
    assert_one(
        &found,
        "flow[name='m']/match/src-mac-mask",
        "needs the address",
    );
}

#[test]
fn a_change_is_checked_like_the_whole_configuration() {
    let v = validator();
    let base = site(&v);
    let config = v.validate(&base, false).config.unwrap();
    let changes = [
        "set ecofilter-balancer flow new action to-ecofilter ecofilter-unit nope",
        "set ecofilter-balancer flow new priority 310 match ip-proto 6",
        "set ecofilter-balancer flow new match dst-port 9-1",
        "set ecofilter-balancer flow to-filters priority 7",
        "delete ecofilter-balancer flow bgp-to",
        "set ecofilter-balancer ecofilter-unit ef1 cores 255",
        "delete ecofilter-balancer ecofilter-unit ef1",
    ];
    for change in changes {
        let candidate = with_lines(&v, &base, change);
        let full = v.validate(&candidate, false);
        let incremental = v.validate_change(&base, &config, &candidate);
        assert_eq!(full.report.errors, incremental.report.errors, "{change}");
        assert_eq!(
            full.report.warnings, incremental.report.warnings,
            "{change}"
        );
        if full.report.errors.is_empty() {
            assert_eq!(full.config, incremental.config, "{change}");
        }
    }
}

#[test]
fn the_typed_model_reads_every_configuration_node() {
    let v = validator();
    let schema = v.schema();
    let read = v.ids().read_nodes();
    let unread: Vec<&str> = schema
        .nodes()
        .filter(|n| schema.is_config_data(n.id) && !n.is_key)
        .filter(|n| {
            matches!(
                n.kind,
                NodeKind::Leaf | NodeKind::LeafList | NodeKind::List | NodeKind::Container
            )
        })
        .filter(|n| !read.contains(&n.id))
        .map(|n| n.schema_path.as_str())
        .collect();
    assert!(
        unread.is_empty(),
        "configuration nodes the model ignores: {unread:#?}"
    );
}

#[test]
fn identical_flows_of_one_priority_are_an_error() {
    let v = validator();
    let tree = with_lines(
        &v,
        &site(&v),
        "set ecofilter-balancer flow twin priority 310 match ip-proto 6 dst-port 179\nset ecofilter-balancer flow twin action drop",
    );
    assert_one(
        &errors(&v, &tree),
        "flow[name='twin']",
        "the chip cannot hold both",
    );
    // The chip holds priorities below 2^24: the model says so.
    let mut tree = site(&v);
    let err = setlines::apply_lines(
        v.schema(),
        &mut tree,
        "set ecofilter-balancer flow p priority 16777215",
    )
    .unwrap_err();
    assert!(err.to_string().contains("0..16777214"), "{err}");
}

/// A load validates the JSON with libyang and the rules side by side; it must find exactly
/// what validating the tree finds: dangling references, a missing mandatory leaf, a rule.
#[test]
fn validating_json_finds_what_validating_the_tree_finds() {
    let v = validator();
    let broken = [
        "set ecofilter-balancer flow bgp-to links l9",
        "delete ecofilter-balancer link l1 wan-port",
        "set ecofilter-balancer link l3 lan-port p2 wan-port p9-1",
        "set ecofilter-balancer flow bgp-to links l9\n\
         set ecofilter-balancer ecofilter-unit ef1 liveness-profile nope\n\
         set ecofilter-balancer link l3 lan-port p2 wan-port p9-1",
    ];
    for lines in broken {
        let tree = with_lines(&v, &site(&v), lines);
        let text = json::to_json(v.schema(), &tree, Default::default());
        let (loaded, validated) = v.validate_json(&text).unwrap();
        assert!(loaded == tree, "{lines}: the same tree");
        let mut from_json: Vec<String> = validated
            .report
            .errors
            .iter()
            .map(|p| p.to_string())
            .collect();
        let mut from_tree = errors(&v, &tree);
        assert!(!from_tree.is_empty(), "{lines}: broken");
        from_json.sort();
        from_tree.sort();
        assert_eq!(from_json, from_tree, "{lines}");
    }
    let (_, valid) = v.validate_json(&example("ten-filter-site.json")).unwrap();
    assert!(valid.report.errors.is_empty() && valid.config.is_some());
    let wrong_type =
        example("one-filter-site.json").replace("\"cores\": 17", "\"cores\": \"many\"");
    assert!(
        v.validate_json(&wrong_type).is_err(),
        "a type error is refused"
    );
}

#[test]
fn flows_that_can_never_match_are_refused_with_the_reason() {
    let v = validator();
    for (lines, why) in [
        (
            "match dst-ipv4 10.0.0.0/8 dst-ipv6 2001:db8::/32 action drop",
            "IPv4 and IPv6 addresses together",
        ),
        (
            "match ip-proto 1 dst-port 80",
            "ip-proto icmp (1) has no ports",
        ),
        (
            "match llc-dsap 66 ip-proto 6",
            "an 802.2 LLC frame carries no IP",
        ),
        (
            "match packet-type 2048 src-ipv6 2001:db8::/32",
            "packet-type 2048 and IPv6 criteria together",
        ),
        (
            "match packet-type 2054 ip-proto 17",
            "packet-type 2054 and IP criteria",
        ),
        (
            "match vlan-depth 1 vlan1-tag 20",
            "vlan1-tag needs at least 2 VLAN tags",
        ),
    ] {
        let tree = with_lines(
            &v,
            &site(&v),
            &format!("set ecofilter-balancer flow x priority 7 {lines}"),
        );
        assert_one(&errors(&v, &tree), "flow[name='x']/match", why);
    }
    let fine = with_lines(
        &v,
        &site(&v),
        "set ecofilter-balancer flow x priority 7 match packet-type 34887 dst-ipv4 10.0.0.0/8 vlan-depth 2 vlan1-tag 20",
    );
    assert!(
        errors(&v, &fine).is_empty(),
        "IPv4 behind MPLS can match: {:?}",
        errors(&v, &fine)
    );
    let mac = with_lines(
        &v,
        &site(&v),
        "set ecofilter-balancer flow x priority 7 direction both match src-mac 00:11:22:33:44:55",
    );
    assert_one(
        &errors(&v, &mac),
        "flow[name='x']/direction",
        "not MAC addresses",
    );
}

#[test]
fn a_one_direction_flow_whose_reverse_goes_elsewhere_is_named_and_direction_both_ends_it() {
    let v = validator();
    let one_way = "set ecofilter-balancer flow to-f1 priority 150 match dst-ipv4 192.0.2.0/24\n\
                   set ecofilter-balancer flow to-f1 action to-ecofilter ecofilter-unit f1\n\
                   set ecofilter-balancer flow to-f1 links l1";
    let base = with_lines(
        &v,
        &site(&v),
        "set ecofilter-balancer flow to-filters action bypass",
    );
    let tree = with_lines(&v, &base, one_way);
    assert_one(
        &warnings(&v, &tree),
        "flow[name='to-f1']",
        "the reverse (src-ipv4 192.0.2.0/24) goes to bypass (flow to-filters)",
    );
    let both = with_lines(
        &v,
        &tree,
        "set ecofilter-balancer flow to-f1 direction both",
    );
    assert!(warnings(&v, &both).is_empty(), "{:#?}", warnings(&v, &both));
    // No flow at all for the reverse: bypassed by default.
    let alone = with_lines(
        &v,
        &with_lines(&v, &base, "delete ecofilter-balancer flow to-filters"),
        one_way,
    );
    assert_one(
        &warnings(&v, &alone),
        "flow[name='to-f1']",
        "bypass (no flow matches it)",
    );
}

#[test]
fn a_port_named_as_the_board_names_another_place_is_refused() {
    let v = validator();
    let tree = with_lines(
        &v,
        &site(&v),
        "set ports port p20-0 number 21 lane 2 speed 25g",
    );
    assert_one(
        &errors(&v, &tree),
        "port[name='p20-0']",
        "p20-0 is the board's name of port 20 lane 0, but this port is port 21 lane 2: name it p21-2",
    );
    let tree = with_lines(&v, &site(&v), "set ports port p7 number 8 speed 100g");
    assert_one(&errors(&v, &tree), "port[name='p7']", "name it p8");
    // The board's own name, or a name of one's own, is fine.
    let fine = with_lines(
        &v,
        &site(&v),
        "set ports port p21-2 number 21 lane 2 speed 25g\nset ports port uplink-7 number 7 speed 100g\nset ports port p7x number 8 speed 100g\nset ports port p99 number 30 lane 1 speed 10g",
    );
    assert!(errors(&v, &fine).is_empty(), "{:?}", errors(&v, &fine));
}
