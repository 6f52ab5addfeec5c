//! What may follow a configuration command: paths from the place of the hierarchy,
//! commit's options, rollback's numbers, load's sources (files and `terminal`).

use efb_yang::setlines::{self, Expect, Verb};

use super::{COMMIT_OPTIONS, Candidate, Completer, end, end_alone, help_topics};
use crate::config_commands::ConfigCommand;

impl Completer<'_> {
    /// A line of configuration mode; `partial` is the word being typed (a file's name
    /// after `load merge`).
    pub(super) fn configuration_line(
        &self,
        place: &[String],
        words: &[String],
        partial: &str,
    ) -> Vec<Candidate> {
        if is_load_source(words) {
            return load_sources(partial);
        }
        self.configuration(place, words)
    }

    fn configuration(&self, place: &[String], words: &[String]) -> Vec<Candidate> {
        let Some((first, rest)) = words.split_first() else {
            return ConfigCommand::ALL
                .iter()
                .map(|c| Candidate::word(c.word(), c.help()))
                .collect();
        };
        let Some(command) = ConfigCommand::parse(first) else {
            return end_alone(rest);
        };
        match command {
            ConfigCommand::Set => self.paths(Verb::Set, &[place, rest].concat()),
            ConfigCommand::Delete
            | ConfigCommand::Show
            | ConfigCommand::Deactivate
            | ConfigCommand::Activate => self.paths(Verb::Delete, &[place, rest].concat()),
            ConfigCommand::Edit
            | ConfigCommand::Top
            | ConfigCommand::Up
            | ConfigCommand::Rename
            | ConfigCommand::Copy
            | ConfigCommand::Insert
            | ConfigCommand::Annotate => self.hierarchy(command, place, rest),
            ConfigCommand::Commit | ConfigCommand::Apply => commit_options(rest),
            ConfigCommand::Rollback if rest.is_empty() => self.rollback_numbers(),
            ConfigCommand::Load if rest.is_empty() => vec![
                Candidate::word("merge", "Merge the file into the candidate"),
                Candidate::word("override", "The file becomes the candidate"),
                Candidate::word(
                    "set",
                    "Apply the file's set / delete lines to the candidate",
                ),
            ],
            ConfigCommand::Save if rest.is_empty() => {
                let mut out = end();
                out.push(Candidate::placeholder(
                    "<file>",
                    "Write the candidate configuration to a file, as set lines",
                ));
                out
            }
            ConfigCommand::Run => self.operational(rest),
            ConfigCommand::Help => help_topics(rest),
            ConfigCommand::Rollback
            | ConfigCommand::Load
            | ConfigCommand::Discard
            | ConfigCommand::Save
            | ConfigCommand::Exit
            | ConfigCommand::Quit => end_alone(rest),
        }
    }

    /// The numbers `rollback` (and `show system rollback N compare M`) takes, each with its
    /// commit's id, time, user and comment
    /// (as Junos's `rollback ?`).
    pub(super) fn rollback_numbers(&self) -> Vec<Candidate> {
        match self.keys.history() {
            Some(mut commits) if !commits.is_empty() => {
                commits.sort_by_key(|c| c.rollback);
                commits
                    .into_iter()
                    .map(|c| {
                        Candidate::word(
                            c.rollback.to_string(),
                            format!("commit {}: {}", c.id, c.said),
                        )
                    })
                    .collect()
            }
            Some(_) => vec![Candidate::placeholder(
                "<0>",
                "The running configuration (history holds no commit)",
            )],
            None => vec![Candidate::placeholder(
                "<number>",
                "How many commits back: 0 is running, 1 the one before...",
            )],
        }
    }

    /// The commands of the edit hierarchy; their paths start at the place.
    fn hierarchy(
        &self,
        command: ConfigCommand,
        place: &[String],
        rest: &[String],
    ) -> Vec<Candidate> {
        let path = [place, rest].concat();
        match command {
            ConfigCommand::Top => self.configuration(&[], rest),
            ConfigCommand::Up if rest.is_empty() => {
                let mut out = vec![Candidate::placeholder("<levels>", "Levels to go up (1)")];
                out.extend(end());
                out
            }
            ConfigCommand::Edit => self.levels(&path),
            ConfigCommand::Rename | ConfigCommand::Copy => {
                match rest.iter().position(|w| w == "to") {
                    Some(at) if at + 1 == rest.len() => {
                        vec![Candidate::placeholder(
                            "<name>",
                            "The new name of the entry",
                        )]
                    }
                    Some(_) => end(),
                    None => {
                        self.entry_then(&path, vec![Candidate::word("to", "The new name follows")])
                    }
                }
            }
            ConfigCommand::Insert => self.insert_words(&path, rest),
            ConfigCommand::Annotate => self.entry_then(
                &path,
                vec![Candidate::placeholder(
                    "<\"text\">",
                    "The entry's description, in quotes",
                )],
            ),
            _ => Vec::new(),
        }
    }

    /// Containers, lists and keys: the places a path can go to (leaves are set, not edited).
    fn levels(&self, path: &[String]) -> Vec<Candidate> {
        let mut out = self.paths(Verb::Delete, path);
        if let Ok(Expect::Node { choices, .. }) =
            setlines::expect_next(self.schema, Verb::Delete, path)
        {
            let leaves: Vec<&str> = choices
                .iter()
                .map(|id| self.schema.node(*id))
                .filter(|n| !n.is_inner())
                .map(|n| n.name.as_str())
                .collect();
            out.retain(|c| !leaves.contains(&c.word.as_str()));
        }
        out
    }

    /// The path to a list entry, then (once it names one) `next`.
    fn entry_then(&self, path: &[String], next: Vec<Candidate>) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = self
            .levels(path)
            .into_iter()
            .filter(|c| !matches!(c.word.as_str(), "<[Enter]>" | "|"))
            .collect();
        let names_entry = match setlines::parse_words(self.schema, Verb::Delete, path) {
            Ok(targets) => matches!(targets.as_slice(),
                [(at, None)] if at.last().is_some_and(|s| !s.keys.is_empty())),
            Err(_) => false,
        };
        if names_entry {
            out.extend(next);
        }
        out
    }

    /// `insert PATH before|after NAME`: the entry, the word, then its siblings' names.
    fn insert_words(&self, path: &[String], rest: &[String]) -> Vec<Candidate> {
        let Some(at) = rest.iter().rposition(|w| w == "before" || w == "after") else {
            return self.entry_then(
                path,
                vec![
                    Candidate::word("before", "Put it before the entry named next"),
                    Candidate::word("after", "Put it after the entry named next"),
                ],
            );
        };
        if at + 1 < rest.len() {
            return end();
        }
        if path.len() < 2 {
            return Vec::new();
        }
        // The list's entries: the path up to the moved entry's key.
        let list = &path[..path.len() - (rest.len() - at) - 1];
        let moved = &path[path.len() - (rest.len() - at) - 1];
        let mut names = self.paths(Verb::Delete, list);
        names.retain(|c| c.word != *moved && !matches!(c.word.as_str(), "<[Enter]>" | "|"));
        names
    }
}

