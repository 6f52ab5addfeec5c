//! Leaf values in the encodings served (PROTO scalars, JSON, JSON_IETF) and back.

use gnmi_proto::gnmi::{Encoding, TypedValue, typed_value::Value as Typed};
use tonic::Status;

use crate::interface::Value;

/// The encodings served; others are refused with UNIMPLEMENTED.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Proto,
    Json,
    JsonIetf,
}

impl Wire {
    pub fn of(encoding: i32) -> Result<Wire, Status> {
        match Encoding::try_from(encoding) {
            Ok(Encoding::Proto) => Ok(Wire::Proto),
            Ok(Encoding::Json) => Ok(Wire::Json),
            Ok(Encoding::JsonIetf) => Ok(Wire::JsonIetf),
            Ok(other) => Err(Status::unimplemented(format!(
                "encoding {} is not served for OpenConfig paths: use PROTO, JSON or JSON_IETF",
                other.as_str_name()
            ))),
            Err(_) => Err(Status::invalid_argument(format!(
                "unknown encoding {encoding}: use PROTO, JSON or JSON_IETF"
            ))),
        }
    }

    pub fn all() -> Vec<i32> {
        vec![
            Encoding::Json as i32,
            Encoding::JsonIetf as i32,
            Encoding::Proto as i32,
        ]
    }
}

/// A leaf's value as the client asked: PROTO as a typed scalar, JSON and JSON_IETF as the
/// leaf's JSON value (RFC 7951 for JSON_IETF: 64-bit numbers as strings, identities
/// module-qualified).
pub fn encode(value: &Value, wire: Wire) -> TypedValue {
    let typed = match (wire, value) {
        (Wire::Proto, Value::Text(t)) => Typed::StringVal(t.clone()),
        (Wire::Proto, Value::Enum(t)) => Typed::StringVal((*t).into()),
        (Wire::Proto, Value::Identity(module, name)) => {
            Typed::StringVal(format!("{module}:{name}"))
        }
        (Wire::Proto, Value::Uint(n)) => Typed::UintVal(*n),
        (Wire::Proto, Value::Number(n)) => Typed::UintVal((*n).into()),
        (Wire::Proto, Value::Bool(b)) => Typed::BoolVal(*b),
        (Wire::Json | Wire::JsonIetf, v) => return encode_json(&json(v, wire), wire),
    };
    TypedValue { value: Some(typed) }
}

/// A JSON value (a leaf's or a subtree's) as the TypedValue of `wire` (JSON or JSON_IETF).
pub fn encode_json(value: &serde_json::Value, wire: Wire) -> TypedValue {
    let bytes = value.to_string().into_bytes();
    let typed = match wire {
        Wire::JsonIetf => Typed::JsonIetfVal(bytes),
        Wire::Json | Wire::Proto => Typed::JsonVal(bytes),
    };
    TypedValue { value: Some(typed) }
}

/// A leaf's JSON value: RFC 7951 for JSON_IETF (64-bit numbers as strings, identities
/// module-qualified).
pub fn json(value: &Value, wire: Wire) -> serde_json::Value {
    let ietf = wire == Wire::JsonIetf;
    match value {
        Value::Text(t) => serde_json::Value::from(t.as_str()),
        Value::Enum(t) => serde_json::Value::from(*t),
        Value::Identity(module, name) if ietf => format!("{module}:{name}").into(),
        Value::Identity(_, name) => serde_json::Value::from(*name),
        Value::Uint(n) if ietf => n.to_string().into(),
        Value::Uint(n) => (*n).into(),
        Value::Number(n) => (*n).into(),
        Value::Bool(b) => (*b).into(),
    }
}

/// A value a client sent or a server replied, as a leaf value: typed scalars as they are,
/// JSON scalars read (numbers, strings of digits, booleans, strings).
pub fn decode(value: &TypedValue) -> Option<Value> {
    match value.value.as_ref()? {
        Typed::StringVal(s) => Some(Value::Text(s.clone())),
        Typed::UintVal(n) => Some(Value::Uint(*n)),
        Typed::IntVal(n) => u64::try_from(*n).ok().map(Value::Uint),
        Typed::BoolVal(b) => Some(Value::Bool(*b)),
        Typed::JsonVal(bytes) | Typed::JsonIetfVal(bytes) => {
            match serde_json::from_slice::<serde_json::Value>(bytes).ok()? {
                serde_json::Value::Bool(b) => Some(Value::Bool(b)),
                serde_json::Value::Number(n) => n.as_u64().map(Value::Uint),
                serde_json::Value::String(s) => Some(match s.parse::<u64>() {
                    Ok(n) => Value::Uint(n),
                    Err(_) => Value::Text(s),
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_encoding_reads_back_as_the_value() {
        for wire in [Wire::Proto, Wire::Json, Wire::JsonIetf] {
            for value in [Value::Uint(u64::MAX), Value::Bool(false)] {
                assert_eq!(
                    decode(&encode(&value, wire)),
                    Some(value.clone()),
                    "{wire:?}"
                );
            }
            assert_eq!(
                decode(&encode(&Value::Enum("UP"), wire)),
                Some(Value::Text("UP".into()))
            );
        }
    }

    #[test]
    fn json_ietf_writes_64_bit_numbers_as_strings_and_qualifies_identities() {
        let speed = Value::Identity("openconfig-if-ethernet", "SPEED_100GB");
        let ietf = |v: &Value| match encode(v, Wire::JsonIetf).value {
            Some(Typed::JsonIetfVal(b)) => String::from_utf8(b).unwrap_or_default(),
            other => panic!("{other:?}"),
        };
        assert_eq!(ietf(&Value::Uint(5)), "\"5\"");
        assert_eq!(ietf(&Value::Number(132)), "132");
        assert_eq!(ietf(&speed), "\"openconfig-if-ethernet:SPEED_100GB\"");
        let plain = match encode(&speed, Wire::Json).value {
            Some(Typed::JsonVal(b)) => String::from_utf8(b).unwrap_or_default(),
            other => panic!("{other:?}"),
        };
        assert_eq!(plain, "\"SPEED_100GB\"");
    }

    #[test]
    fn encodings_not_served_are_refused_naming_those_that_are() {
        let err = Wire::of(Encoding::Ascii as i32).unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unimplemented);
        assert!(err.message().contains("PROTO, JSON or JSON_IETF"));
        assert_eq!(
            Wire::of(99).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
    }
}
