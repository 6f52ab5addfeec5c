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

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::json::{self, Check};
use crate::schema::Schema;
use crate::tree::DataTree;
use crate::{Error, setlines, validate};

pub use crate::json_syntax::check_json;

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
    read_content(&origin, file, size, limit)
}

/// Reads a configuration from a file the caller opened (and judged: efbd opens its
/// factory default with its own checks of owner and mode), named `origin` in refusals:
/// a regular file within `limit`, UTF-8, not empty.
pub fn read_opened(origin: &str, file: File, limit: &Limit) -> Result<Content, InputError> {
    let opened = file.metadata().map_err(|e| unreadable(origin, &e))?;
    refuse_irregular(origin, &opened)?;
    read_content(origin, file, opened.len(), limit)
}

/// The content of an open regular file of `size` bytes (as it was when opened).
fn read_content(origin: &str, file: File, size: u64, limit: &Limit) -> Result<Content, InputError> {
    check_size(origin, size, limit)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // A file that grows while it is read stops one byte past the limit.
    file.take(limit.max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(origin, &e))?;
    if bytes.len() as u64 > limit.max_bytes {
        return Err(too_large(
            origin,
            format!("more than {}", limit.describe()),
            limit,
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| InputError::NotText {
        origin: origin.to_string(),
        offset: e.utf8_error().valid_up_to(),
    })?;
    from_text(origin, text, limit)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn limit() -> Limit {
        Limit::mib(1, "--max-input-mib")
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
