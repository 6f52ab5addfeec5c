#![allow(clippy::unwrap_used)]

use super::*;
use efb_yang::json::{Check, from_json};

fn schema() -> Schema {
    Schema::load().unwrap()
}

fn elem(name: &str, keys: &[(&str, &str)]) -> gnmi::PathElem {
    gnmi::PathElem {
        name: name.into(),
        key: keys
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn path(origin: &str, elems: Vec<gnmi::PathElem>) -> gnmi::Path {
    gnmi::Path {
        origin: origin.into(),
        elem: elems,
        ..Default::default()
    }
}

fn tree(schema: &Schema) -> DataTree {
    from_json(
        schema,
        r#"{"ecofilter-balancer:ports": {"port": [
            {"name": "p1", "number": 1, "speed": "100g", "mtu": 9100},
            {"name": "p2", "number": 2, "speed": "100g"}]},
           "ecofilter-balancer:ecofilter-balancer": {"flow": [
            {"name": "f1", "priority": 5, "match": {"dst-port": 179}}]}}"#,
        Check::Types,
    )
    .unwrap()
}

fn shown(schema: &Schema, paths: &[DataPath]) -> Vec<String> {
    paths.iter().map(|p| p.display(schema)).collect()
}

#[test]
fn the_three_origin_styles_name_the_same_node() {
    let s = schema();
    let plain = path(
        "",
        vec![elem("ports", &[]), elem("port", &[("name", "p1")])],
    );
    let pygnmi = path(
        "ecofilter-balancer",
        vec![elem("ports", &[]), elem("port", &[("name", "p1")])],
    );
    let gnmic = path(
        "",
        vec![
            elem("ecofilter-balancer:ports", &[]),
            elem("port", &[("name", "p1")]),
        ],
    );
    let expected = "/ecofilter-balancer:ports/port[name='p1']";
    for p in [plain, pygnmi, gnmic] {
        let pattern = Pattern::parse(&s, None, Some(&p)).unwrap();
        assert_eq!(pattern.data_path(&s).unwrap().display(&s), expected);
    }
}

#[test]
fn the_answer_keeps_the_clients_style() {
    let s = schema();
    let gnmic = path("", vec![elem("ecofilter-balancer:ports", &[])]);
    let pattern = Pattern::parse(&s, None, Some(&gnmic)).unwrap();
    let back = to_gnmi(&s, &pattern.data_path(&s).unwrap(), &pattern.style);
    assert_eq!(back.elem[0].name, "ecofilter-balancer:ports");
    let pygnmi = path("ecofilter-balancer", vec![elem("ports", &[])]);
    let pattern = Pattern::parse(&s, None, Some(&pygnmi)).unwrap();
    let back = to_gnmi(&s, &pattern.data_path(&s).unwrap(), &pattern.style);
    assert_eq!(
        (back.origin.as_str(), back.elem[0].name.as_str()),
        ("ecofilter-balancer", "ports")
    );
}

#[test]
fn prefix_and_path_join_and_their_origins_must_agree() {
    let s = schema();
    let prefix = path("ecofilter-balancer", vec![elem("ports", &[])]);
    let p = path("", vec![elem("port", &[("name", "p1")]), elem("mtu", &[])]);
    let pattern = Pattern::parse(&s, Some(&prefix), Some(&p)).unwrap();
    assert_eq!(
        pattern.data_path(&s).unwrap().display(&s),
        "/ecofilter-balancer:ports/port[name='p1']/mtu"
    );
    let other = path("openconfig", vec![elem("port", &[])]);
    let err = Pattern::parse(&s, Some(&prefix), Some(&other)).unwrap_err();
    assert!(matches!(err, PathError::Invalid(m) if m.contains("disagree")));
}

#[test]
fn unknown_origins_modules_and_elements_are_refused_with_the_right_kind() {
    let s = schema();
    let err = Pattern::parse(&s, None, Some(&path("openconfig", vec![]))).unwrap_err();
    assert!(matches!(err, PathError::Invalid(m) if m.contains("unknown origin")));
    let err = Pattern::parse(
        &s,
        None,
        Some(&path("", vec![elem("ietf-interfaces:interfaces", &[])])),
    )
    .unwrap_err();
    assert!(matches!(err, PathError::Invalid(m) if m.contains("unknown module")));
    let err = Pattern::parse(
        &s,
        None,
        Some(&path("", vec![elem("ports", &[]), elem("prot", &[])])),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PathError::NotInSchema(
            "the model has no element \"prot\" under /ecofilter-balancer:ports; \
             did you mean \"port\"? (expected one of: port)"
                .into()
        )
    );
    let err = Pattern::parse(
        &s,
        None,
        Some(&path("", vec![elem("...", &[]), elem("mtuu", &[])])),
    )
    .unwrap_err();
    assert!(
        matches!(&err, PathError::NotInSchema(m) if m.contains("did you mean \"mtu\"?")),
        "{err:?}"
    );
    assert_eq!(distance("prot", "port"), 2);
    assert_eq!(distance("", "abc"), 3);
}

