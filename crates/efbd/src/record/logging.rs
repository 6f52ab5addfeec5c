//! Where efbd's log goes and in what form (`log.format`): text for a terminal or a file,
//! JSON (one object per line: the event's fields, its spans and their fields) for log
//! collectors, or the systemd journal's own protocol, where each field becomes a journal
//! field (`EFB_EVENT=commit`). `auto`, the default, writes to the journal when systemd runs
//! efbd (its standard error is the journal's stream), text otherwise.

use std::os::fd::AsFd;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::settings::{Log, SettingRefused, log_format};

/// Journal fields are upper case; ours carry this prefix (`EFB_EVENT`, `EFB_UNIT`).
const JOURNAL_PREFIX: &str = "EFB";

/// Where the log goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    Text,
    Json,
    Journal,
}

/// The writer for `format`: `auto` is the journal when `journal_stream` (systemd's
/// `$JOURNAL_STREAM`, "DEVICE:INODE") names `stderr` (its device and inode), text
/// otherwise. A copy of standard error passed on to a child does not fool it.
pub fn choose(
    format_setting: &str,
    journal_stream: Option<&str>,
    stderr: Option<(u64, u64)>,
) -> Result<Writer, SettingRefused> {
    Ok(match log_format(format_setting)? {
        "text" => Writer::Text,
        "json" => Writer::Json,
        "journal" => Writer::Journal,
        _ if is_journal(journal_stream, stderr) => Writer::Journal,
        _ => Writer::Text,
    })
}

fn is_journal(journal_stream: Option<&str>, stderr: Option<(u64, u64)>) -> bool {
    let parsed = journal_stream.and_then(|v| {
        let (dev, ino) = v.split_once(':')?;
        Some((dev.parse::<u64>().ok()?, ino.parse::<u64>().ok()?))
    });
    parsed.is_some() && parsed == stderr
}

/// Standard error's device and inode.
fn stderr_identity() -> Option<(u64, u64)> {
    let stat = nix::sys::stat::fstat(std::io::stderr().as_fd()).ok()?;
    Some((stat.st_dev as u64, stat.st_ino as u64))
}

/// Sets up the log as `log` says; an error names the setting (the journal unreachable
/// with `log.format = "journal"`).
pub fn init(log: &Log) -> Result<Writer, SettingRefused> {
    let filter = log.filter()?;
    let stream = std::env::var("JOURNAL_STREAM").ok();
    let mut writer = choose(&log.format, stream.as_deref(), stderr_identity())?;
    let journal = match writer {
        Writer::Journal => match tracing_journald::layer() {
            Ok(layer) => Some(
                layer
                    .with_syslog_identifier("efbd".into())
                    .with_field_prefix(Some(JOURNAL_PREFIX.into())),
            ),
            // auto: standard error still goes to the journal, as text.
            Err(_) if log.format == "auto" => {
                writer = Writer::Text;
                None
            }
            Err(e) => return Err(SettingRefused::NoJournal(e.to_string())),
        },
        _ => None,
    };
    let registry = tracing_subscriber::registry().with(filter);
    let text = || {
        tracing_subscriber::fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
    };
    match (writer, journal) {
        (Writer::Journal, Some(layer)) => registry.with(layer).init(),
        (Writer::Json, _) => registry
            .with(
                text()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(true),
            )
            .init(),
        _ => registry.with(text()).init(),
    }
    Ok(writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_writes_to_the_journal_only_when_standard_error_is_its_stream() {
        let stderr = Some((25, 4711));
        assert_eq!(choose("auto", Some("25:4711"), stderr), Ok(Writer::Journal));
        // Inherited from a parent that systemd runs: standard error is elsewhere now.
        assert_eq!(choose("auto", Some("25:4712"), stderr), Ok(Writer::Text));
        assert_eq!(choose("auto", None, stderr), Ok(Writer::Text));
        assert_eq!(choose("auto", Some("garbage"), None), Ok(Writer::Text));
        // Asked for: as asked, wherever standard error goes.
        assert_eq!(choose("text", Some("25:4711"), stderr), Ok(Writer::Text));
        assert_eq!(choose("json", Some("25:4711"), stderr), Ok(Writer::Json));
        assert_eq!(choose("journal", None, None), Ok(Writer::Journal));
    }
}
