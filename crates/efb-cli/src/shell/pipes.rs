//! What follows `|`: parsed and checked before the command runs (a mistyped pipe after
//! `commit` must not leave the commit done and the line in error), then applied to the
//! command's lines or data; and `show | compare [rollback N]`, a stage of its own.

use efb_yang::schema::Schema;
use efb_yang::{diff, json, setlines};
use serde_json::Value as Json;

use super::{Output, Result, ShellError, fail};

/// `show | compare` (Some(None)) or `show | compare rollback N` (Some(Some(N))).
pub(super) fn compare_stage(
    words: &[String],
    pipes: &[Vec<String>],
) -> Result<Option<Option<u32>>> {
    if words != ["show"] {
        return Ok(None);
    }
    rollback_of(pipes)
}

/// Operational mode's `show configuration | compare rollback N` (Junos's): the running
/// configuration against commit N of history; plain `| compare` there has nothing to
/// compare (no candidate is being edited) and says so.
pub(super) fn operational_compare_stage(
    words: &[String],
    pipes: &[Vec<String>],
) -> Result<Option<u32>> {
    if words != ["show", "configuration"] {
        return Ok(None);
    }
    match rollback_of(pipes)? {
        None => Ok(None),
        Some(Some(n)) => Ok(Some(n)),
        Some(None) => fail(
            "show configuration | compare takes rollback N here (running against commit N of \
             history); in configuration mode, show | compare shows the candidate's changes",
        ),
    }
}

fn rollback_of(pipes: &[Vec<String>]) -> Result<Option<Option<u32>>> {
    let Some(first) = pipes
        .first()
        .filter(|p| p.first().is_some_and(|w| w == "compare"))
    else {
        return Ok(None);
    };
    match &first[1..] {
        [] => Ok(Some(None)),
        [rollback, n] if rollback == "rollback" => n
            .parse()
            .map(|n| Some(Some(n)))
            .map_err(|_| ShellError(format!("compare rollback: \"{n}\" is not a commit number"))),
        _ => fail("compare takes nothing, or rollback N (compare with commit N of history)"),
    }
}

/// A stage after `|`, checked before the command runs (a mistyped pipe after `commit`
/// must not leave the commit done and the line in error).
#[derive(Debug)]
pub(super) enum Pipe {
    Match(regex::Regex),
    Except(regex::Regex),
    /// From the first line that matches to the end.
    Find(regex::Regex),
    Count,
    Last(usize),
    /// Everything at once, without the pager.
    NoMore,
    DisplayJson,
    DisplaySet,
    /// The lines go to a file (Junos's `| save FILE`).
    Save(std::path::PathBuf),
}

const PIPE_CHOICES: &str = "match REGEX, except REGEX, find REGEX, count, last N, no-more, \
                            display json, display set, save FILE";

impl Pipe {
    pub(super) fn parse(words: &[String]) -> Result<Pipe> {
        let regex = |pattern: &str| {
            regex::Regex::new(pattern).map_err(|e| {
                ShellError(format!(
                    "bad regular expression {}: {e}",
                    efb_yang::text::excerpt(pattern)
                ))
            })
        };
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        Ok(match words.as_slice() {
            ["match", pattern] => Pipe::Match(regex(pattern)?),
            ["except", pattern] => Pipe::Except(regex(pattern)?),
            ["find", pattern] => Pipe::Find(regex(pattern)?),
            ["count"] => Pipe::Count,
            ["last", n] => match n.parse::<usize>() {
                Ok(n) if n > 0 => Pipe::Last(n),
                _ => {
                    return fail(format!(
                        "last {}: expected a number of lines, 1 or more",
                        efb_yang::text::excerpt(n)
                    ));
                }
            },
            ["no-more"] => Pipe::NoMore,
            ["display", "json"] => Pipe::DisplayJson,
            ["display", "set"] => Pipe::DisplaySet,
            ["save", file] => Pipe::Save(file.into()),
            [first @ ("match" | "except" | "find" | "last" | "save"), ..] => {
                return fail(format!(
                    "| {first} takes one word (quote a pattern with spaces); expected {PIPE_CHOICES}"
                ));
            }
            _ => {
                return fail(format!(
                    "unknown pipe \"{}\"; expected {PIPE_CHOICES}",
                    efb_yang::text::excerpt(&words.join(" "))
                ));
            }
        })
    }
}

/// Splits `command | pipe | pipe`, respecting quotes as the words are read (a `\"` in
/// double quotes does not close them).
pub(super) fn split_pipes(line: &str) -> Result<(String, Vec<Vec<String>>)> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoting = setlines::Quoting::default();
    for c in line.chars() {
        if quoting.outside(c) && c == '|' {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    parts.push(current);
    let command = parts.remove(0);
    let pipes = parts
        .iter()
        .map(|p| setlines::split_words(p).map_err(ShellError::from))
        .collect::<Result<Vec<_>>>()?;
    if pipes.iter().any(Vec::is_empty) {
        return fail(format!("empty pipe: expected {PIPE_CHOICES} after |"));
    }
    Ok((command, pipes))
}

pub(super) fn apply_pipes(schema: &Schema, output: Output, pipes: &[Pipe]) -> Result<Vec<String>> {
    let mut lines = output.lines;
    for pipe in pipes {
        lines = match pipe {
            Pipe::Match(regex) => lines.into_iter().filter(|l| regex.is_match(l)).collect(),
            Pipe::Except(regex) => lines.into_iter().filter(|l| !regex.is_match(l)).collect(),
            Pipe::Find(regex) => match lines.iter().position(|l| regex.is_match(l)) {
                Some(first) => lines.split_off(first),
                None => return fail(format!("find {}: no line matches", regex.as_str())),
            },
            Pipe::Count => vec![format!("Count: {} lines", lines.len())],
            Pipe::Last(n) => lines.split_off(lines.len().saturating_sub(*n)),
            Pipe::NoMore => lines,
            Pipe::DisplayJson => match &output.data {
                Some(data) => serde_json::to_string_pretty(data)
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_string)
                    .collect(),
                None => return fail("display json: this command has no data to display"),
            },
            Pipe::DisplaySet => match &output.data {
                Some(data) if output.config => {
                    let mut lines = set_lines(schema, data)?;
                    lines.extend(output.inactive.iter().map(|w| format!("deactivate {w}")));
                    lines
                }
                Some(_) => {
                    return fail(
                        "display set: this command shows no configuration (display json shows its data)",
                    );
                }
                None => return fail("display set: this command has no data to display"),
            },
            Pipe::Save(path) => vec![write_lines(path, &lines)?],
        };
    }
    Ok(lines)
}

/// Writes `lines` to `path` (replacing it, as Junos's `save` does) and says so.
pub(super) fn write_lines(path: &std::path::Path, lines: &[String]) -> Result<String> {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text)
        .map_err(|e| ShellError(format!("save: cannot write {}: {e}", path.display())))?;
    Ok(format!(
        "Wrote {} line{} to {}",
        lines.len(),
        if lines.len() == 1 { "" } else { "s" },
        path.display()
    ))
}

/// Configuration data as `set` lines (state values left out: they are not settable).
fn set_lines(schema: &Schema, data: &Json) -> Result<Vec<String>> {
    let tree = json::from_trusted_json(schema, &data.to_string())
        .map_err(|e| ShellError(e.to_string()))?;
    let changes: Vec<diff::Change> =
        diff::diff_as_written(schema, &efb_yang::DataTree::new(), &tree)
            .into_iter()
            .filter(|c| c.path().segments.iter().all(|s| schema.node(s.node).config))
            .collect();
    Ok(setlines::render_changes(schema, &changes))
}
