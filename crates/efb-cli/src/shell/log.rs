//! `show log`: efbd's recent events (commits, liveness changes, the chip), read from the
//! daemon rather than from its log file, which the shell may not be able to read (another
//! machine, the journal, another account's file).

use efb_mgmt_proto::v1::LogEvent;
use serde_json::Value as Json;

use super::{Flow, Output, Result, Shell};

/// The words of the command itself; those after them choose the kinds.
const COMMAND_WORDS: usize = 2;

impl Shell {
    /// `show log [KIND...]`: every event efbd keeps, or those of the kinds (or groups:
    /// commit, liveness, chip) named after `show log`, newest last.
    pub(super) fn show_log(&mut self, typed: &[String], rest: &[String]) -> Result<(Output, Flow)> {
        let kinds: Vec<String> = typed
            .iter()
            .skip(COMMAND_WORDS)
            .chain(rest)
            .cloned()
            .collect();
        let events = self.client().recent_events(0, kinds)?;
        let data = Json::Array(events.iter().map(json).collect());
        Ok((Output::facts(table(&events), data), Flow::Continue))
    }
}

fn table(events: &[LogEvent]) -> Vec<String> {
    if events.is_empty() {
        return vec!["(no events)".to_string()];
    }
    let mut rows = vec![vec!["Time".to_string(), "Event".into(), "Details".into()]];
    for e in events {
        rows.push(vec![e.time.clone(), e.kind.clone(), details(e)]);
    }
    efb_text_table::align(&rows, &[])
}

/// The fields as `name=value`, as the text log has them; empty ones left out (a commit
/// without a comment), values with spaces quoted.
fn details(event: &LogEvent) -> String {
    let words: Vec<String> = event
        .fields
        .iter()
        .filter(|f| !f.value.is_empty())
        .map(|f| {
            if f.value.contains(char::is_whitespace) || f.value.contains('"') {
                format!("{}={:?}", f.name, f.value)
            } else {
                format!("{}={}", f.name, f.value)
            }
        })
        .collect();
    words.join(" ")
}

/// For `| display json`: the event with its fields as an object.
fn json(event: &LogEvent) -> Json {
    let fields: serde_json::Map<String, Json> = event
        .fields
        .iter()
        .map(|f| (f.name.clone(), Json::String(f.value.clone())))
        .collect();
    serde_json::json!({ "time": event.time, "event": event.kind, "fields": fields })
}

#[cfg(test)]
mod tests {
    use super::*;
    use efb_mgmt_proto::v1::EventField;

    fn event(kind: &str, fields: &[(&str, &str)]) -> LogEvent {
        LogEvent {
            time: "2025-01-02T03:04:05.678Z".into(),
            kind: kind.into(),
            fields: fields
                .iter()
                .map(|(n, v)| EventField {
                    name: n.to_string(),
                    value: v.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn events_are_a_table_of_time_event_and_fields() {
        let lines = table(&[
            event(
                "commit",
                &[
                    ("id", "7"),
                    ("user", "ada"),
                    ("comment", ""),
                    ("hash", "ab"),
                ],
            ),
            event(
                "liveness",
                &[("pair", "f1"), ("reason", "4 keep-alives lost")],
            ),
        ]);
        assert!(lines[0].starts_with("Time") && lines[0].contains("Event"));
        assert!(
            lines[1].ends_with("commit    id=7 user=ada hash=ab"),
            "{lines:?}"
        );
        assert!(
            lines[2].ends_with("liveness  pair=f1 reason=\"4 keep-alives lost\""),
            "{lines:?}"
        );
        assert_eq!(table(&[]), ["(no events)"]);
    }
}