#[test]
fn keys_are_checked_against_the_list_and_its_types() {
    let s = schema();
    let bad_name = path("", vec![elem("ports", &[]), elem("port", &[("nom", "p1")])]);
    assert!(matches!(
        Pattern::parse(&s, None, Some(&bad_name)).unwrap_err(),
        PathError::Invalid(m) if m.contains("no key \"nom\"")
    ));
    let on_container = path("", vec![elem("ports", &[("name", "x")])]);
    assert!(matches!(
        Pattern::parse(&s, None, Some(&on_container)).unwrap_err(),
        PathError::Invalid(_)
    ));
    // Keys left out are `*` (and cannot name one entry to write).
    let partial = path(
        "",
        vec![elem("ports", &[]), elem("port", &[]), elem("mtu", &[])],
    );
    let pattern = Pattern::parse(&s, None, Some(&partial)).unwrap();
    assert!(pattern.has_wildcards());
    assert!(
        matches!(pattern.data_path(&s).unwrap_err(), PathError::Invalid(m) if m.contains("needs all its keys"))
    );
    let whole = path("", vec![elem("ports", &[]), elem("port", &[])]);
    let pattern = Pattern::parse(&s, None, Some(&whole)).unwrap();
    assert!(
        !pattern.has_wildcards(),
        "a list named last is the whole list"
    );
}

#[test]
fn wildcards_expand_over_the_data() {
    let s = schema();
    let t = tree(&s);
    let any_key = path(
        "",
        vec![
            elem("ports", &[]),
            elem("port", &[("name", "*")]),
            elem("mtu", &[]),
        ],
    );
    let pattern = Pattern::parse(&s, None, Some(&any_key)).unwrap();
    assert!(pattern.has_wildcards());
    // p2 has no mtu set: it has its default.
    assert_eq!(
        shown(&s, &pattern.expand(&s, &t)),
        [
            "/ecofilter-balancer:ports/port[name='p1']/mtu",
            "/ecofilter-balancer:ports/port[name='p2']/mtu"
        ]
    );
    let no_key = path(
        "",
        vec![elem("ports", &[]), elem("port", &[]), elem("mtu", &[])],
    );
    let pattern = Pattern::parse(&s, None, Some(&no_key)).unwrap();
    assert_eq!(pattern.expand(&s, &t).len(), 2, "a key left out is *");
    let no_keys = path("", vec![elem("ports", &[]), elem("port", &[])]);
    let pattern = Pattern::parse(&s, None, Some(&no_keys)).unwrap();
    assert_eq!(pattern.expand(&s, &t).len(), 2);
    let star = path(
        "",
        vec![
            elem("ports", &[]),
            elem("port", &[("name", "p2")]),
            elem("*", &[]),
        ],
    );
    let pattern = Pattern::parse(&s, None, Some(&star)).unwrap();
    assert_eq!(
        shown(&s, &pattern.expand(&s, &t)),
        [
            "/ecofilter-balancer:ports/port[name='p2']/name",
            "/ecofilter-balancer:ports/port[name='p2']/number",
            "/ecofilter-balancer:ports/port[name='p2']/speed",
            "/ecofilter-balancer:ports/port[name='p2']/mtu",
            "/ecofilter-balancer:ports/port[name='p2']/enabled"
        ]
    );
    let deep = path("", vec![elem("...", &[]), elem("dst-port", &[])]);
    let pattern = Pattern::parse(&s, None, Some(&deep)).unwrap();
    assert_eq!(
        shown(&s, &pattern.expand(&s, &t)),
        ["/ecofilter-balancer:ecofilter-balancer/flow[name='f1']/match/dst-port"]
    );
    let root = Pattern::parse(&s, None, None).unwrap();
    assert_eq!(root.expand(&s, &t), vec![DataPath::root()]);
}

