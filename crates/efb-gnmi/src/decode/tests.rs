#![allow(clippy::unwrap_used)]

use super::*;
use efb_yang::json::{PrintOptions, to_json as print};

fn json(text: &str) -> gnmi::TypedValue {
    gnmi::TypedValue {
        value: Some(typed_value::Value::JsonIetfVal(text.as_bytes().to_vec())),
    }
}

fn typed(v: typed_value::Value) -> gnmi::TypedValue {
    gnmi::TypedValue { value: Some(v) }
}

fn decoded(schema: &Schema, path: &str, value: gnmi::TypedValue) -> Result<String, DecodeError> {
    let path = DataPath::parse(schema, path).unwrap();
    fragment(schema, &path, Some(&value)).map(|t| print(schema, &t, PrintOptions::default()))
}

#[test]
fn a_leaf_inside_its_ancestors() {
    let s = Schema::load().unwrap();
    assert_eq!(
        decoded(&s, "/ports/port[name='p1']/mtu", json("9100")).unwrap(),
        r#"{"ecofilter-balancer:ports":{"port":[{"name":"p1","mtu":9100}]}}"#
    );
}

#[test]
fn scalars_and_numbers_as_strings_are_read_by_type() {
    let s = Schema::load().unwrap();
    let p = "/ports/port[name='p1']/mtu";
    for v in [
        typed(typed_value::Value::JsonVal(b"\"9100\"".to_vec())),
        typed(typed_value::Value::UintVal(9100)),
        typed(typed_value::Value::IntVal(9100)),
    ] {
        assert_eq!(
            decoded(&s, p, v).unwrap(),
            r#"{"ecofilter-balancer:ports":{"port":[{"name":"p1","mtu":9100}]}}"#
        );
    }
    let err = decoded(&s, p, json("\"big\"")).unwrap_err();
    assert!(
        matches!(&err, DecodeError::Invalid(m) if m.contains("mtu")),
        "{err:?}"
    );
}

