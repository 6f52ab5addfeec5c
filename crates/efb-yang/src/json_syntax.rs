//! The JSON checks libyang would not make: a member named twice in one object (libyang
//! keeps the last unless it validates completely, so two readers of one file disagreed),
//! bytes after the value, lone UTF-16 surrogates. Both the configuration input and
//! libyang's JSON reader run them, so they live below both.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::Problem;

/// Checks that `text` is exactly one JSON value and that no object in it names a member
/// twice. The problem's path is where the object holding the repeated member is, in the
/// form of data paths: `/ecofilter-balancer:ports/port[name='p1']`, an entry of an array
/// by its `name` member (every list of the model is keyed by it) when the entry gave it
/// before the repeat, else by position as in a JSON pointer (`/port/0`). Its message names
/// the member, the line and the column. One streaming pass, no tree built.
pub fn check_json(text: &str) -> Result<(), Problem> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let mut path = Vec::new();
    let mut repeated = None;
    let walked = Walk {
        path: &mut path,
        repeated: &mut repeated,
    }
    .deserialize(&mut reader)
    .and_then(|()| reader.end());
    let Err(e) = walked else {
        return Ok(());
    };
    Err(match repeated {
        Some(Repeated { pointer, name }) => Problem::new(
            pointer,
            format!(
                "member \"{}\" appears twice in this object (line {}, column {}): \
                 a JSON object names each member once",
                crate::text::excerpt(&name),
                e.line(),
                e.column()
            ),
        ),
        None if text.trim().is_empty() => Problem::new("", "no JSON value: the input is empty"),
        None => Problem::new("", format!("not valid JSON: {e}")),
    })
}

/// A step from a JSON value to one inside it.
enum Step<'de> {
    Member(Cow<'de, str>),
    /// An array's entry: its position, and its `name` member once read.
    Entry(usize, Option<Cow<'de, str>>),
}

struct Repeated {
    pointer: String,
    name: String,
}

fn pointer(path: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Member(name) => {
                out.push('/');
                out.push_str(&name.replace('~', "~0").replace('/', "~1"));
            }
            Step::Entry(_, Some(key)) if key.contains('\'') => {
                out.push_str(&format!("[name=\"{}\"]", crate::text::excerpt(key)));
            }
            Step::Entry(_, Some(key)) => {
                out.push_str(&format!("[name='{}']", crate::text::excerpt(key)));
            }
            Step::Entry(i, None) => out.push_str(&format!("/{i}")),
        }
    }
    out
}

/// Visits one JSON value, keeping the path to it, to report where a member repeats.
struct Walk<'a, 'de> {
    path: &'a mut Vec<Step<'de>>,
    repeated: &'a mut Option<Repeated>,
}

impl<'de> Walk<'_, 'de> {
    fn below(&mut self) -> Walk<'_, 'de> {
        Walk {
            path: self.path,
            repeated: self.repeated,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, 'de> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, reader: D) -> Result<(), D::Error> {
        reader.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut items: A) -> Result<(), A::Error> {
        for index in 0.. {
            self.path.push(Step::Entry(index, None));
            let more = items.next_element_seed(self.below())?;
            self.path.pop();
            if more.is_none() {
                break;
            }
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut members: A) -> Result<(), A::Error> {
        let mut seen = Names::default();
        while let Some(name) = members.next_key_seed(Name)? {
            if !seen.insert(name.clone()) {
                *self.repeated = Some(Repeated {
                    pointer: pointer(self.path),
                    name: name.into_owned(),
                });
                return Err(de::Error::custom("a member repeats"));
            }
            let names_entry = name == "name";
            self.path.push(Step::Member(name));
            let key = if names_entry {
                members.next_value_seed(Key(self.below()))?
            } else {
                members.next_value_seed(self.below())?;
                None
            };
            self.path.pop();
            if let (Some(key), Some(Step::Entry(_, slot))) = (key, self.path.last_mut()) {
                *slot = Some(key);
            }
        }
        Ok(())
    }
}

/// The value of a `name` member: kept when it is a string (the entry's key), walked like
/// any other value when it is not.
struct Key<'a, 'de>(Walk<'a, 'de>);

impl<'de> DeserializeSeed<'de> for Key<'_, 'de> {
    type Value = Option<Cow<'de, str>>;

    fn deserialize<D: de::Deserializer<'de>>(self, reader: D) -> Result<Self::Value, D::Error> {
        reader.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_, 'de> {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(key)))
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(key.to_string())))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, items: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(items).map(|()| None)
    }

    fn visit_map<A: MapAccess<'de>>(self, members: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(members).map(|()| None)
    }
}