/// `load merge|override|set ` is followed by a file or `terminal`.
fn is_load_source(words: &[String]) -> bool {
    matches!(words, [load, mode] if load == "load" && matches!(mode.as_str(), "merge" | "override" | "set"))
}

/// `terminal`, and the files and folders whose names start with `partial` (a path
/// relative to the shell's directory, or absolute); folders end in `/`.
fn load_sources(partial: &str) -> Vec<Candidate> {
    let mut out = vec![Candidate::word(
        "terminal",
        "Paste the configuration, then Ctrl-D at the start of a line",
    )];
    let (folder, _) = partial.rsplit_once('/').unwrap_or(("", partial));
    let listed = match folder {
        "" if partial.starts_with('/') => "/",
        "" => ".",
        folder => folder,
    };
    let Ok(entries) = std::fs::read_dir(listed) else {
        return out;
    };
    let mut files: Vec<Candidate> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let is_dir = e.file_type().ok()?.is_dir();
            let path = match (folder, partial.starts_with('/')) {
                ("", true) => format!("/{name}"),
                ("", false) => name,
                (folder, _) => format!("{folder}/{name}"),
            };
            let (word, help) = if is_dir {
                (format!("{path}/"), "folder")
            } else {
                (path, "file: RFC 7951 JSON or set lines")
            };
            Some(Candidate::word(word, help))
        })
        .collect();
    files.sort_by(|a, b| a.word.cmp(&b.word));
    out.extend(files);
    out
}

fn commit_options(rest: &[String]) -> Vec<Candidate> {
    match rest.last().map(String::as_str) {
        Some("confirmed") => {
            let mut out = vec![Candidate::placeholder(
                "<minutes>",
                "Minutes to confirm in (default 10)",
            )];
            out.extend(end());
            out
        }
        Some("comment") => vec![Candidate::placeholder("<text>", "The comment, in quotes")],
        _ => {
            let mut out: Vec<Candidate> = COMMIT_OPTIONS
                .iter()
                .filter(|(w, _)| !rest.iter().any(|r| r == w))
                .map(|(w, h)| Candidate::word(*w, *h))
                .collect();
            out.extend(end());
            out
        }
    }
}
