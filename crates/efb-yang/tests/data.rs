//! Data trees: reading JSON through libyang, printing RFC 7951, edits by path, diffs, set
//! lines, records, and validation of a change.

#![allow(clippy::unwrap_used)]

use efb_yang::diff::{self, Change};
use efb_yang::json::{self, Check, PrintOptions};
use efb_yang::setlines;
use efb_yang::validate::{self, Scope};
use efb_yang::{DataPath, DataTree, Schema};

fn schema() -> Schema {
    Schema::load().expect("schema")
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../examples/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn path(schema: &Schema, text: &str) -> DataPath {
    DataPath::parse(schema, text).unwrap()
}

fn normalized(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn example_sites_round_trip_through_libyang_and_our_printer() {
    let schema = schema();
    for name in ["one-filter-site.json", "ten-filter-site.json"] {
        let text = example(name);
        let tree = json::from_json(&schema, &text, Check::Complete).unwrap();
        let printed = json::to_json(&schema, &tree, PrintOptions::default());
        // libyang reads what we print, and it is the same data.
        let again = json::from_json(&schema, &printed, Check::Complete).unwrap();
        assert_eq!(tree, again, "{name}");
        let trusted = json::from_trusted_json(&schema, &printed).unwrap();
        assert_eq!(tree, trusted, "{name}");
        // Printing is stable.
        assert_eq!(
            printed,
            json::to_json(&schema, &again, PrintOptions::default())
        );
    }
}

#[test]
fn printing_follows_rfc_7951() {
    let schema = schema();
    let mut tree = DataTree::new();
    let lines = "set ports port p1 number 1 speed 100g\n\
                 set ecofilter-balancer flow f1 priority 7 match src-port 1024-2047 dst-port 80\n\
                 set ecofilter-balancer flow f1 action drop\n\
                 set ecofilter-balancer flow f1 links l1\n\
                 set ecofilter-balancer link l1 lan-port p1 wan-port p1";
    setlines::apply_lines(&schema, &mut tree, lines).unwrap();
    let printed = normalized(&json::to_json(&schema, &tree, PrintOptions::default()));
    let flow = &printed["ecofilter-balancer:ecofilter-balancer"]["flow"][0];
    assert_eq!(flow["name"], "f1");
    assert_eq!(flow["priority"], 7, "uint32 is a JSON number");
    assert_eq!(
        flow["match"]["dst-port"], 80,
        "the union member port-number is a number"
    );
    assert_eq!(
        flow["match"]["src-port"], "1024-2047",
        "the range member is a string"
    );
    assert_eq!(
        flow["action"]["drop"],
        serde_json::json!([null]),
        "empty is [null]"
    );
    assert_eq!(flow["links"], serde_json::json!(["l1"]));
    assert!(
        printed.get("ecofilter-balancer:ports").is_some(),
        "top-level names are module-qualified"
    );
}

#[test]
fn defaults_are_reported_on_request_only() {
    let schema = schema();
    let mut tree = DataTree::new();
    setlines::apply_lines(&schema, &mut tree, "set ports port p1 number 1 speed 100g").unwrap();
    let plain = normalized(&json::to_json(&schema, &tree, PrintOptions::default()));
    assert!(
        plain["ecofilter-balancer:ports"]["port"][0]
            .get("mtu")
            .is_none()
    );
    let all = normalized(&json::to_json(
        &schema,
        &tree,
        PrintOptions {
            with_defaults: true,
            pretty: true,
        },
    ));
    assert_eq!(all["ecofilter-balancer:ports"]["port"][0]["mtu"], 9000);
    assert_eq!(all["ecofilter-balancer:ports"]["port"][0]["enabled"], true);
    assert_eq!(
        all["ecofilter-balancer:ecofilter-balancer"]["balancing-method"],
        "layer-3"
    );
    // libyang agrees with what we print with defaults.
    json::from_json(
        &schema,
        &json::to_json(
            &schema,
            &tree,
            PrintOptions {
                with_defaults: true,
                pretty: false,
            },
        ),
        Check::Types,
    )
    .unwrap();
}

#[test]
fn bad_json_gets_one_clear_problem_per_fault_with_its_path() {
    let schema = schema();
    let unknown = r#"{"ecofilter-balancer:ports": {"port": [{"name": "p1", "number": 1, "speed": "100g", "colour": "red"}]}}"#;
    let err = json::from_json(&schema, unknown, Check::Types).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("colour"), "{text}");

    let wrong_type = r#"{"ecofilter-balancer:ports": {"port": [{"name": "p1", "number": 40, "speed": "100g"}]}}"#;
    let err = json::from_json(&schema, wrong_type, Check::Types).unwrap_err();
    let problems = err.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].path.contains("port[name='p1']/number"),
        "{problems:?}"
    );

    let dangling = r#"{"ecofilter-balancer:ecofilter-balancer": {"link": [{"name": "l1", "lan-port": "p1", "wan-port": "p2"}]}}"#;
    let err = json::from_json(&schema, dangling, Check::Complete).unwrap_err();
    let problems = err.problems();
    assert_eq!(
        problems.len(),
        2,
        "both references are reported: {problems:?}"
    );
    assert!(
        problems.iter().all(|p| p.path.contains("link[name='l1']")),
        "{problems:?}"
    );

    let not_json = "{\"ecofilter-balancer:ports\": ";
    assert!(json::from_json(&schema, not_json, Check::Types).is_err());
}

