//! Configuration that comes from outside the process: a file named to the shell, efbd or
//! efb-config, the content of a management API load, a gNMI JSON value. One reader, one
//! verdict, whatever the door:
//!
//! - a file is read only when it is a regular file (a FIFO would block the reader, a device
//!   such as /dev/zero would never end) and no larger than a limit each tool takes as a
//!   setting;
//! - the format is decided by the first character that is not white space: `{` or `[` is
//!   RFC 7951 JSON, anything else `set` / `delete` lines;
//! - input with nothing in it (no bytes, white space, only comments) is refused: loaded
//!   with `override` it would delete the whole configuration, which takes an explicit `{}`;
//! - JSON is checked for what libyang would let through silently ([`check_json`]): a
//!   member named twice in one object (libyang keeps the last unless it validates
//!   completely, so two readers of one file disagreed), bytes after the value, lone
//!   UTF-16 surrogates.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::json::{self, Check};
use crate::schema::Schema;
use crate::tree::DataTree;
use crate::{Error, Problem, setlines, validate};

/// The largest configuration input read unless a setting says otherwise: a 100 000-flow
/// configuration is about 20 MiB of JSON, and the design speaks of hundreds of thousands.
pub const DEFAULT_MAX_INPUT_MIB: u64 = 256;

const MIB: u64 = 1024 * 1024;

/// How large an input may be, and the setting that says so (named in the refusal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limit {
    pub max_bytes: u64,
    /// How the user raises it: `--max-input-mib`, `max_input_mib`...
    pub setting: String,
}

impl Limit {
    pub fn mib(mib: u64, setting: impl Into<String>) -> Limit {
        Limit {
            max_bytes: mib.saturating_mul(MIB),
            setting: setting.into(),
        }
    }

    fn describe(&self) -> String {
        if self.max_bytes.is_multiple_of(MIB) {
            format!("{} MiB", self.max_bytes / MIB)
        } else {
            format!("{} bytes", self.max_bytes)
        }
    }
}

/// How a configuration is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// RFC 7951 JSON of the module.
    Json,
    /// The shell's `set` / `delete` lines.
    SetLines,
}

/// A configuration as read: its format and its text, known to hold something.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Content {
    pub format: Format,
    pub text: String,
}

/// Why an input is refused. The message names the input and says what would be taken.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {origin}: {message}")]
    Unreadable {
        origin: String,
        kind: std::io::ErrorKind,
        message: String,
    },
    #[error("{origin} is {kind}, not a regular file: give a file of RFC 7951 JSON or set lines")]
    NotRegular { origin: String, kind: &'static str },
    #[error("{origin} is {size}, more than the limit of {limit} (raise it with {setting})")]
    TooLarge {
        origin: String,
        /// "300 MiB", or "more than 256 MiB" when it grew while being read.
        size: String,
        limit: String,
        setting: String,
    },
    #[error(
        "{origin} is not UTF-8 text (byte {offset} is not): expected RFC 7951 JSON or set lines"
    )]
    NotText { origin: String, offset: usize },
    #[error(
        "{origin} {holds}: expected RFC 7951 JSON or set lines; to remove the whole \
         configuration, load an empty JSON object `{{}}`"
    )]
    Empty { origin: String, holds: &'static str },
}

impl InputError {
    /// The input was read and is not a configuration (rather than not readable at all).
    pub fn is_content(&self) -> bool {
        matches!(self, InputError::NotText { .. } | InputError::Empty { .. })
    }
}

/// Reads a configuration file: a regular file within `limit`, UTF-8, not empty; its
/// format decided by its first character.
pub fn read_file(path: &Path, limit: &Limit) -> Result<Content, InputError> {
    let origin = path.display().to_string();
    let (file, size) = open_regular(path, &origin)?;
    check_size(&origin, size, limit)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // A file that grows while it is read stops one byte past the limit.
    file.take(limit.max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(&origin, &e))?;
    if bytes.len() as u64 > limit.max_bytes {
        return Err(too_large(
            &origin,
            format!("more than {}", limit.describe()),
            limit,
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| InputError::NotText {
        origin: origin.clone(),
        offset: e.utf8_error().valid_up_to(),
    })?;
    from_text(&origin, text, limit)
}

/// Content that came as text: within `limit`, not empty; its format decided by its first
/// character.
pub fn from_text(origin: &str, text: String, limit: &Limit) -> Result<Content, InputError> {
    let format = match text.trim_start().chars().next() {
        Some('{' | '[') => Format::Json,
        _ => Format::SetLines,
    };
    check_text(origin, format, &text, limit)?;
    Ok(Content { format, text })
}

/// Checks content whose format the sender named: within `limit`, and not empty.
pub fn check_text(
    origin: &str,
    format: Format,
    text: &str,
    limit: &Limit,
) -> Result<(), InputError> {
    check_size(origin, text.len() as u64, limit)?;
    let holds = if text.is_empty() {
        "is empty"
    } else if text.trim().is_empty() {
        "holds only white space"
    } else if format == Format::SetLines && !has_command(text) {
        "holds only comments and blank lines"
    } else {
        return Ok(());
    };
    Err(InputError::Empty {
        origin: origin.to_string(),
        holds,
    })
}

/// Whether set lines hold a line that does something (as `setlines::apply_lines` skips
/// blank lines and `#` comments).
fn has_command(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim();
        !line.is_empty() && !line.starts_with('#')
    })
}

