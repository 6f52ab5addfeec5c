#![allow(clippy::unwrap_used)]

use super::*;
use efb_yang::json::{Check, from_json};

fn site(schema: &Schema) -> DataTree {
    from_json(
        schema,
        r#"{"ecofilter-balancer:ports": {"port": [
             {"name": "p1", "number": 1, "speed": "100g", "mtu": 9100}]},
           "ecofilter-balancer:ecofilter-balancer": {
             "link": [{"name": "l1", "lan-port": "p1", "wan-port": "p1"}],
             "flow": [{"name": "f1", "priority": 5, "links": ["l1"],
                       "action": {"drop": [null]}}]}}"#,
        Check::Types,
    )
    .unwrap()
}

fn encoder(schema: &Schema, encoding: Encoding, filter: Filter) -> Encoder<'_> {
    Encoder {
        schema,
        encoding,
        filter,
    }
}

fn at(
    schema: &Schema,
    tree: &DataTree,
    path: &str,
    encoding: Encoding,
    filter: Filter,
) -> Option<String> {
    encoder(schema, encoding, filter).node(tree, &DataPath::parse(schema, path).unwrap())
}

#[test]
fn top_nodes_are_module_qualified_in_json_ietf_only() {
    let s = Schema::load().unwrap();
    let t = site(&s);
    let ietf = at(&s, &t, "/", Encoding::JsonIetf, Filter::All).unwrap();
    assert!(
        ietf.starts_with(r#"{"ecofilter-balancer:ports":{"port":[{"name":"p1""#),
        "{ietf}"
    );
    let plain = at(&s, &t, "/", Encoding::Json, Filter::All).unwrap();
    assert!(
        plain.starts_with(r#"{"ports":{"port":[{"name":"p1""#),
        "{plain}"
    );
    // Below the top, names are not qualified (the path says where the value is).
    let below = at(&s, &t, "/ports", Encoding::JsonIetf, Filter::All).unwrap();
    assert!(below.starts_with(r#"{"port":["#), "{below}");
}

#[test]
fn entries_leaves_and_lists() {
    let s = Schema::load().unwrap();
    let t = site(&s);
    assert_eq!(
        at(
            &s,
            &t,
            "/ports/port[name='p1']",
            Encoding::JsonIetf,
            Filter::All
        )
        .unwrap(),
        r#"{"name":"p1","number":1,"speed":"100g","mtu":9100,"enabled":true}"#
    );
    assert_eq!(
        at(
            &s,
            &t,
            "/ports/port[name='p1']/mtu",
            Encoding::Json,
            Filter::All
        )
        .unwrap(),
        "9100"
    );
    assert_eq!(
        at(
            &s,
            &t,
            "/ports/port[name='p1']/name",
            Encoding::Json,
            Filter::All
        )
        .unwrap(),
        r#""p1""#
    );
    assert_eq!(
        at(
            &s,
            &t,
            "/ecofilter-balancer/flow[name='f1']/links",
            Encoding::Json,
            Filter::All
        )
        .unwrap(),
        r#"["l1"]"#
    );
    assert!(
        at(&s, &t, "/ports/port", Encoding::Json, Filter::All)
            .unwrap()
            .starts_with("[{")
    );
    assert_eq!(
        at(
            &s,
            &t,
            "/ports/port[name='p9']",
            Encoding::Json,
            Filter::All
        ),
        None
    );
}

#[test]
fn empty_is_null_in_an_array() {
    let s = Schema::load().unwrap();
    let t = site(&s);
    for encoding in [Encoding::Json, Encoding::JsonIetf] {
        assert_eq!(
            at(
                &s,
                &t,
                "/ecofilter-balancer/flow[name='f1']/action",
                encoding,
                Filter::All
            )
            .unwrap(),
            r#"{"drop":[null]}"#
        );
    }
}

#[test]
fn sixty_four_bit_numbers_are_strings_in_json_ietf_and_numbers_in_json() {
    let s = Schema::load().unwrap();
    let mut t = site(&s);
    let path = DataPath::parse(&s, "/ports/port[name='p1']/state/counters/in-frames").unwrap();
    let value = s
        .value(path.node().unwrap(), "18446744073709551615")
        .unwrap();
    t.set(&s, &path, Some(value)).unwrap();
    let p = "/ports/port[name='p1']/state/counters";
    assert_eq!(
        at(&s, &t, p, Encoding::JsonIetf, Filter::All).unwrap(),
        r#"{"in-frames":"18446744073709551615"}"#
    );
    assert_eq!(
        at(&s, &t, p, Encoding::Json, Filter::All).unwrap(),
        r#"{"in-frames":18446744073709551615}"#
    );
}

#[test]
fn config_and_state_filters() {
    let s = Schema::load().unwrap();
    let mut t = site(&s);
    let path = DataPath::parse(&s, "/ports/port[name='p1']/state/oper-status").unwrap();
    let up = s.value(path.node().unwrap(), "up").unwrap();
    t.set(&s, &path, Some(up)).unwrap();
    assert_eq!(
        at(&s, &t, "/ports", Encoding::Json, Filter::State).unwrap(),
        r#"{"port":[{"name":"p1","state":{"oper-status":"up"}}]}"#
    );
    let config = at(&s, &t, "/ports", Encoding::Json, Filter::Config).unwrap();
    assert!(!config.contains("state"), "{config}");
    // Nothing of the state kind under the flows: nothing to show.
    assert_eq!(
        at(
            &s,
            &t,
            "/ecofilter-balancer/flow[name='f1']/links",
            Encoding::Json,
            Filter::State
        ),
        None
    );
    assert_eq!(
        at(&s, &t, "/", Encoding::JsonIetf, Filter::State).unwrap(),
        r#"{"ecofilter-balancer:ports":{"port":[{"name":"p1","state":{"oper-status":"up"}}]}}"#
    );
}

#[test]
fn telemetry_leaves_include_keys_and_whole_leaf_lists() {
    let s = Schema::load().unwrap();
    let t = site(&s);
    let mut out = Vec::new();
    leaves(
        &s,
        &t,
        &DataPath::parse(&s, "/ecofilter-balancer/flow").unwrap(),
        &mut out,
    );
    let e = encoder(&s, Encoding::JsonIetf, Filter::All);
    let shown: Vec<String> = out
        .iter()
        .map(|(p, v)| format!("{} {}", p.display(&s), v.json(&e)))
        .collect();
    assert_eq!(
        shown,
        [
            "/ecofilter-balancer:ecofilter-balancer/flow[name='f1']/name \"f1\"",
            "/ecofilter-balancer:ecofilter-balancer/flow[name='f1']/priority 5",
            "/ecofilter-balancer:ecofilter-balancer/flow[name='f1']/direction \"as-written\"",
            "/ecofilter-balancer:ecofilter-balancer/flow[name='f1']/links [\"l1\"]",
            "/ecofilter-balancer:ecofilter-balancer/flow[name='f1']/action/drop [null]",
        ]
    );
}

#[test]
fn leaves_at_their_default_are_written_with_it_where_their_node_exists() {
    let s = Schema::load().unwrap();
    let t = site(&s);
    let e = encoder(&s, Encoding::Json, Filter::All);
    let path = |p: &str| DataPath::parse(&s, p).unwrap();
    assert_eq!(
        e.node(&t, &path("/ports/port[name='p1']/enabled")).unwrap(),
        "true"
    );
    assert_eq!(
        e.node(&t, &path("/ecofilter-balancer/balancing-method"))
            .unwrap(),
        r#""layer-3""#
    );
    assert!(
        at(&s, &t, "/ecofilter-balancer", Encoding::Json, Filter::All)
            .unwrap()
            .starts_with(r#"{"balancing-method":"layer-3","#)
    );
    // No entry, no default; state is never a default; CONFIG keeps them, STATE not.
    assert_eq!(e.node(&t, &path("/ports/port[name='p9']/mtu")), None);
    assert_eq!(
        encoder(&s, Encoding::Json, Filter::State)
            .node(&t, &path("/ports/port[name='p1']/enabled")),
        None
    );
    let mut out = Vec::new();
    leaves(&s, &t, &path("/ports/port[name='p1']"), &mut out);
    let shown: Vec<String> = out
        .iter()
        .map(|(p, v)| format!("{} {}", p.display(&s), v.json(&e)))
        .collect();
    assert!(
        shown.contains(&"/ecofilter-balancer:ports/port[name='p1']/enabled true".to_string()),
        "{shown:?}"
    );
    // An empty configuration still has the top container's defaults.
    let empty = DataTree::new();
    assert_eq!(
        at(&s, &empty, "/", Encoding::JsonIetf, Filter::Config).unwrap(),
        r#"{"ecofilter-balancer:ecofilter-balancer":{"balancing-method":"layer-3"}}"#
    );
}

#[test]
fn proto_values_are_scalars_of_the_leafs_type() {
    use typed_value::Value as V;
    let s = Schema::load().unwrap();
    let mut t = site(&s);
    let counter = DataPath::parse(&s, "/ports/port[name='p1']/state/counters/in-frames").unwrap();
    let big = s
        .value(counter.node().unwrap(), "18446744073709551615")
        .unwrap();
    t.set(&s, &counter, Some(big)).unwrap();
    let e = encoder(&s, Encoding::Proto, Filter::All);
    let value = |p: &str| {
        let path = DataPath::parse(&s, p).unwrap();
        let mut out = Vec::new();
        e.leaves(&t, &path, &mut out);
        assert_eq!(out.len(), 1, "{p}: {out:?}");
        e.typed(&out[0].1).value.unwrap()
    };
    assert_eq!(value("/ports/port[name='p1']/mtu"), V::UintVal(9100));
    assert_eq!(value("/ports/port[name='p1']/enabled"), V::BoolVal(true));
    assert_eq!(
        value("/ports/port[name='p1']/speed"),
        V::StringVal("100g".into())
    );
    assert_eq!(
        value("/ports/port[name='p1']/state/counters/in-frames"),
        V::UintVal(u64::MAX)
    );
    assert_eq!(
        value("/ecofilter-balancer/flow[name='f1']/action/drop"),
        V::BoolVal(true)
    );
    let links = value("/ecofilter-balancer/flow[name='f1']/links");
    assert!(
        matches!(&links, V::LeaflistVal(a) if a.element.len() == 1),
        "{links:?}"
    );
}

#[test]
fn identityref_values_name_their_module_in_json_ietf_only() {
    let s = crate::testing::with_identities();
    let t = from_json(
        &s,
        r#"{"ecofilter-balancer:kinds": {"kind": "dpi"}}"#,
        Check::Types,
    )
    .unwrap();
    assert_eq!(
        at(&s, &t, "/kinds/kind", Encoding::JsonIetf, Filter::All).unwrap(),
        r#""ecofilter-balancer:dpi""#
    );
    assert_eq!(
        at(&s, &t, "/kinds/kind", Encoding::Json, Filter::All).unwrap(),
        r#""dpi""#
    );
    assert_eq!(
        at(&s, &t, "/", Encoding::JsonIetf, Filter::All).unwrap(),
        r#"{"ecofilter-balancer:ecofilter-balancer":{"balancing-method":"layer-3"},"ecofilter-balancer:kinds":{"kind":"ecofilter-balancer:dpi"}}"#
    );
    // Both forms read back to the same value.
    let qualified = from_json(
        &s,
        r#"{"ecofilter-balancer:kinds": {"kind": "ecofilter-balancer:dpi"}}"#,
        Check::Types,
    )
    .unwrap();
    assert_eq!(qualified, t);
}
