//! Operational mode: a line is a command of the grammar (`cli-grammar/operational.toml`),
//! which reads (`get`), calls an operation (`rpc`) or is one the shell runs itself
//! (`builtin`); a script's configuration command enters configuration mode first.

use efb_mgmt_proto::v1::Datastore;

use super::{
    Flow, Output, Result, Shell, ShellError, enters_configuration_mode, fail, nothing_after,
};
use crate::complete::Mode;
use crate::grammar::{Action, Builtin};
use crate::help;

impl Shell {
    pub(super) fn operational(&mut self, words: &[String], line: &str) -> Result<(Output, Flow)> {
        // `set cli ...` sets the shell, not the configuration (as in Junos).
        let shell_setting = words.get(1).is_some_and(|w| w == "cli");
        if enters_configuration_mode(&words[0]) && !shell_setting {
            if self.scripted {
                self.mode = Mode::Configuration;
                return self.configuration(words, line);
            }
            return fail(format!(
                "{} is a configuration command: enter configuration mode first (edit or configure)",
                words[0]
            ));
        }
        let Some((command, rest)) = self.grammar.find(words) else {
            return fail(self.unknown_command(words));
        };
        let command = command.clone();
        let rest = rest.to_vec();
        if let Some(builtin) = command.builtin {
            let typed = &words[..words.len() - rest.len()];
            return self.builtin(builtin, typed, &rest);
        }
        let output = match command.action {
            Some(Action::Monitor) => self.monitor(&command, &rest)?,
            Some(Action::ClearStatistics) => self.clear_statistics(&command, &rest)?,
            None if command.rpc.is_some() => self.run_rpc(&command, &rest)?,
            None if command.is_inventory() => self.show_interfaces(&command, &rest)?,
            None => self.run_get(&command, &rest)?,
        };
        Ok((output, Flow::Continue))
    }

    fn unknown_command(&self, words: &[String]) -> String {
        // The longest prefix the grammar knows says where the line went wrong.
        let mut known = 0;
        while known < words.len()
            && !self
                .grammar
                .next_words(&words[..known])
                .iter()
                .all(|(w, _)| *w != words[known])
        {
            known += 1;
        }
        let expected: Vec<String> = self
            .grammar
            .next_words(&words[..known])
            .into_iter()
            .map(|(w, _)| w)
            .collect();
        let Some(word) = words.get(known) else {
            // The line stops short of a command: say what may follow, not `unknown word ""`.
            return format!(
                "\"{}\" is incomplete; continue with one of: {}",
                words.join(" "),
                expected.join(", ")
            );
        };
        let typed = efb_yang::text::excerpt(word);
        if known == 0 {
            format!(
                "unknown command \"{typed}\"; expected one of: {}",
                expected.join(", ")
            )
        } else {
            format!(
                "unknown word \"{typed}\" after \"{}\"; expected one of: {}",
                words[..known].join(" "),
                expected.join(", ")
            )
        }
    }

    /// A command the shell runs itself; `typed` are its words, `rest` those after them.
    fn builtin(
        &mut self,
        builtin: Builtin,
        typed: &[String],
        rest: &[String],
    ) -> Result<(Output, Flow)> {
        let takes_words = match builtin {
            Builtin::ShowConfiguration | Builtin::Help | Builtin::ScreenLength => true,
            // `show log [KIND...]`: the words pick the kinds of events.
            Builtin::Log => true,
            // `request system logout session N`.
            Builtin::Logout => true,
            // `show system commit N`: what commit N changed.
            Builtin::History => rest.len() == 1,
            // `show system rollback N compare M`.
            Builtin::Rollback => true,
            Builtin::Status | Builtin::Users | Builtin::Audit => false,
            Builtin::Configure | Builtin::Exit => false,
        };
        if !takes_words {
            nothing_after(typed, rest)?;
        }
        let output = match builtin {
            Builtin::Log => return self.show_log(typed, rest),
            Builtin::Logout => return self.logout(rest),
            Builtin::History if rest.len() == 1 => return self.commit_changes(&rest[0]),
            Builtin::Rollback => self.rollbacks_compared(rest)?,
            Builtin::Exit => return Ok((Output::none(), Flow::Exit)),
            Builtin::Configure => self.configure(),
            Builtin::Help => self.help(rest)?,
            Builtin::ScreenLength => self.set_screen_length(rest)?,
            Builtin::History => self.history()?,
            Builtin::Status => self.status()?,
            Builtin::Audit => self.audit()?,
            Builtin::Users => self.users()?,
            Builtin::ShowConfiguration => self.show_tree(Datastore::Running, rest)?,
        };
        Ok((output, Flow::Continue))
    }

    fn configure(&mut self) -> Output {
        self.mode = Mode::Configuration;
        self.exit_warned = false;
        let mut lines = vec!["Entering configuration mode".to_string()];
        lines.extend(self.others_editing());
        Output::lines(lines)
    }

    /// Who else holds uncommitted changes, as Junos says on `configure`: their commit may
    /// come first, and a later one touching the same paths is refused. Nothing when efbd
    /// cannot say (the shell enters the mode all the same).
    fn others_editing(&mut self) -> Option<String> {
        let status = self.client().status().ok()?;
        let mine = self.client().session;
        let others: Vec<String> = status
            .open_sessions
            .iter()
            .filter(|s| s.session != mine && s.uncommitted)
            .map(|s| format!("{} (session {}, from {})", s.user, s.session, s.from))
            .collect();
        (!others.is_empty()).then(|| {
            format!(
                "Users with uncommitted changes: {}; whoever commits second is refused where \
                 the changes meet",
                others.join(", ")
            )
        })
    }

    /// `help [TOPIC]`, in either mode.
    pub(super) fn help(&self, topic: &[String]) -> Result<Output> {
        help::topic(&self.grammar, topic)
            .map(Output::lines)
            .map_err(|e| ShellError(e.to_string()))
    }

    /// `set cli screen-length N`: a page of N lines; 0 turns paging off.
    fn set_screen_length(&mut self, rest: &[String]) -> Result<Output> {
        let length = match rest {
            [n] => n.parse::<usize>().ok().filter(|n| *n != 1),
            _ => None,
        };
        let Some(length) = length else {
            return fail(format!(
                "set cli screen-length {}: expected a number of lines (2 or more), or 0 for no paging",
                efb_yang::text::excerpt(&rest.join(" "))
            ));
        };
        self.screen_length = Some(length);
        Ok(Output::lines(vec![if length == 0 {
            "Screen length set to 0: output is not paged".to_string()
        } else {
            format!("Screen length set to {length}")
        }]))
    }
}