#[test]
fn edits_by_path() {
    let schema = schema();
    let mut tree = DataTree::new();
    let mtu = path(&schema, "/ecofilter-balancer:ports/port[name='p1']/mtu");
    let value = schema.value(mtu.node().unwrap(), "9216").unwrap();
    tree.set(&schema, &mtu, Some(value)).unwrap();
    assert_eq!(tree.leaf(&schema, &mtu).unwrap().as_str(), "9216");
    // The key leaf reads back from the entry.
    let name = path(&schema, "/ecofilter-balancer:ports/port[name='p1']/name");
    assert_eq!(tree.leaf(&schema, &name).unwrap().as_str(), "p1");
    // Values are checked against the type.
    assert!(schema.value(mtu.node().unwrap(), "70000").is_err());
    // Choosing one case of a choice removes the other.
    let drop = path(
        &schema,
        "/ecofilter-balancer:ecofilter-balancer/flow[name='f']/action/drop",
    );
    let unit = path(
        &schema,
        "/ecofilter-balancer:ecofilter-balancer/flow[name='f']/action/to-ecofilter/ecofilter-unit",
    );
    tree.set(
        &schema,
        &unit,
        Some(schema.value(unit.node().unwrap(), "u1").unwrap()),
    )
    .unwrap();
    tree.set(&schema, &drop, None).unwrap();
    assert!(tree.contains(&schema, &drop));
    assert!(!tree.contains(&schema, &unit));
    // Delete refuses what is not there; remove does not mind.
    let missing = path(&schema, "/ecofilter-balancer:ports/port[name='p9']");
    assert!(tree.delete(&schema, &missing).is_err());
    assert!(!tree.remove(&missing));
    // Removing the last leaf of a container removes the container.
    tree.delete(&schema, &drop).unwrap();
    let action = path(
        &schema,
        "/ecofilter-balancer:ecofilter-balancer/flow[name='f']/action",
    );
    assert!(!tree.contains(&schema, &action));
    // A list key cannot be changed through its leaf.
    let err = tree.set(
        &schema,
        &name,
        Some(schema.value(name.node().unwrap(), "p2").unwrap()),
    );
    assert!(err.is_err());
}

