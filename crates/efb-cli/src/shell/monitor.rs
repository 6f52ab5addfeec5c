//! `monitor ...`, as Junos's `monitor interface traffic`: a view drawn again every second
//! until a key is pressed (ports' and flows' counters with their rates per second, pairs'
//! status). Only on a terminal: a script asks `show` for one sample.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant, SystemTime};

use efb_yang::DataPath;
use serde_json::Value as Json;

use super::{Output, Result, Shell, ShellError, fail};
use crate::grammar::{Command, Render, View};
use crate::{pager, view};

/// How often the view is drawn.
const EVERY: Duration = Duration::from_secs(1);

/// What a rate column shows before there are two reads to compute it from.
const NO_RATE: &str = "-";

/// One read of the entries, and when it was made.
struct Sample {
    entries: Vec<Json>,
    at: Instant,
}

impl Shell {
    /// Draws the command's view every second until a key is pressed (Ctrl-C too: it is a
    /// key while the terminal is raw); the terminal is as it was afterwards.
    pub(super) fn monitor(&mut self, command: &Command, rest: &[String]) -> Result<Output> {
        let on_terminal = std::io::stdout().is_terminal() && !self.scripted;
        let Some(keys) = on_terminal.then(pager::Keys::open).flatten() else {
            return fail(format!(
                "{} needs a terminal: it draws its view again every second until a key is \
                 pressed; in a script, show the same once ({})",
                command.words,
                once_instead(command)
            ));
        };
        let started = Instant::now();
        let mut before: Option<Sample> = None;
        loop {
            let (now, lines) = self.sample(command, rest)?;
            let seconds = started.elapsed().as_secs();
            let screen = self.screen(command, rest, seconds, &now, before.as_ref(), lines)?;
            draw(&screen);
            let next = now.at + EVERY;
            before = Some(now);
            if keys
                .within(next.saturating_duration_since(Instant::now()))
                .is_some()
            {
                break;
            }
        }
        Ok(Output::none())
    }

    /// The entries the command's `show` would list now, and its lines when there are none
    /// to draw (`(no port configured)`).
    fn sample(&mut self, command: &Command, rest: &[String]) -> Result<(Sample, Vec<String>)> {
        let names = self.list_names(command)?;
        let output = self.run_get(command, rest)?;
        let at = Instant::now();
        let entries = output
            .data
            .as_ref()
            .and_then(|doc| view::at(doc, &names)?.as_array().cloned())
            .unwrap_or_default();
        Ok((Sample { entries, at }, output.lines))
    }

    /// The JSON member names down to the command's list.
    fn list_names(&self, command: &Command) -> Result<Vec<String>> {
        let list = self.list_path(command)?;
        Ok(view::member_names(self.schema, &list))
    }

    pub(super) fn list_path(&self, command: &Command) -> Result<DataPath> {
        let Some(get) = &command.get else {
            return fail(format!("internal: {} reads no list", command.words));
        };
        DataPath::parse(self.schema, &get.path).map_err(|e| ShellError(e.to_string()))
    }

