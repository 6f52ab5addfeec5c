//! `[log]`: where efbd's log goes, in what form, and the recent events kept for `show log`;
//! what each setting accepts (logging.rs sets the log up from them).

use serde::Deserialize;
use tracing_subscriber::EnvFilter;

use super::SettingRefused;
use crate::record::events::{DEFAULT_RECENT, MAX_RECENT};

/// efbd's log, and the recent events `show log` reads.
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Log {
    /// error, warn, info, debug, trace, or TARGET=LEVEL directives (efbd=debug,info).
    pub level: String,
    /// auto, text, json or journal (see logging.rs).
    pub format: String,
    /// Events (commits, liveness changes, chip refusals...) kept in memory for `show log`.
    pub recent_events: usize,
}

impl Default for Log {
    fn default() -> Log {
        Log {
            level: "info".to_string(),
            format: "auto".to_string(),
            recent_events: DEFAULT_RECENT,
        }
    }
}

/// The formats `log.format` accepts.
pub const FORMATS: [&str; 4] = ["auto", "text", "json", "journal"];

/// The levels a bare word of `log.level` may be.
const LEVELS: [&str; 6] = ["error", "warn", "info", "debug", "trace", "off"];

/// [`LEVELS`] as a refusal says them.
pub(super) const LEVEL_WORDS: &str = "error, warn, info, debug, trace or off";

impl Log {
    /// Refuses log settings efbd could not follow, naming the setting and what it accepts.
    pub fn check(&self) -> Result<(), SettingRefused> {
        self.filter()?;
        log_format(&self.format)?;
        if !(1..=MAX_RECENT).contains(&self.recent_events) {
            return Err(SettingRefused::OutOfRange {
                setting: "log.recent_events".into(),
                value: self.recent_events,
                least: 1,
                most: MAX_RECENT,
            });
        }
        Ok(())
    }

    /// `level` as the log's filter.
    pub fn filter(&self) -> Result<EnvFilter, SettingRefused> {
        filter(&self.level)
    }
}

/// `log.level` as a filter. A bare word must be a level: tracing would read "debg" as
/// the name of a module to log everything of, and nothing would say so.
fn filter(level: &str) -> Result<EnvFilter, SettingRefused> {
    let refuse = |why: String| SettingRefused::LogLevel {
        level: level.to_string(),
        why,
    };
    if level.trim().is_empty() {
        return Err(refuse("empty".into()));
    }
    for directive in level.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let bare = !directive.contains(['=', '[']);
        if bare && !LEVELS.contains(&directive.to_ascii_lowercase().as_str()) {
            return Err(refuse(format!("{directive:?} is not a level")));
        }
    }
    EnvFilter::try_new(level).map_err(|e| refuse(e.to_string()))
}

/// `log.format` when it is one of [`FORMATS`].
pub fn log_format(text: &str) -> Result<&str, SettingRefused> {
    FORMATS
        .into_iter()
        .find(|f| *f == text)
        .ok_or_else(|| SettingRefused::LogFormat {
            format: text.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_levels_and_formats_are_refused_naming_the_setting() {
        let log = |level: &str, format: &str| Log {
            level: level.into(),
            format: format.into(),
            ..Log::default()
        };
        for good in [
            "info",
            "WARN",
            "efbd=debug,info",
            "efbd::record::events=info,warn",
            "off",
        ] {
            assert_eq!(log(good, "json").check(), Ok(()), "{good}");
        }
        for bad in ["debg", "info,verbose", "efbd=loud"] {
            let err = log(bad, "text").check().unwrap_err().to_string();
            assert!(
                err.starts_with("log.level (--log-level)") && err.contains("expected error, warn"),
                "{err}"
            );
        }
        let err = log("info", "xml").check().unwrap_err();
        assert_eq!(
            err,
            SettingRefused::LogFormat {
                format: "xml".into()
            }
        );
        assert_eq!(
            err.to_string(),
            "log.format (--log-format) = \"xml\": expected one of auto, text, json, journal"
        );
        let none = Log {
            recent_events: 0,
            ..Log::default()
        };
        assert!(
            none.check()
                .unwrap_err()
                .to_string()
                .starts_with("log.recent_events = 0")
        );
    }
}