#[test]
fn set_lines_parse_several_leaves_and_render_back() {
    let schema = schema();
    let mut tree = DataTree::new();
    let text = "set ports port p4-2 number 4 lane 2 speed 10g\n\
                set ports port p4-1 number 4 lane 1 speed 10g\n\
                set ecofilter-balancer link l1 lan-port p4-2 wan-port p4-1\n\
                set ecofilter-balancer ecofilter-unit u1 cores 17\n\
                set ecofilter-balancer flow bgp match dst-port 179 action bypass\n\
                set ecofilter-balancer flow \"with space\" description \"a quoted \\\"value\\\"\"";
    setlines::apply_lines(&schema, &mut tree, text).unwrap();
    let rendered = setlines::render_tree(&schema, &tree);
    assert!(
        rendered.contains(&"set ecofilter-balancer flow bgp match dst-port 179".to_string()),
        "{rendered:#?}"
    );
    assert!(
        rendered.contains(&"set ecofilter-balancer flow bgp action bypass".to_string()),
        "{rendered:#?}"
    );
    assert!(
        rendered.contains(
            &"set ecofilter-balancer flow \"with space\" description \"a quoted \\\"value\\\"\""
                .to_string()
        ),
        "{rendered:#?}"
    );
    // Rendered lines rebuild the same tree.
    let mut again = DataTree::new();
    setlines::apply_lines(&schema, &mut again, &rendered.join("\n")).unwrap();
    assert_eq!(tree, again);
}

#[test]
fn set_line_errors_say_what_would_be_accepted() {
    let schema = schema();
    let mut tree = DataTree::new();
    let cases = [
        (
            "set ports port p1 speed 11g",
            "one of 10g, 25g, 40g, 50g, 100g",
        ),
        ("set ports port p1 mtu 20", "1500..10240"),
        ("set ports prot p1", "expected one of: port"),
        ("set ports port", "needs its name"),
        (
            "set ecofilter-balancer flow f match src-ipv4 10.0.0.300/8",
            "IPv4 prefix",
        ),
        ("sett ports", "expected set, delete, deactivate or activate"),
    ];
    for (line, expected) in cases {
        let err = setlines::apply_lines(&schema, &mut tree, line)
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{line}: {err}");
        assert!(!err.contains("line 1"), "one line is not numbered: {err}");
        // In a text of several lines, the error names the line.
        let text = format!("# a site\n{line}");
        let err = setlines::apply_lines(&schema, &mut tree, &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains(expected), "{err}");
    }
    assert!(tree.is_empty(), "a wrong line changes nothing");
}

#[test]
fn errors_quote_huge_input_by_its_start_and_length() {
    let schema = schema();
    let mut tree = DataTree::new();
    let huge = "A".repeat(400_000);
    for line in [
        format!("set ports port p1 description \"{huge}\""),
        format!("set ports {huge}"),
        format!("{huge} ports"),
        format!("set ports port p1 mtu {huge}"),
        format!("set ports port {huge}"),
    ] {
        let err = setlines::apply_lines(&schema, &mut tree, &line)
            .unwrap_err()
            .to_string();
        assert!(err.len() < 1000, "{} bytes: {}", err.len(), &err[..1000]);
        assert!(err.contains("(400 0"), "the length is said: {err}");
    }
    let path = format!("/ecofilter-balancer:ports/port[name='{huge}']/{huge}");
    let err = DataPath::parse(&schema, &path).unwrap_err().to_string();
    assert!(err.len() < 1000, "{} bytes", err.len());
    assert!(tree.is_empty());
}

