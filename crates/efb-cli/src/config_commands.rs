//! The words of configuration mode, in one list: completion (Tab, `?`), `help`, the
//! dispatch of a line and its unknown-command error all read it, so that they never
//! disagree. A new word is a line here and its handler: the dispatches match on
//! [`ConfigCommand`] without a catch-all, so the compiler names where it is missing.

/// Declares the commands from one table: variant, word, help, in the order `?` lists them.
macro_rules! config_commands {
    ($($variant:ident = $word:literal, $help:literal;)*) => {
        /// A command of configuration mode.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum ConfigCommand {
            $($variant,)*
        }

        impl ConfigCommand {
            /// Every command, in the order `?` and `help` list them.
            pub const ALL: &[ConfigCommand] = &[$(ConfigCommand::$variant,)*];

            /// The word that runs it.
            pub fn word(self) -> &'static str {
                match self {
                    $(ConfigCommand::$variant => $word,)*
                }
            }

            /// What `?` and `help` say of it.
            pub fn help(self) -> &'static str {
                match self {
                    $(ConfigCommand::$variant => $help,)*
                }
            }
        }
    };
}

config_commands! {
    Set = "set", "Set a value, or create a node, in the candidate";
    Delete = "delete", "Delete a node from the candidate";
    Deactivate = "deactivate", "Keep a node in the candidate but do not apply it (shown as inactive:)";
    Activate = "activate", "Apply a deactivated node again";
    Edit = "edit", "Go to a level: set, delete and show are relative to it";
    Top = "top", "Go to the top level (top COMMAND: run one command from there)";
    Up = "up", "Go up one level (up N: N levels)";
    Rename = "rename", "Give a list entry another name: rename PATH to NAME";
    Copy = "copy", "Copy a list entry under another name: copy PATH to NAME";
    Insert = "insert", "Move an entry of an ordered list (a unit's pairs): insert PATH before|after NAME";
    Annotate = "annotate", "Set the description of an entry: annotate PATH \"TEXT\"";
    Show = "show", "Show the candidate or a part of it (show | compare: the changes)";
    Commit = "commit", "Validate the candidate and make it running (check, confirmed, comment)";
    Apply = "apply", "Validate the candidate and make it running";
    Rollback = "rollback", "Load commit N (0: running) into the candidate";
    Discard = "discard", "Drop the candidate's changes";
    Save = "save", "Save the running configuration as startup (what the box boots with); save FILE: the candidate as set lines in FILE";
    Load = "load", "Load a file of JSON or set lines: merge or override";
    Run = "run", "Run an operational command";
    Help = "help", "Help on a topic: help TOPIC (commands, configuration, pipes...)";
    Exit = "exit", "Go back to the level before the last edit; at the top, leave configuration mode";
    Quit = "quit", "Leave configuration mode";
}

impl ConfigCommand {
    /// The command `word` runs, if it is one.
    pub fn parse(word: &str) -> Option<ConfigCommand> {
        ConfigCommand::ALL
            .iter()
            .copied()
            .find(|c| c.word() == word)
    }

    /// Whether a script may type it in operational mode: it enters configuration mode by
    /// itself (a script of set lines needs no `configure` first).
    pub fn enters_configuration_mode(self) -> bool {
        matches!(
            self,
            ConfigCommand::Set
                | ConfigCommand::Delete
                | ConfigCommand::Deactivate
                | ConfigCommand::Activate
                | ConfigCommand::Commit
                | ConfigCommand::Rollback
                | ConfigCommand::Load
        )
    }

    /// `set, delete, ...`: every word, for an error that says what would be accepted.
    pub fn words() -> String {
        let words: Vec<&str> = ConfigCommand::ALL.iter().map(|c| c.word()).collect();
        words.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_runs_its_own_command() {
        for command in ConfigCommand::ALL {
            assert_eq!(ConfigCommand::parse(command.word()), Some(*command));
            assert!(!command.help().is_empty(), "{}", command.word());
        }
        assert_eq!(ConfigCommand::parse("commi"), None);
        assert!(ConfigCommand::words().starts_with("set, delete, deactivate, activate, edit"));
    }
}
