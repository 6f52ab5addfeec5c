//! Configuration mode: a line is a [`ConfigCommand`], each dispatched here (the commands
//! of the edit hierarchy are in `hierarchy.rs`, `commit` in `commit.rs`); and the
//! configuration shown as a tree, in either mode.

use efb_mgmt_proto::v1::{Datastore, Format, LoadMode};
use efb_yang::input;
use efb_yang::setlines::{self, Verb};
use serde_json::Value as Json;

use super::pipes::Pipe;
use super::{
    Flow, Output, Result, Shell, ShellError, broken_references, fail, nothing_after, numbering,
};
use crate::complete::Mode;
use crate::config_commands::ConfigCommand;
use crate::view;

impl Shell {
    /// `show configuration [PATH]` and, in configuration mode, `show [PATH]`.
    pub(super) fn show_tree(
        &mut self,
        datastore: Datastore,
        path_words: &[String],
    ) -> Result<Output> {
        let path = if path_words.is_empty() {
            String::new()
        } else {
            let targets = setlines::parse_words(self.schema, Verb::Delete, path_words)
                .map_err(|e| ShellError(e.to_string()))?;
            match targets.as_slice() {
                [(path, _)] => path.display(self.schema),
                _ => return fail("show takes one path"),
            }
        };
        let reply = self.client().get_written(datastore, &path)?;
        let mut doc: Json = serde_json::from_str(&reply.text)
            .map_err(|e| ShellError(format!("efbd sent bad JSON: {e}")))?;
        view::natural_order(self.schema, &mut doc);
        let inactive: Vec<String> = reply
            .inactive
            .iter()
            .filter_map(|p| efb_yang::DataPath::parse(self.schema, p).ok())
            .map(|p| setlines::words(self.schema, &p))
            .collect();
        let lines = view::curly(self.schema, &doc, &inactive);
        let mut output = Output::data(lines, doc);
        output.inactive = inactive;
        Ok(output)
    }

    pub(super) fn configuration(&mut self, words: &[String], line: &str) -> Result<(Output, Flow)> {
        let Some(command) = ConfigCommand::parse(&words[0]) else {
            // The words completion and `?` offer: one list.
            return fail(format!(
                "unknown command \"{}\"; expected one of: {}",
                words[0],
                ConfigCommand::words()
            ));
        };
        let rest = &words[1..];
        let below_top = !self.place.is_top();
        let output = match command {
            ConfigCommand::Set
            | ConfigCommand::Delete
            | ConfigCommand::Deactivate
            | ConfigCommand::Activate
                if below_top =>
            {
                return self.relative(words);
            }
            ConfigCommand::Set
            | ConfigCommand::Delete
            | ConfigCommand::Deactivate
            | ConfigCommand::Activate => self.edit_lines(line)?,
            ConfigCommand::Show if below_top => self.show_here(rest)?,
            ConfigCommand::Show => self.show_tree(Datastore::Candidate, rest)?,
            ConfigCommand::Edit => self.edit(rest)?,
            ConfigCommand::Top => return self.top(rest),
            ConfigCommand::Up => self.up(rest)?,
            ConfigCommand::Rename | ConfigCommand::Copy => self.rename_or_copy(command, rest)?,
            ConfigCommand::Annotate => self.annotate(rest)?,
            ConfigCommand::Insert => self.insert(rest)?,
            ConfigCommand::Commit | ConfigCommand::Apply => return self.commit(rest),
            ConfigCommand::Rollback => self.rollback(rest)?,
            ConfigCommand::Save if rest.len() == 1 => self.save_to_file(&rest[0])?,
            ConfigCommand::Save if rest.len() > 1 => {
                return fail(
                    "save takes nothing (running becomes startup) or one FILE (the candidate \
                     as set lines in FILE); quote a name with spaces",
                );
            }
            ConfigCommand::Discard | ConfigCommand::Save if !rest.is_empty() => {
                return nothing_after(&words[..1], rest).map(|()| (Output::none(), Flow::Continue));
            }
            ConfigCommand::Discard => {
                self.client().discard()?;
                Output::lines(vec![
                    "candidate discarded: it is the running configuration again".into(),
                ])
            }
            ConfigCommand::Save => {
                self.client().save()?;
                Output::lines(vec!["running configuration saved as startup".into()])
            }
            ConfigCommand::Load => self.load(rest)?,
            ConfigCommand::Help => self.help(rest)?,
            ConfigCommand::Run => self.operational(rest, "")?.0,
            ConfigCommand::Exit | ConfigCommand::Quit => return self.exit(&words[..1], rest),
        };
        Ok((output, Flow::Continue))
    }

    /// `save FILE`: the candidate configuration as set lines in a file, which `load merge
    /// FILE` (or `efb-config`) reads back; `save` alone saves running as startup.
    fn save_to_file(&mut self, file: &str) -> Result<Output> {
        let shown = self.show_tree(Datastore::Candidate, &[])?;
        let lines =
            super::pipes::apply_pipes(self.schema, shown, &[super::pipes::Pipe::DisplaySet])?;
        let said = super::pipes::write_lines(std::path::Path::new(file), &lines)?;
        Ok(Output::lines(vec![format!(
            "{said}: the candidate configuration as set lines (load merge {file} reads it back)"
        )]))
    }