#[test]
fn diff_gives_path_level_changes_and_replays() {
    let schema = schema();
    let old = json::from_json(&schema, &example("one-filter-site.json"), Check::Complete).unwrap();
    let mut new = old.clone();
    setlines::apply_lines(
        &schema,
        &mut new,
        "set ecofilter-balancer flow bgp-to priority 320\n\
         delete ecofilter-balancer flow multicast-v6\n\
         set ecofilter-balancer flow dns match ip-proto 17 dst-port 53\n\
         set ecofilter-balancer flow dns action bypass\n\
         delete ecofilter-balancer flow to-filters action\n\
         set ecofilter-balancer flow to-filters action drop",
    )
    .unwrap();
    let changes = diff::diff(&schema, &old, &new);
    let described: Vec<String> = changes.iter().map(|c| c.describe(&schema)).collect();
    assert!(described.contains(&"~ /ecofilter-balancer:ecofilter-balancer/flow[name='bgp-to']/priority = 320 (was 310)".to_string()), "{described:#?}");
    assert!(
        described.contains(
            &"- /ecofilter-balancer:ecofilter-balancer/flow[name='multicast-v6']".to_string()
        ),
        "{described:#?}"
    );
    assert!(
        described
            .contains(&"+ /ecofilter-balancer:ecofilter-balancer/flow[name='dns']".to_string()),
        "{described:#?}"
    );
    // An `empty` leaf is shown by its path alone.
    assert!(
        described.contains(
            &"+ /ecofilter-balancer:ecofilter-balancer/flow[name='to-filters']/action/drop"
                .to_string()
        ),
        "{described:#?}"
    );
    let lines = setlines::render_changes(&schema, &changes);
    assert!(
        lines
            .iter()
            .any(|l| l == "delete ecofilter-balancer flow multicast-v6"),
        "{lines:#?}"
    );
    // A new entry with content is created by its content's lines: fewer lines than
    // path-level changes, and the count says the lines.
    assert!(lines.len() < changes.len());
    assert_eq!(
        efb_yang::digest::digest(&schema, &old, &new, 0).count,
        lines.len()
    );
    // Deletes first: applying them in order gives the new tree.
    let mut replayed = old.clone();
    diff::apply(&schema, &mut replayed, &changes).unwrap();
    assert_eq!(replayed, new);
    let mut from_lines = old.clone();
    setlines::apply_lines(&schema, &mut from_lines, &lines.join("\n")).unwrap();
    assert_eq!(from_lines, new);
    // Only the three flows are records to store again.
    let records = diff::changed_records(&schema, &old, &new);
    assert_eq!(records.len(), 4, "{records:?}");
    assert!(diff::diff(&schema, &old, &old.clone()).is_empty());
}

#[test]
fn changes_list_entries_as_people_count_them() {
    let schema = schema();
    let mut old = DataTree::new();
    let lines = ["p10-0", "p2", "p1", "p10", "p9-1"]
        .iter()
        .map(|p| format!("set ports port {p} number 1"))
        .collect::<Vec<_>>()
        .join("\n");
    setlines::apply_lines(&schema, &mut old, &lines).unwrap();
    let ports = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix("set ports port "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect()
    };
    assert_eq!(
        ports(&setlines::render_tree(&schema, &old)),
        ["p1", "p2", "p9-1", "p10", "p10-0"]
    );
    let mut new = old.clone();
    setlines::apply_lines(
        &schema,
        &mut new,
        "set ports port p10 mtu 9100\nset ports port p3 number 3\nset ports port p1 mtu 9100\n\
         set ports port p2 mtu 9000\n\
         set ecofilter-balancer flow f links l10 links l2 links l1",
    )
    .unwrap();
    let lines = setlines::render_changes(&schema, &diff::diff(&schema, &old, &new));
    // p2's mtu written with its default value (9000) changes nothing in force.
    assert_eq!(ports(&lines), ["p1", "p3", "p10"], "{lines:#?}");
    let links: Vec<&String> = lines.iter().filter(|l| l.contains(" links ")).collect();
    assert_eq!(
        links,
        [
            "set ecofilter-balancer flow f links l1",
            "set ecofilter-balancer flow f links l2",
            "set ecofilter-balancer flow f links l10"
        ],
        "{lines:#?}"
    );
}

#[test]
fn reordering_pairs_is_a_change_that_replays_in_order() {
    let schema = schema();
    let old = json::from_json(&schema, &example("one-filter-site.json"), Check::Complete).unwrap();
    // Move the last pair first by rewriting the unit's pairs in a new order.
    let mut value: serde_json::Value =
        serde_json::from_str(&example("one-filter-site.json")).unwrap();
    let pairs = value["ecofilter-balancer:ecofilter-balancer"]["ecofilter-unit"][0]["pair"]
        .as_array_mut()
        .unwrap();
    let last = pairs.pop().unwrap();
    pairs.insert(0, last);
    let new = json::from_json(&schema, &value.to_string(), Check::Complete).unwrap();
    assert_ne!(old, new, "order of a user-ordered list matters");
    let changes = diff::diff(&schema, &old, &new);
    let mut replayed = old.clone();
    diff::apply(&schema, &mut replayed, &changes).unwrap();
    assert_eq!(replayed, new);
    let printed = normalized(&json::to_json(&schema, &replayed, PrintOptions::default()));
    assert_eq!(
        printed["ecofilter-balancer:ecofilter-balancer"]["ecofilter-unit"][0]["pair"][0]["name"],
        "f1-te15-te16"
    );
}