impl Content {
    /// The configuration as a tree: JSON read through libyang with `check`; set lines
    /// applied to an empty configuration (and with `Check::Complete`, validated by libyang).
    pub fn tree(&self, schema: &Schema, check: Check) -> Result<DataTree, Error> {
        match self.format {
            Format::Json => json::from_json(schema, &self.text, check),
            Format::SetLines => {
                let mut tree = DataTree::new();
                setlines::apply_lines(schema, &mut tree, &self.text)?;
                if check == Check::Complete {
                    validate::validate(schema, &tree).map_err(Error::Invalid)?;
                }
                Ok(tree)
            }
        }
    }
}

/// Opens `path` if it is a regular file, with its size. The type is checked before opening
/// (opening a FIFO waits for a writer) and again on the open file, in case the path was
/// replaced in between; opening without blocking makes that second look safe.
fn open_regular(path: &Path, origin: &str) -> Result<(File, u64), InputError> {
    let before = std::fs::metadata(path).map_err(|e| unreadable(origin, &e))?;
    refuse_irregular(origin, &before)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| unreadable(origin, &e))?;
    let opened = file.metadata().map_err(|e| unreadable(origin, &e))?;
    refuse_irregular(origin, &opened)?;
    Ok((file, opened.len()))
}

fn refuse_irregular(origin: &str, metadata: &Metadata) -> Result<(), InputError> {
    let kind = metadata.file_type();
    let kind = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(InputError::NotRegular {
        origin: origin.to_string(),
        kind,
    })
}

fn check_size(origin: &str, size: u64, limit: &Limit) -> Result<(), InputError> {
    if size <= limit.max_bytes {
        return Ok(());
    }
    let shown = if size >= MIB {
        format!("{:.1} MiB", size as f64 / MIB as f64)
    } else {
        format!("{size} bytes")
    };
    Err(too_large(origin, shown, limit))
}

fn too_large(origin: &str, size: String, limit: &Limit) -> InputError {
    InputError::TooLarge {
        origin: origin.to_string(),
        size,
        limit: limit.describe(),
        setting: limit.setting.clone(),
    }
}

fn unreadable(origin: &str, e: &std::io::Error) -> InputError {
    InputError::Unreadable {
        origin: origin.to_string(),
        kind: e.kind(),
        message: e.to_string(),
    }
}

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

    fn limit() -> Limit {
        Limit::mib(1, "--max-input-mib")
    }

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

    #[test]
    fn the_format_is_decided_by_the_first_character() {
        let json = from_text("t", "\n  {\"a\": 1}".into(), &limit()).unwrap();
        assert_eq!(json.format, Format::Json);
        let lines = from_text("t", "# site\nset ports port p1 number 1\n".into(), &limit());
        assert_eq!(lines.unwrap().format, Format::SetLines);
        assert_eq!(
            from_text("t", "{}".into(), &limit()).unwrap().text,
            "{}",
            "an explicit empty configuration is content"
        );
    }

    #[test]
    fn input_with_nothing_in_it_is_refused() {
        for (text, holds) in [
            ("", "is empty"),
            (" \n\t\r\n", "holds only white space"),
            (
                "# nothing yet\n\n   # still nothing\n",
                "holds only comments",
            ),
        ] {
            let e = from_text("EMPTY.json", text.into(), &limit()).unwrap_err();
            let message = e.to_string();
            assert!(
                e.is_content()
                    && message.starts_with(&format!("EMPTY.json {holds}"))
                    && message.contains("load an empty JSON object `{}`"),
                "{message}"
            );
        }
        assert!(check_text("the load", Format::Json, "  ", &limit()).is_err());
    }

    #[test]
    fn files_that_are_not_regular_or_too_large_are_refused_before_reading() {
        for (path, kind) in [
            ("/dev/zero", "a character device"),
            ("/dev/null", "a character device"),
            ("/tmp", "a directory"),
        ] {
            let e = read_file(Path::new(path), &limit()).unwrap_err();
            assert!(
                matches!(&e, InputError::NotRegular { kind: k, .. } if *k == kind),
                "{e}"
            );
        }
        let dir = std::env::temp_dir().join(format!("efb-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.json");
        std::fs::write(&big, vec![b' '; 2 * MIB as usize + 1]).unwrap();
        let message = read_file(&big, &limit()).unwrap_err().to_string();
        assert!(
            message.contains(
                "is 2.0 MiB, more than the limit of 1 MiB (raise it with --max-input-mib)"
            ),
            "{message}"
        );
        let latin1 = dir.join("latin1.set");
        std::fs::write(&latin1, b"set ports port caf\xe9 number 1\n").unwrap();
        let e = read_file(&latin1, &limit()).unwrap_err();
        assert!(matches!(e, InputError::NotText { offset: 18, .. }), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = std::env::temp_dir().join(format!("efb-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let e = read_file(&fifo, &limit()).unwrap_err();
        assert!(
            e.to_string()
                .contains("is a FIFO (named pipe), not a regular file"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