#[test]
fn key_values_are_compared_in_canonical_form() {
    let s = schema();
    let t = tree(&s);
    let p = path(
        "",
        vec![
            elem("ports", &[]),
            elem("port", &[("name", "p1")]),
            elem("number", &[]),
        ],
    );
    let pattern = Pattern::parse(&s, None, Some(&p)).unwrap();
    assert_eq!(pattern.expand(&s, &t).len(), 1);
    let bad_type = path(
        "",
        vec![
            elem("ecofilter-balancer", &[]),
            elem("ecofilter-unit", &[("name", "u")]),
            elem("pair", &[("name", "x")]),
        ],
    );
    assert!(Pattern::parse(&s, None, Some(&bad_type)).is_ok());
}

#[test]
fn relation_of_changes_to_a_subscription() {
    let s = schema();
    let sub = path(
        "",
        vec![
            elem("ports", &[]),
            elem("port", &[("name", "*")]),
            elem("mtu", &[]),
        ],
    );
    let pattern = Pattern::parse(&s, None, Some(&sub)).unwrap();
    let mtu = DataPath::parse(&s, "/ports/port[name='p1']/mtu").unwrap();
    let entry = DataPath::parse(&s, "/ports/port[name='p1']").unwrap();
    let speed = DataPath::parse(&s, "/ports/port[name='p1']/speed").unwrap();
    let list = DataPath::parse(&s, "/ports/port").unwrap();
    assert_eq!(pattern.relation(&s, &mtu), Relation::Inside);
    assert_eq!(pattern.relation(&s, &entry), Relation::Above);
    assert_eq!(pattern.relation(&s, &list), Relation::Above);
    assert_eq!(pattern.relation(&s, &speed), Relation::Outside);
    let deep = Pattern::parse(
        &s,
        None,
        Some(&path("", vec![elem("...", &[]), elem("mtu", &[])])),
    )
    .unwrap();
    assert_eq!(deep.relation(&s, &mtu), Relation::Inside);
    assert_eq!(deep.relation(&s, &speed), Relation::Outside);
    let top = Pattern::parse(&s, None, Some(&path("", vec![elem("ports", &[])]))).unwrap();
    assert_eq!(top.relation(&s, &speed), Relation::Inside);
    let one = Pattern::parse(
        &s,
        None,
        Some(&path(
            "",
            vec![elem("ports", &[]), elem("port", &[("name", "p2")])],
        )),
    )
    .unwrap();
    assert_eq!(one.relation(&s, &speed), Relation::Outside);
}

#[test]
#[allow(deprecated)]
fn deprecated_element_strings_are_refused() {
    let s = schema();
    let old = gnmi::Path {
        element: vec!["ports".into()],
        ..Default::default()
    };
    assert!(matches!(
        Pattern::parse(&s, None, Some(&old)).unwrap_err(),
        PathError::Invalid(_)
    ));
}

/// Found by fuzzing: each `...` multiplied the ways a path matched, so that a Get of 24
/// `...` over a small site took 0.6 s and listed each node thousands of times (and more
/// `...` grew without bound). A run of wildcards now means what it says once.
#[test]
fn runs_of_wildcards_match_each_node_once() {
    let s = schema();
    let t = tree(&s);
    let once = Pattern::parse(&s, None, Some(&path("", vec![elem("...", &[])]))).unwrap();
    let all = once.expand(&s, &t);
    let many = path("", (0..200).map(|_| elem("...", &[])).collect());
    let started = std::time::Instant::now();
    let pattern = Pattern::parse(&s, None, Some(&many)).unwrap();
    assert_eq!(pattern.steps, [Step::Descendants]);
    assert_eq!(pattern.expand(&s, &t), all);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    // `*` and `...` in any order: as many levels as `*`, or more.
    let mixed = path(
        "",
        vec![
            elem("...", &[]),
            elem("*", &[]),
            elem("...", &[]),
            elem("port", &[]),
            elem("*", &[]),
            elem("*", &[]),
        ],
    );
    let pattern = Pattern::parse(&s, None, Some(&mixed)).unwrap();
    assert_eq!(
        pattern.steps[..2],
        [Step::Any, Step::Descendants],
        "{:?}",
        pattern.steps
    );
    // Nodes reached through two names alike are listed once.
    let found = Pattern::parse(
        &s,
        None,
        Some(&path("", vec![elem("...", &[]), elem("name", &[])])),
    )
    .unwrap()
    .expand(&s, &t);
    let mut unique = found.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(found.len(), unique.len());
    assert_eq!(found.len(), 3, "{:?}", shown(&s, &found));
}