#[test]
fn records_split_and_rebuild_a_tree() {
    let schema = schema();
    let tree = json::from_json(&schema, &example("ten-filter-site.json"), Check::Complete).unwrap();
    let records = diff::records(&schema, &tree);
    assert_eq!(
        records.len(),
        128 + 4 + 2 + 7 + 1 + 1,
        "ports, links, units, flows, profile, method"
    );
    let mut rebuilt = DataTree::new();
    for (key, data) in &records {
        let text = json::to_json(&schema, data, PrintOptions::default());
        let data = json::from_trusted_json(&schema, &text).unwrap();
        diff::put_record(&schema, &mut rebuilt, key, Some(&data));
        let parsed = diff::RecordKey::parse(&schema, &key.display(&schema)).unwrap();
        assert_eq!(&parsed, key);
    }
    assert_eq!(rebuilt, tree);
}

#[test]
fn a_flow_change_is_validated_with_only_that_flow() {
    let schema = schema();
    let running =
        json::from_json(&schema, &example("one-filter-site.json"), Check::Complete).unwrap();
    let mut candidate = running.clone();
    setlines::apply_lines(
        &schema,
        &mut candidate,
        "set ecofilter-balancer flow new action to-ecofilter ecofilter-unit ef1",
    )
    .unwrap();
    let changed = diff::changed_records(&schema, &running, &candidate);
    assert_eq!(
        validate::validate_change(&schema, &candidate, &changed),
        Ok(Scope::Entries(1))
    );

    // A dangling reference in the changed flow is still caught.
    setlines::apply_lines(
        &schema,
        &mut candidate,
        "set ecofilter-balancer flow new action to-ecofilter ecofilter-unit nope",
    )
    .unwrap();
    let changed = diff::changed_records(&schema, &running, &candidate);
    let problems = validate::validate_change(&schema, &candidate, &changed).unwrap_err();
    assert!(
        problems[0].path.contains("flow[name='new']"),
        "{problems:?}"
    );

    // Deleting the unit flows refer to brings those flows in (and no other), and their
    // references are caught; changing a port brings in no flow at all.
    let mut candidate = running.clone();
    setlines::apply_lines(
        &schema,
        &mut candidate,
        "delete ecofilter-balancer ecofilter-unit ef1",
    )
    .unwrap();
    let changed = diff::changed_records(&schema, &running, &candidate);
    let problems = validate::validate_change(&schema, &candidate, &changed).unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.path.contains("flow[name='to-filters']")),
        "{problems:?}"
    );
    let mut candidate = running.clone();
    setlines::apply_lines(&schema, &mut candidate, "set ports port p1 mtu 9000").unwrap();
    let changed = diff::changed_records(&schema, &running, &candidate);
    assert_eq!(
        validate::validate_change(&schema, &candidate, &changed),
        Ok(Scope::Entries(0))
    );
}

#[test]
fn subtree_replace_and_create() {
    let schema = schema();
    let running =
        json::from_json(&schema, &example("one-filter-site.json"), Check::Complete).unwrap();
    let flow = path(
        &schema,
        "/ecofilter-balancer:ecofilter-balancer/flow[name='bgp-to']",
    );
    let part = running.subtree(&flow);
    assert_eq!(diff::records(&schema, &part).len(), 1);
    let mut tree = running.clone();
    let fragment = json::from_json(
        &schema,
        r#"{"ecofilter-balancer:ecofilter-balancer": {"flow": [{"name": "bgp-to", "priority": 5}]}}"#,
        Check::Types,
    )
    .unwrap();
    tree.replace(&schema, &flow, &fragment);
    let changes = diff::diff(&schema, &running, &tree);
    // The match and action of the flow are gone, the priority changed, nothing else.
    assert!(
        changes.iter().all(|c| flow.contains(c.path())),
        "{changes:?}"
    );
    assert!(
        changes
            .iter()
            .any(|c| matches!(c, Change::Set { new, .. } if new.as_str() == "5"))
    );
    assert!(
        tree.create(&schema, &flow, &fragment).is_err(),
        "create refuses an existing entry"
    );
}