    /// `set`, `delete`, `deactivate` and `activate` at the top: the line as typed (efbd
    /// reads it as it reads files: `match ip-proto tcp` included).
    fn edit_lines(&mut self, line: &str) -> Result<Output> {
        let reply = self.client().edit_lines(line.trim())?;
        Ok(Output::lines(broken_references(&reply.broken)))
    }

    pub(super) fn leave_configuration(&mut self) -> Result<(Output, Flow)> {
        let changes = self.client().compare(Format::Set, None)?;
        if !changes.is_empty() && !self.exit_warned {
            self.exit_warned = true;
            return fail(format!(
                "the candidate has {} uncommitted change{}: commit or discard them, or exit again to leave them in the candidate",
                changes.len(),
                if changes.len() == 1 { "" } else { "s" }
            ));
        }
        self.mode = Mode::Operational;
        self.exit_warned = false;
        Ok((
            Output::lines(vec!["Exiting configuration mode".into()]),
            Flow::Continue,
        ))
    }

    /// `rollback N`: the configuration N commits back into the candidate; the shell says
    /// which commit that is.
    fn rollback(&mut self, rest: &[String]) -> Result<Output> {
        let n = match rest {
            [] => "0",
            [n] => n.as_str(),
            _ => return fail("rollback takes one number: how many commits back (0 is running)"),
        };
        let history = numbering::Numbering::new(self.client().history()?);
        let commit = match history.by_rollback(n) {
            Ok(commit) => Some(commit),
            // Running, also with no history at all.
            Err(_) if n == "0" => None,
            Err(e) => return Err(e),
        };
        let index = commit.map_or(0, |c| c.index);
        self.client().rollback(index)?;
        let which = commit.map_or_else(String::new, |c| format!(", {}", numbering::described(c)));
        Ok(Output::lines(vec![format!(
            "load complete: rollback {index}{which}, is in the candidate (show | compare to review)"
        )]))
    }

    fn load(&mut self, rest: &[String]) -> Result<Output> {
        let (mode, source) = match rest {
            [mode, source] if mode == "merge" || mode == "set" => (LoadMode::Merge, source),
            [mode, source] if mode == "override" => (LoadMode::Override, source),
            _ => {
                return fail(
                    "usage: load merge|override|set FILE|terminal (RFC 7951 JSON or set lines; set: set lines only)",
                );
            }
        };
        let content = if source == "terminal" {
            self.read_terminal()?
        } else {
            input::read_file(std::path::Path::new(source), &self.input_limit)
        }
        .map_err(|e| ShellError(e.to_string()))?;
        if rest[0] == "set" && content.format == input::Format::Json {
            return fail(
                "load set takes set / delete lines; JSON is loaded with load merge or load override",
            );
        }
        let format = match content.format {
            input::Format::Json => Format::Json,
            input::Format::SetLines => Format::Set,
        };
        let reply = self.client().load(mode, format, content.text)?;
        let mut lines = vec!["load complete".to_string()];
        for p in &reply.incomplete {
            let problem =
                setlines::paths_in_words(self.schema, &format!("{}: {}", p.path, p.message));
            lines.push(format!("warning: still to fix before commit: {problem}"));
        }
        Ok(Output::lines(lines))
    }

    /// `load ... terminal`: what is pasted or typed, up to Ctrl-D at the start of a line
    /// (the terminal is in its line mode between two prompts).
    fn read_terminal(&self) -> Result<std::result::Result<input::Content, input::InputError>> {
        use std::io::{Read, Write};
        if self.scripted {
            return fail(
                "load ... terminal reads what is typed on a terminal; a script loads a FILE",
            );
        }
        println!("[Type ^D at a new line to end input]");
        let _ = std::io::stdout().flush();
        let mut text = String::new();
        let limit = usize::try_from(self.input_limit.max_bytes).unwrap_or(usize::MAX);
        std::io::stdin()
            .lock()
            .take(limit.saturating_add(1) as u64)
            .read_to_string(&mut text)
            .map_err(|e| ShellError(format!("reading the terminal: {e}")))?;
        Ok(input::from_text("terminal", text, &self.input_limit))
    }

    /// `show | compare`: Junos's hierarchical form; `| display set` the set / delete lines
    /// that make the change, `| display json` one object per change.
    pub(super) fn compare(
        &mut self,
        pipes: &mut Vec<Pipe>,
        rollback: Option<u32>,
    ) -> Result<Output> {
        let as_set = pipes.iter().any(|p| matches!(p, Pipe::DisplaySet));
        pipes.retain(|p| !matches!(p, Pipe::DisplaySet));
        if as_set {
            return Ok(Output::lines(self.client().compare(Format::Set, rollback)?));
        }
        if !pipes.iter().any(|p| matches!(p, Pipe::DisplayJson)) {
            return Ok(Output::lines(
                self.client().compare(Format::Hierarchy, rollback)?,
            ));
        }
        let changes = self
            .client()
            .compare(Format::Json, rollback)?
            .iter()
            .map(|line| serde_json::from_str::<Json>(line))
            .collect::<std::result::Result<Vec<Json>, _>>()
            .map_err(|e| ShellError(format!("efbd's compare in JSON: {e}")))?;
        // The lines are replaced by the data's: `| display json` is among the pipes.
        Ok(Output::facts(
            Vec::new(),
            serde_json::json!({ "changes": changes }),
        ))
    }
}
