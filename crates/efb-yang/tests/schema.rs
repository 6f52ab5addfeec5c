//! The embedded module loads in libyang with no error and no warning, and its index holds
//! what the rest of the system relies on.

#![allow(clippy::unwrap_used)]

use efb_yang::schema::{ValueError, Verdict};
use efb_yang::{NodeKind, Schema};

#[test]
fn module_loads_without_warnings() {
    let schema = Schema::load().expect("module loads with no errors or warnings");
    let module = schema.module();
    assert_eq!(module.name, "ecofilter-balancer");
    assert_eq!(module.prefix, "efb");
    assert!(!module.revision.is_empty());
}

#[test]
fn a_module_with_a_warning_is_refused() {
    // libyang warns about a must expression that names a node that does not exist.
    let text: &'static str = Box::leak(
        efb_yang::schema::MODULE_TEXT
            .replacen(
                "leaf balancing-method {",
                "leaf balancing-method {\n      must \"../no-such-node\";",
                1,
            )
            .into_boxed_str(),
    );
    let err = Schema::load_text(text).expect_err("a warning makes the load fail");
    assert!(err.to_string().contains("no-such-node"), "{err}");
}

#[test]
fn index_knows_keys_order_types_and_cases() {
    let schema = Schema::load().unwrap();
    let pair = schema
        .find("/ecofilter-balancer/ecofilter-unit/pair")
        .unwrap();
    let info = schema.node(pair);
    assert_eq!(info.kind, NodeKind::List);
    assert!(info.user_ordered);
    assert_eq!(schema.node(info.keys[0]).name, "name");

    let mtu = schema.find("/ports/port/mtu").unwrap();
    assert_eq!(schema.node(mtu).default.as_deref(), Some("9000"));
    assert_eq!(schema.node(mtu).accepts(), "an integer in 1500..10240");

    let speed = schema.find("/ports/port/speed").unwrap();
    assert_eq!(
        schema.node(speed).accepts(),
        "one of 10g, 25g, 40g, 50g, 100g"
    );

    let drop = schema.find("/ecofilter-balancer/flow/action/drop").unwrap();
    let unit = schema
        .find("/ecofilter-balancer/flow/action/to-ecofilter")
        .unwrap();
    assert!(schema.node(drop).cases.len() == 1);
    assert_eq!(schema.node(drop).cases[0].case, "drop");
    assert_eq!(schema.node(unit).cases[0].case, "to-ecofilter");

    let state = schema.find("/ports/port/state").unwrap();
    assert!(!schema.node(state).config);
    assert!(schema.rpcs().len() == 2 && schema.notifications().len() == 2);
}

#[test]
fn only_flows_can_be_validated_entry_by_entry() {
    let schema = Schema::load().unwrap();
    let names: Vec<&str> = schema
        .independent_lists()
        .iter()
        .map(|id| schema.node(*id).name.as_str())
        .collect();
    // ports, links, units and profiles are targets of leafrefs; flows are not.
    assert_eq!(names, vec!["flow"]);
}

#[test]
fn every_node_has_a_description_for_the_shell() {
    let schema = Schema::load().unwrap();
    let missing: Vec<&str> = schema
        .nodes()
        .filter(|n| !matches!(n.kind, NodeKind::Input | NodeKind::Output))
        .filter(|n| n.description.trim().is_empty())
        .map(|n| n.schema_path.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "nodes without a description: {missing:?}"
    );
}

#[test]
fn a_refused_value_says_why_by_the_leafs_type() {
    let schema = Schema::load().unwrap();
    let mtu = schema.find("/ports/port/mtu").unwrap();
    assert_eq!(schema.value(mtu, "9000").unwrap().as_str(), "9000");
    let refused = |text: &str| schema.value(mtu, text).unwrap_err();
    assert_eq!(
        refused("99999"),
        ValueError::Refused {
            text: "99999".into(),
            verdict: Verdict::OutOfRange
        }
    );
    assert_eq!(refused("big").to_string(), "\"big\" is not an integer");
    let speed = schema.find("/ports/port/speed").unwrap();
    assert!(matches!(
        schema.value(speed, "fast"),
        Err(ValueError::Refused {
            verdict: Verdict::NotOneOfTheNames,
            ..
        })
    ));
    let port = schema.find("/ports/port").unwrap();
    assert_eq!(
        schema.value(port, "p1").unwrap_err().to_string(),
        "port takes no value"
    );
}