#[test]
fn rpc_input_is_checked_against_the_schema() {
    use efb_yang::rpc;
    let schema = schema();
    let ok = rpc::parse_input(
        &schema,
        "lookup-session",
        &serde_json::json!({"src": "10.0.0.1", "dst": "10.0.0.2", "ip-proto": 6}),
    )
    .unwrap();
    assert_eq!(ok["ip-proto"].as_str(), "6");
    assert_eq!(ok["src-port"].as_str(), "0", "defaults are filled in");
    let bad = rpc::parse_input(
        &schema,
        "lookup-session",
        &serde_json::json!({"src": "10.0.0.300", "ip-proto": 256, "colour": 1}),
    )
    .unwrap_err();
    let text: Vec<String> = bad.iter().map(|p| p.to_string()).collect();
    assert!(
        text.iter()
            .any(|t| t.contains("lookup-session/src") && t.contains("IPv4 or IPv6 address")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.contains("ip-proto") && t.contains("\"256\" is not a protocol")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.contains("colour") && t.contains("parameters are: src, dst")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.contains("lookup-session/dst") && t.contains("missing")),
        "{text:#?}"
    );
    assert!(rpc::parse_input(&schema, "reboot", &serde_json::json!({})).is_err());
    let shaped = rpc::shape_output(
        &schema,
        "lookup-session",
        &serde_json::json!({"bucket": "12", "software-bypass": "false", "reason": "x", "extra": 1}),
    );
    assert_eq!(
        shaped,
        serde_json::json!({"bucket": 12, "software-bypass": false, "reason": "x"})
    );
}

#[test]
fn completion_knows_what_may_come_next() {
    use efb_yang::setlines::{Expect, Verb, expect_next, split_words};
    let schema = schema();
    let next = |line: &str| expect_next(&schema, Verb::Set, &split_words(line).unwrap()).unwrap();
    let names = |e: &Expect| match e {
        Expect::Node { choices, .. } => choices
            .iter()
            .map(|id| schema.node(*id).name.clone())
            .collect::<Vec<_>>(),
        other => panic!("not a node: {other:?}"),
    };
    assert_eq!(
        names(&next("")),
        vec!["ports", "ecofilter-balancer", "liveness"]
    );
    assert!(names(&next("ecofilter-balancer")).contains(&"flow".to_string()));
    match next("ecofilter-balancer flow") {
        Expect::Key { list, key, .. } => {
            assert_eq!(schema.node(list).name, "flow");
            assert_eq!(schema.node(key).name, "name");
        }
        other => panic!("{other:?}"),
    }
    match next("ports port p1 speed") {
        Expect::Value { leaf, .. } => assert_eq!(schema.node(leaf).name, "speed"),
        other => panic!("{other:?}"),
    }
    // After a leaf: its siblings and, climbing out of match, the flow's children.
    let after = names(&next("ecofilter-balancer flow f match dst-port 179"));
    assert!(
        after.contains(&"src-port".to_string()) && after.contains(&"action".to_string()),
        "{after:?}"
    );
    assert!(
        expect_next(
            &schema,
            Verb::Set,
            &split_words("ecofilter-balancer flw").unwrap()
        )
        .is_err()
    );
}

/// Junos's `show | compare`: headers name the place, `-` and `+` lines what went and came,
/// an entry added or removed whole with what it holds.
#[test]
fn compare_is_hierarchical_as_junos_shows_it() {
    let schema = schema();
    let old = json::from_json(&schema, &example("one-filter-site.json"), Check::Complete).unwrap();
    let mut new = old.clone();
    setlines::apply_lines(
        &schema,
        &mut new,
        "set ecofilter-balancer flow bgp-to priority 320\n\
         delete ecofilter-balancer flow multicast-v6\n\
         set ecofilter-balancer flow dns priority 300\n\
         set ecofilter-balancer flow dns match ip-proto 17 dst-port 53\n\
         set ecofilter-balancer flow dns action bypass\n\
         set ports port p2 description \"new uplink\"",
    )
    .unwrap();
    let lines = efb_yang::compare::hierarchical(&schema, &old, &new);
    let text = lines.join("\n");
    let expected_parts = [
        "[edit ports port p2]\n-   description \"link l1 LAN (to subscribers)\";\n+   description \"new uplink\";",
        "[edit ecofilter-balancer flow bgp-to]\n-   priority 310;\n+   priority 320;",
        "[edit ecofilter-balancer]\n+   flow dns {\n+       priority 300;\n+       match {\n+           ip-proto 17;\n+           dst-port 53;\n+       }\n+       action {\n+           bypass;\n+       }\n+   }",
        "-   flow multicast-v6 {",
    ];
    for part in expected_parts {
        assert!(text.contains(part), "{part}\nnot in\n{text}");
    }
    // Removed before added under one header; every line is a header or signed.
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("[edit") || l.starts_with("- ") || l.starts_with("+ ")),
        "{text}"
    );
    assert!(efb_yang::compare::hierarchical(&schema, &old, &old).is_empty());
}