#[test]
fn a_scalar_in_a_field_its_leaf_does_not_take_is_refused_naming_the_leaf_and_type() {
    let s = Schema::load().unwrap();
    let mtu = "/ports/port[name='p1']/mtu";
    let description = "/ports/port[name='p1']/description";
    for (path, value, expected) in [
        (
            mtu,
            typed_value::Value::StringVal("9500".into()),
            "string_val \"9500\" is not a value of mtu, an integer in 1500..10240: send int_val or uint_val",
        ),
        (
            description,
            typed_value::Value::UintVal(7),
            "uint_val 7 is not a value of description",
        ),
        (
            "/ports/port[name='p1']/enabled",
            typed_value::Value::StringVal("true".into()),
            "send bool_val",
        ),
        (
            "/ports/port[name='p1']",
            typed_value::Value::StringVal("x".into()),
            "a scalar value is for a leaf",
        ),
    ] {
        let err = decoded(&s, path, typed(value)).unwrap_err();
        assert!(
            matches!(&err, DecodeError::Invalid(m) if m.contains(expected) && m.starts_with("/ecofilter-balancer:ports/port[name='p1']")),
            "{err:?}"
        );
    }
    let drop = "/ecofilter-balancer/flow[name='f']/action/drop";
    assert!(
        decoded(&s, drop, typed(typed_value::Value::BoolVal(true)))
            .unwrap()
            .contains(r#""drop":[null]"#)
    );
    let err = decoded(&s, drop, typed(typed_value::Value::BoolVal(false))).unwrap_err();
    assert!(
        matches!(&err, DecodeError::Invalid(m) if m.contains("delete it")),
        "{err:?}"
    );
}

#[test]
fn null_is_only_the_value_of_empty() {
    let s = Schema::load().unwrap();
    for (path, value) in [
        ("/ports/port[name='p1']/description", "null"),
        ("/ports/port[name='p1']/description", "[null]"),
        ("/ports/port[name='p1']", r#"{"description": null}"#),
        ("/ports/port[name='p1']/mtu", "null"),
    ] {
        let err = decoded(&s, path, json(value)).unwrap_err();
        assert!(
            matches!(&err, DecodeError::Invalid(m) if m.contains("got null") || m.contains("got [null]")),
            "{path} {value}: {err:?}"
        );
    }
}

#[test]
fn json_values_are_exactly_one_json_value_even_on_string_leaves() {
    let s = Schema::load().unwrap();
    let description = "/ports/port[name='p1']/description";
    for (bytes, why) in [
        (&b"uplink to the core"[..], "not valid JSON"),
        (b"{{{", "not valid JSON"),
        (b"", "the input is empty"),
        (b"\"x\" garbage", "trailing characters"),
        (b"\"\\ud800\"", "not valid JSON"),
        (b"\"caf\xe9\"", "not UTF-8"),
    ] {
        for value in [
            typed_value::Value::JsonVal(bytes.to_vec()),
            typed_value::Value::JsonIetfVal(bytes.to_vec()),
        ] {
            let err = decoded(&s, description, typed(value)).unwrap_err();
            assert!(
                matches!(&err, DecodeError::Invalid(m)
                    if m.starts_with("/ecofilter-balancer:ports/port[name='p1']/description: ")
                        && m.contains(why)
                        && m.contains("as one JSON value")),
                "{bytes:?}: {err:?}"
            );
        }
    }
    assert!(
        decoded(&s, description, json("\"uplink to the core\""))
            .unwrap()
            .contains("uplink to the core")
    );
    let plain = typed(typed_value::Value::StringVal("uplink to the core".into()));
    assert!(
        decoded(&s, description, plain)
            .unwrap()
            .contains("uplink to the core")
    );
}

#[test]
fn a_member_named_twice_is_refused_with_where_it_is() {
    let s = Schema::load().unwrap();
    let err = decoded(
        &s,
        "/ports",
        json(r#"{"port": [{"name": "p1", "number": 1, "number": 2, "speed": "100g"}]}"#),
    )
    .unwrap_err();
    assert!(
        matches!(&err, DecodeError::Invalid(m)
            if m.contains("/port[name='p1']: member \"number\" appears twice")),
        "{err:?}"
    );
}

#[test]
fn sixty_four_bit_values_as_numbers_or_strings() {
    let s = Schema::load().unwrap();
    // No 64-bit leaf is configuration (a Set of state is refused before this): the
    // conversion is checked on a state counter's type.
    let id = DataPath::parse(&s, "/ports/port[name='p1']/state/counters/in-frames")
        .unwrap()
        .node()
        .unwrap();
    let at = "in-frames";
    let big = Json::String("18446744073709551615".into());
    let reader = Reader {
        schema: &s,
        ietf: true,
    };
    for given in [serde_json::json!(18446744073709551615u64), big.clone()] {
        assert_eq!(reader.scalar(id, &given, at).unwrap(), big);
    }
    assert!(reader.scalar(id, &serde_json::json!(-1), at).is_err());
}

#[test]
fn subtrees_with_qualified_or_plain_names() {
    let s = Schema::load().unwrap();
    let expected =
        r#"{"ecofilter-balancer:ports":{"port":[{"name":"p1","number":1,"speed":"100g"}]}}"#;
    for text in [
        r#"{"number": 1, "speed": "100g"}"#,
        r#"{"ecofilter-balancer:number": 1, "speed": "100g", "name": "p1"}"#,
    ] {
        assert_eq!(
            decoded(&s, "/ports/port[name='p1']", json(text)).unwrap(),
            expected
        );
    }
    assert_eq!(
        decoded(
            &s,
            "/ports",
            json(r#"{"port": [{"name": "p1", "number": 1, "speed": "100g"}]}"#)
        )
        .unwrap(),
        expected
    );
    assert_eq!(
        decoded(
            &s,
            "/",
            json(r#"{"ports": {"port": [{"name": "p1", "number": 1, "speed": "100g"}]}}"#)
        )
        .unwrap(),
        expected
    );
    assert_eq!(
        decoded(
            &s,
            "/ports/port",
            json(r#"[{"name": "p1", "number": 1, "speed": "100g"}]"#)
        )
        .unwrap(),
        expected
    );
}

#[test]
fn empty_leaves_take_null_in_an_array() {
    let s = Schema::load().unwrap();
    let out = decoded(
        &s,
        "/ecofilter-balancer/flow[name='f']/action",
        json(r#"{"drop": [null]}"#),
    )
    .unwrap();
    assert!(out.contains(r#""action":{"drop":[null]}"#), "{out}");
}

#[test]
fn keys_cannot_change_and_foreign_names_are_refused() {
    let s = Schema::load().unwrap();
    let err = decoded(&s, "/ports/port[name='p1']", json(r#"{"name": "p2"}"#)).unwrap_err();
    assert!(
        matches!(&err, DecodeError::Invalid(m) if m.contains("key cannot change")),
        "{err:?}"
    );
    let err = decoded(&s, "/ports", json(r#"{"openconfig:port": []}"#)).unwrap_err();
    assert!(
        matches!(&err, DecodeError::Invalid(m) if m.contains("unknown module")),
        "{err:?}"
    );
    let err = decoded(&s, "/ports", json(r#"{"prot": []}"#)).unwrap_err();
    assert!(
        matches!(&err, DecodeError::Invalid(m) if m.contains("no member \"prot\"")),
        "{err:?}"
    );
    let err = decoded(&s, "/ports/port[name='p1']/name", json(r#""p2""#)).unwrap_err();
    assert!(
        matches!(&err, DecodeError::Invalid(m) if m.contains("cannot be changed")),
        "{err:?}"
    );
    assert!(decoded(&s, "/ports/port[name='p1']/name", json(r#""p1""#)).is_ok());
    let bytes = typed(typed_value::Value::BytesVal(vec![1]));
    assert!(matches!(
        decoded(&s, "/ports", bytes).unwrap_err(),
        DecodeError::Unsupported(_)
    ));
}

#[test]
fn leaf_lists_from_arrays_scalars_and_scalar_arrays() {
    let s = Schema::load().unwrap();
    let p = "/ecofilter-balancer/flow[name='f']/links";
    let expected = r#""links":["l1","l2"]"#;
    assert!(
        decoded(&s, p, json(r#"["l1", "l2"]"#))
            .unwrap()
            .contains(expected)
    );
    let array = typed(typed_value::Value::LeaflistVal(gnmi::ScalarArray {
        element: vec![
            typed(typed_value::Value::StringVal("l1".into())),
            typed(typed_value::Value::StringVal("l2".into())),
        ],
    }));
    assert!(decoded(&s, p, array).unwrap().contains(expected));
    assert!(
        decoded(&s, p, json(r#""l1""#))
            .unwrap()
            .contains(r#""links":["l1"]"#)
    );
}

#[test]
fn decimal64_digits() {
    assert_eq!(decimal(12345, 2), "123.45");
    assert_eq!(decimal(-5, 3), "-0.005");
    assert_eq!(decimal(7, 0), "7");
    assert_eq!(decimal(-1, 18), "-0.000000000000000001");
}

/// Found by fuzzing: a decimal_val's precision is the client's number, and was written as
/// that many zeros (u32::MAX: 4 GB, and the daemon ended).
#[test]
fn a_decimal_past_what_decimal64_holds_is_refused_without_its_zeros() {
    assert_eq!(decimal(5, u32::MAX), "5e-4294967295");
    assert_eq!(decimal(-5, 19), "-5e-19");
    let s = Schema::load().unwrap();
    #[allow(deprecated)]
    let value = typed(typed_value::Value::DecimalVal(gnmi::Decimal64 {
        digits: 5,
        precision: u32::MAX,
    }));
    let e = decoded(&s, "/ports/port[name='p1']/mtu", value).unwrap_err();
    assert!(e.to_string().contains("decimal_val 5e-4294967295"), "{e}");
    assert!(e.to_string().len() < 1000, "{e}");
}

#[test]
fn identityref_values_with_or_without_their_module() {
    let s = crate::testing::with_identities();
    for given in [r#""dpi""#, r#""ecofilter-balancer:dpi""#] {
        assert_eq!(
            decoded(&s, "/kinds/kind", json(given)).unwrap(),
            r#"{"ecofilter-balancer:kinds":{"kind":"ecofilter-balancer:dpi"}}"#
        );
    }
    assert!(decoded(&s, "/kinds/kind", json(r#""filter""#)).is_err());
}

#[test]
fn json_ietf_takes_numbers_and_booleans_as_rfc_7951_writes_them() {
    let s = Schema::load().unwrap();
    let mtu = "/ports/port[name='p1']/mtu";
    let err = decoded(&s, mtu, json("\"9700\"")).unwrap_err();
    assert!(
        matches!(&err, DecodeError::Invalid(m) if m.contains("RFC 7951") && m.contains("9700 without quotes")),
        "{err:?}"
    );
    let enabled = "/ports/port[name='p1']/enabled";
    assert!(decoded(&s, enabled, json("\"true\"")).is_err());
    assert!(decoded(&s, enabled, json("true")).is_ok());
    // gNMI's own JSON is not RFC 7951: a number in a string is read by the leaf's type.
    let loose = typed(typed_value::Value::JsonVal(b"\"9700\"".to_vec()));
    assert!(decoded(&s, mtu, loose).unwrap().contains(r#""mtu":9700"#));
}

#[test]
fn ascii_val_is_not_implemented() {
    let s = Schema::load().unwrap();
    for path in [
        "/ports/port[name='p1']/mtu",
        "/ports/port[name='p1']/description",
    ] {
        let err =
            decoded(&s, path, typed(typed_value::Value::AsciiVal("9500".into()))).unwrap_err();
        assert!(
            matches!(&err, DecodeError::Unsupported(m) if m.contains("ascii_val") && m.contains("string_val")),
            "{err:?}"
        );
    }
}