    /// The lines of one screen: a heading (what, how long, when) and the view, its rate
    /// columns computed against the read before.
    fn screen(
        &self,
        command: &Command,
        rest: &[String],
        seconds: u64,
        now: &Sample,
        before: Option<&Sample>,
        empty: Vec<String>,
    ) -> Result<Vec<String>> {
        let typed = std::iter::once(command.words.clone())
            .chain(rest.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let drawing = match &command.render {
            Some(Render::View(name)) => self.grammar.views.get(name),
            _ => None,
        };
        let Some(drawing) = drawing else {
            return fail(format!("internal: {} has no view to draw", command.words));
        };
        let time = super::humantime_like(SystemTime::now());
        let rates = if drawing.columns.iter().any(|c| c.rate) {
            "; rates are per second since the last drawing"
        } else {
            ""
        };
        let mut lines = vec![
            format!("{typed}    Seconds: {seconds}    Time: {time}"),
            format!("Drawn again every second{rates}. Any key (q, Ctrl-C...) stops."),
            String::new(),
        ];
        if now.entries.is_empty() {
            lines.extend(empty);
            return Ok(lines);
        }
        let key = self.list_key(command)?;
        let (drawing, entries) = with_rates(drawing, &key, now, before);
        let entries: Vec<&Json> = entries.iter().collect();
        lines.extend(view::render_view(&drawing, &entries));
        Ok(lines)
    }

    /// The name of the key of the command's list (entries are matched across reads by it).
    fn list_key(&self, command: &Command) -> Result<String> {
        let list = self.list_path(command)?;
        list.node()
            .and_then(|id| self.schema.node(id).keys.first().copied())
            .map(|k| self.schema.node(k).name.clone())
            .ok_or_else(|| ShellError(format!("internal: {} reads no list", command.words)))
    }
}

/// The `show` that gives in one sample what `command` monitors.
fn once_instead(command: &Command) -> String {
    match command.words.strip_prefix("monitor ") {
        Some("ports") => "show ports statistics".to_string(),
        Some("liveness") => "show liveness profile-status".to_string(),
        Some(rest) => format!("show {rest}"),
        None => "show".to_string(),
    }
}

/// The view with each rate column reading a member of its own (`rate-N`), and the entries
/// with those members: the counter's growth per second since `before`, or [`NO_RATE`]
/// without one (the first drawing, a new entry, a counter that went back: cleared).
fn with_rates(
    drawing: &View,
    key: &str,
    now: &Sample,
    before: Option<&Sample>,
) -> (View, Vec<Json>) {
    let mut drawing = drawing.clone();
    let mut entries = now.entries.clone();
    // By key: a monitor of every flow matches many thousands of entries each second.
    let earlier: HashMap<String, &Json> = before
        .map(|b| {
            b.entries
                .iter()
                .filter_map(|e| Some((view::text(e.get(key)?), e)))
                .collect()
        })
        .unwrap_or_default();
    for (i, column) in drawing.columns.iter_mut().enumerate() {
        if !column.rate {
            continue;
        }
        let member = format!("rate-{i}");
        for entry in &mut entries {
            let was = before.and_then(|b| {
                let same = earlier.get(&view::text(entry.get(key)?))?;
                Some((counter(same, &column.leaf)?, now.at.duration_since(b.at)))
            });
            let shown = match (counter(entry, &column.leaf), was) {
                (None, _) => continue,
                (Some(value), Some((old, elapsed))) if value >= old => rate(value - old, elapsed),
                _ => NO_RATE.to_string(),
            };
            if let Some(object) = entry.as_object_mut() {
                object.insert(member.clone(), Json::String(shown));
            }
        }
        column.leaf = member;
    }
    (drawing, entries)
}

/// A counter of an entry (RFC 7951 gives 64-bit numbers as strings).
fn counter(entry: &Json, leaf: &str) -> Option<u64> {
    let names: Vec<String> = leaf.split('/').map(str::to_string).collect();
    view::text(view::at(entry, &names)?).parse().ok()
}

/// `growth` over `elapsed`, per second, to the nearest whole number.
fn rate(growth: u64, elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    if seconds <= 0.0 {
        return NO_RATE.to_string();
    }
    format!("{:.0}", growth as f64 / seconds)
}

/// One screen, from the top left corner of a cleared terminal; lines past its height are
/// left out (and said), so that the heading stays on the screen.
fn draw(lines: &[String]) {
    let rows = pager::terminal_rows().unwrap_or(usize::MAX);
    let mut shown: Vec<String> = lines
        .iter()
        .map(|l| efb_text_table::escape(l).into_owned())
        .collect();
    if shown.len() + 1 > rows {
        let keep = rows.saturating_sub(2);
        let left = shown.len() - keep;
        shown.truncate(keep);
        shown.push(format!(
            "... {left} more lines: a taller window, or fewer names, shows them"
        ));
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "\x1b[H\x1b[2J{}", shown.join("\n"));
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::{Action, Grammar};

    fn sample(counts: &[(&str, u64)], at: Instant) -> Sample {
        let entries = counts
            .iter()
            .map(|(name, frames)| {
                serde_json::json!({
                    "name": name,
                    "state": { "counters": { "in-frames": frames.to_string() } }
                })
            })
            .collect();
        Sample { entries, at }
    }

    #[test]
    fn rates_are_growth_per_second_and_unknown_until_two_reads() {
        let grammar = Grammar::load().unwrap();
        let drawing = &grammar.views["monitor-ports"];
        let start = Instant::now();
        let first = sample(&[("p1", 10), ("p2", 5)], start);
        let (_, entries) = with_rates(drawing, "name", &first, None);
        let column = drawing.columns.iter().position(|c| c.rate).unwrap();
        let rate_of = |e: &Json| e[format!("rate-{column}")].as_str().unwrap().to_string();
        assert_eq!(rate_of(&entries[0]), NO_RATE);
        // Two seconds later: p1 grew by 30 (15 a second), p2 went back (cleared).
        let second = sample(&[("p1", 40), ("p2", 1)], start + Duration::from_secs(2));
        let (drawn, entries) = with_rates(drawing, "name", &second, Some(&first));
        assert_eq!(rate_of(&entries[0]), "15");
        assert_eq!(rate_of(&entries[1]), NO_RATE);
        let lines = view::render_view(&drawn, &entries.iter().collect::<Vec<_>>());
        assert!(
            lines[1].contains("40") && lines[1].contains("15"),
            "{lines:?}"
        );
    }

    #[test]
    fn a_script_is_told_which_show_gives_one_sample() {
        let grammar = Grammar::load().unwrap();
        let monitors: Vec<&Command> = grammar
            .commands
            .iter()
            .filter(|c| c.action == Some(Action::Monitor))
            .collect();
        assert_eq!(monitors.len(), 3);
        for command in monitors {
            let words: Vec<String> = once_instead(command)
                .split_whitespace()
                .map(str::to_string)
                .collect();
            let (shown, rest) = grammar.find(&words).unwrap();
            assert!(shown.action.is_none(), "{}", command.words);
            assert!(
                rest.is_empty() || shown.switches.contains_key(&rest[0]),
                "{}",
                command.words
            );
        }
    }
}