/// A path's predicates: each wrong selector is told with what the node takes.
#[test]
fn path_predicates_are_refused_with_what_the_node_takes() {
    let schema = schema();
    let refusal = |text: &str| DataPath::parse(&schema, text).unwrap_err().to_string();
    let flow = "/ecofilter-balancer:ecofilter-balancer/flow";
    for (text, said) in [
        (format!("{flow}[nam='f']"), "flow needs its key name"),
        (
            format!("{flow}[name='f'][x='1']"),
            "flow is keyed by name only",
        ),
        (
            format!("{flow}[name='f']/links[x='l']"),
            "links items are selected with [.='value']",
        ),
        (
            "/ecofilter-balancer:ecofilter-balancer/balancing-method[x='1']".to_string(),
            "balancing-method takes no predicate",
        ),
    ] {
        let err = refusal(&text);
        assert!(err.contains(said), "{text}: {err}");
    }
    let unit = "/ecofilter-balancer:ecofilter-balancer/ecofilter-unit[name='u']";
    let err = refusal(&format!("{unit}/pair[name='{}']", "p".repeat(300)));
    assert!(err.contains("name: "), "a bad key names the key: {err}");
    let item = path(&schema, &format!("{flow}[name='f']/links[.='l']"));
    assert!(item.display(&schema).ends_with("links[.='l']"));
}

/// Found by fuzzing (tests/fuzz_input.rs): a name holding both kinds of quote (a flow
/// may be named so) was written as a path no reader could read back, and the datastore keys
/// its records by these paths: such a flow committed, the datastore did not open again.
#[test]
fn a_name_with_both_quotes_reads_back_from_its_path() {
    let schema = schema();
    let mut tree = DataTree::new();
    setlines::apply_lines(
        &schema,
        &mut tree,
        r#"set ecofilter-balancer flow "it's \"x\"" priority 7"#,
    )
    .unwrap();
    let flow = path(&schema, "/ecofilter-balancer:ecofilter-balancer/flow");
    let Some(efb_yang::NodeRef::List(list)) = tree.get(&schema, &flow) else {
        panic!("no flow list");
    };
    let keys = list.keys().next().unwrap().to_vec();
    assert_eq!(keys[0].as_str(), "it's \"x\"");
    let entry = DataPath {
        segments: vec![
            flow.segments[0].clone(),
            efb_yang::Segment::with_keys(flow.segments[1].node, keys),
        ],
    };
    let shown = entry.display(&schema);
    assert_eq!(
        shown,
        r#"/ecofilter-balancer:ecofilter-balancer/flow[name='it''s "x"']"#
    );
    assert_eq!(path(&schema, &shown), entry);
    let records = diff::records(&schema, &tree);
    for (key, _) in records {
        let text = key.display(&schema);
        assert_eq!(
            diff::RecordKey::parse(&schema, &text).unwrap(),
            key,
            "{text}"
        );
    }
    // The other forms still read as before.
    for (text, name) in [
        (
            r#"/ecofilter-balancer:ecofilter-balancer/link[name="l'1"]"#,
            "l'1",
        ),
        (
            r#"/ecofilter-balancer:ecofilter-balancer/link[name='l"1']"#,
            "l\"1",
        ),
    ] {
        assert_eq!(path(&schema, text).segments[1].keys[0].as_str(), name);
    }
}