/// The member names of one object. Most objects have a handful of members, compared
/// fastest in a vector; one with many goes to a hash set, so that an object of a million
/// members costs a million lookups, not a million squared comparisons.
#[derive(Default)]
struct Names<'de> {
    few: Vec<Cow<'de, str>>,
    many: HashSet<Cow<'de, str>>,
}

const FEW_NAMES: usize = 16;

impl<'de> Names<'de> {
    /// False when `name` was there already.
    fn insert(&mut self, name: Cow<'de, str>) -> bool {
        if self.few.contains(&name) {
            return false;
        }
        if self.few.len() < FEW_NAMES {
            self.few.push(name);
            return true;
        }
        self.many.insert(name)
    }
}

/// A member name, borrowed from the input unless it holds escapes.
struct Name;

impl<'de> DeserializeSeed<'de> for Name {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, reader: D) -> Result<Self::Value, D::Error> {
        reader.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Name {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(name))
    }

    fn visit_str<E>(self, name: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(name.to_string()))
    }

    fn visit_string<E>(self, name: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(name))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_member_named_twice_is_refused_with_its_object_and_line() {
        let text = "{\"a:b\": {\"flow\": [{\"name\": \"f\"}, {\"name\": \"g\",\n \"priority\": 1, \"priority\": 2}]}}";
        let problem = check_json(text).unwrap_err();
        assert_eq!(problem.path, "/a:b/flow[name='g']");
        assert!(
            problem.message.contains("\"priority\" appears twice")
                && problem.message.contains("line 2"),
            "{problem}"
        );
        // The same names in different objects are not repeats.
        assert!(check_json(r#"{"a": {"x": 1}, "b": {"x": 1}, "c": [{"x": 1}, {"x": 2}]}"#).is_ok());
        // An entry that repeats a member before naming itself is shown by position.
        let problem = check_json(r#"{"flow": [{"name": "f"}, {"a": 1, "a": 2, "name": "g"}]}"#);
        assert_eq!(problem.unwrap_err().path, "/flow/1");
        // Escapes do not hide a repeat; pointer characters are escaped.
        let problem = check_json(r#"{"a/b~": {"k": 1, "\u006b": 2}}"#).unwrap_err();
        assert_eq!(problem.path, "/a~1b~0");
    }

    #[test]
    fn large_objects_find_repeats_past_the_first_few_names() {
        let mut members: Vec<String> = (0..1000).map(|i| format!("\"m{i}\": {i}")).collect();
        assert!(check_json(&format!("{{{}}}", members.join(","))).is_ok());
        members.push("\"m999\": 0".into());
        let problem = check_json(&format!("{{{}}}", members.join(","))).unwrap_err();
        assert!(problem.message.contains("\"m999\""), "{problem}");
        members.pop();
        members.push("\"m3\": 0".into());
        assert!(check_json(&format!("{{{}}}", members.join(","))).is_err());
    }

    #[test]
    fn trailing_bytes_lone_surrogates_and_nothing_are_not_json() {
        for bad in [
            "{} garbage",
            r#""x" garbage"#,
            r#""\ud800""#,
            r#"{"\udc00": 1}"#,
            "{{{",
            "",
            "  ",
        ] {
            let problem = check_json(bad).unwrap_err();
            assert!(problem.path.is_empty(), "{bad}: {problem}");
        }
        assert!(check_json(r#""\ud83d\ude00""#).is_ok());
        assert!(check_json(" {} \n").is_ok());
    }
}