/// Found by fuzzing: a value holding a newline (a description may) was written in set
/// lines with the newline in it, which broke its line in two when read back.
#[test]
fn a_value_with_a_newline_stays_on_its_set_line() {
    let schema = schema();
    let mut tree = DataTree::new();
    setlines::apply_lines(
        &schema,
        &mut tree,
        r#"set ports port p1 description "two\nlines\r\\n""#,
    )
    .unwrap();
    let description = path(
        &schema,
        "/ecofilter-balancer:ports/port[name='p1']/description",
    );
    assert_eq!(
        tree.leaf(&schema, &description).unwrap().as_str(),
        "two\nlines\r\\n"
    );
    let rendered = setlines::render_tree(&schema, &tree);
    assert_eq!(
        rendered,
        [r#"set ports port p1 description "two\nlines\r\\n""#]
    );
    let mut again = DataTree::new();
    setlines::apply_lines(&schema, &mut again, &rendered.join("\n")).unwrap();
    assert_eq!(tree, again);
}

/// Found by fuzzing: choosing a case by its container, with nothing in it yet, removed the
/// other case's leaf and left the enclosing container empty, printed as `"action": {}`.
#[test]
fn choosing_an_empty_case_leaves_no_empty_container() {
    let schema = schema();
    let mut tree = DataTree::new();
    setlines::apply_lines(
        &schema,
        &mut tree,
        "set ecofilter-balancer flow f action bypass\n\
         set ecofilter-balancer flow f action to-ecofilter",
    )
    .unwrap();
    let json = json::to_json(&schema, &tree, PrintOptions::default());
    assert_eq!(
        json,
        r#"{"ecofilter-balancer:ecofilter-balancer":{"flow":[{"name":"f"}]}}"#
    );
}

/// Every reader of set lines (typed, piped, a file, efb-config) goes through this one: a
/// protocol leaf takes a protocol's name for its number, quoted or not, and nothing else
/// does.
#[test]
fn set_lines_take_protocol_names_where_a_protocol_goes_and_only_there() {
    let schema = schema();
    let mut tree = DataTree::new();
    setlines::apply_lines(
        &schema,
        &mut tree,
        "set ecofilter-balancer flow dns match ip-proto \"udp\" dst-port 53\n\
         set ecofilter-balancer flow tcp match ip-proto TCP\n\
         set ecofilter-balancer flow tcp description \"ip-proto tcp\"",
    )
    .unwrap();
    let json = json::to_json(&schema, &tree, PrintOptions::default());
    assert!(
        json.contains("\"ip-proto\":17") && json.contains("\"ip-proto\":6"),
        "{json}"
    );
    assert!(json.contains("\"description\":\"ip-proto tcp\""), "{json}");
    let err = setlines::apply_lines(
        &schema,
        &mut DataTree::new(),
        "set ecofilter-balancer flow dns match ip-proto tpc",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(
            "ip-proto \"tpc\" is not a protocol; expected a protocol number 0-255 or one of icmp"
        ),
        "{err}"
    );
    let err = setlines::apply_lines(
        &schema,
        &mut DataTree::new(),
        "set ecofilter-balancer flow dns priority udp",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("priority \"udp\" is not an integer"), "{err}");
}

/// A leaf set to the value already in force (its default) is no change, and neither is
/// taking out a leaf that held its default; another value is.
#[test]
fn writing_a_default_value_is_not_a_change() {
    let schema = schema();
    let mut old = DataTree::new();
    setlines::apply_lines(&schema, &mut old, "set liveness profile fast interval 20").unwrap();
    let mut same = old.clone();
    setlines::apply_lines(
        &schema,
        &mut same,
        "set liveness profile fast probes-down-count 5",
    )
    .unwrap();
    assert!(
        diff::diff(&schema, &old, &same).is_empty(),
        "{:?}",
        diff::diff(&schema, &old, &same)
    );
    assert!(diff::diff(&schema, &same, &old).is_empty());
    let mut other = old.clone();
    setlines::apply_lines(
        &schema,
        &mut other,
        "set liveness profile fast probes-down-count 3",
    )
    .unwrap();
    assert_eq!(diff::diff(&schema, &old, &other).len(), 1);
}
