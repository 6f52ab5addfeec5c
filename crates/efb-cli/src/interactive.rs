//! The interactive shell: rustyline with completion (Tab), help (`?`), hints, history
//! across sessions and Ctrl-R search.

use std::borrow::Cow;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use efb_yang::schema::Schema;
use rustyline::completion::{Completer as RlCompleter, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{
    Cmd, CompletionType, ConditionalEventHandler, Config, Context, Editor, Event, EventContext,
    EventHandler, ExternalPrinter, Helper, KeyEvent, RepeatCount,
};

use crate::complete::{self, Completer};
use crate::grammar::Grammar;
use crate::shell::{DaemonKeys, Flow, Shell};

/// Everything completion needs, shared by Tab, hints and `?`.
struct Completion {
    schema: &'static Schema,
    grammar: Arc<Grammar>,
    keys: DaemonKeys,
    /// The words of the place `edit` went to: paths complete from there.
    place: Mutex<Vec<String>>,
}

impl Completion {
    fn complete(&self, line: &str) -> complete::Completion {
        let mode = *self.keys.mode.lock().unwrap_or_else(|p| p.into_inner());
        let completer = Completer {
            schema: self.schema,
            grammar: &self.grammar,
            keys: &self.keys,
        };
        let place = self.place.lock().unwrap_or_else(|p| p.into_inner()).clone();
        completer.complete_at(mode, &place, line)
    }
}

struct ShellHelper {
    completion: Arc<Completion>,
}

impl RlCompleter for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let found = self.completion.complete(&line[..pos]);
        let pairs = found
            .matching()
            .into_iter()
            .filter(|c| !c.placeholder)
            .map(|c| Pair {
                display: c.word.clone(),
                replacement: format!("{} ", efb_yang::setlines::quote_word(&c.word)),
            })
            .collect();
        Ok((found.start, pairs))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;

    /// When only one word can complete what is typed, show the rest of it, dimmed.
    fn hint(&self, line: &str, pos: usize, _: &Context<'_>) -> Option<String> {
        if pos < line.len() || line.ends_with(' ') || line.is_empty() {
            return None;
        }
        let found = self.completion.complete(line);
        let words: Vec<&complete::Candidate> = found
            .matching()
            .into_iter()
            .filter(|c| !c.placeholder)
            .collect();
        match words.as_slice() {
            [only] if only.word.len() > found.partial.len() => {
                Some(only.word[found.partial.len()..].to_string())
            }
            _ => None,
        }
    }
}

impl Highlighter for ShellHelper {
    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        Cow::Owned(format!("\x1b[2m{hint}\x1b[0m"))
    }
}

impl Validator for ShellHelper {}
impl Helper for ShellHelper {}

/// `?`: list what may come next, with the model's descriptions; the line stays as typed.
struct HelpKey {
    completion: Arc<Completion>,
}

impl ConditionalEventHandler for HelpKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let line = &ctx.line()[..ctx.pos()];
        // Inside quotes `?` is just a character.
        if efb_yang::setlines::ends_inside_quote(line) {
            return None;
        }
        let found = self.completion.complete(line);
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "?\r\n");
        for l in complete::help_lines(&found) {
            let _ = write!(out, "{l}\r\n");
        }
        let _ = out.flush();
        Some(Cmd::Repaint)
    }
}

fn history_file() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("EFB_CLI_HISTORY") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".efb_cli_history"))
}

/// Runs the shell on the terminal until `exit` or Ctrl-D.
pub fn run(mut shell: Shell, grammar: Arc<Grammar>) -> anyhow::Result<()> {
    // Output longer than the screen waits at ---(more)--- (not when it goes to a file).
    shell.paging = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let keys_mode = Arc::new(Mutex::new(shell.mode));
    let completion = Arc::new(Completion {
        schema: shell.schema,
        grammar,
        keys: DaemonKeys {
            client: shell.client.clone(),
            mode: keys_mode.clone(),
        },
        place: Mutex::default(),
    });
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .auto_add_history(true)
        .max_history_size(5000)?
        .history_ignore_dups(true)?
        .build();
    let mut editor: Editor<ShellHelper, DefaultHistory> = Editor::with_config(config)?;
    editor.set_helper(Some(ShellHelper {
        completion: completion.clone(),
    }));
    editor.bind_sequence(
        KeyEvent::from('?'),
        EventHandler::Conditional(Box::new(HelpKey {
            completion: completion.clone(),
        })),
    );
    if let Ok(printer) = editor.create_external_printer() {
        tell_confirm_timeouts(&shell, printer);
    }
    if let Ok(printer) = editor.create_external_printer() {
        tell_logout(&shell, printer);
    }
    let history = history_file();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    loop {
        *keys_mode.lock().unwrap_or_else(|p| p.into_inner()) = shell.mode;
        *completion.place.lock().unwrap_or_else(|p| p.into_inner()) = shell.place_words();
        // Junos's `[edit ...]` line: where configuration commands apply.
        if let Some(banner) = shell.banner() {
            println!("\n{banner}");
        }
        match editor.readline(shell.prompt()) {
            // A paste of several lines (bracketed paste) comes as one: each line runs as if
            // typed, as in any terminal.
            Ok(text) => {
                if execute_lines(&mut shell, &text) == Flow::Exit {
                    break;
                }
            }
            // Ctrl-C cancels the line being typed.
            Err(ReadlineError::Interrupted) => {}
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    shell.close();
    Ok(())
}

fn execute_lines(shell: &mut Shell, text: &str) -> Flow {
    let mut lines: Vec<&str> = text.split(['\n', '\r']).collect();
    if lines.len() > 1 {
        lines.retain(|l| !l.trim().is_empty());
    }
    for line in lines {
        match shell.execute(line) {
            Ok(Flow::Exit) => return Flow::Exit,
            Ok(Flow::Continue) => {}
            Err(e) => println!("error: {e}"),
        }
        if shell.logged_out().is_some() {
            return Flow::Exit;
        }
    }
    Flow::Continue
}

/// An admin's `request system logout` of this shell's session is said at once, above the
/// prompt; the shell ends at the next line typed.
fn tell_logout(shell: &Shell, printer: impl ExternalPrinter + Send + 'static) {
    let client = shell.client.lock().unwrap_or_else(|p| p.into_inner());
    let mut printer = printer;
    client.when_logged_out(move |why| {
        let _ = printer.print(format!(
            "\nMessage from efbd: this shell's session was closed: {why}; press Enter to leave\n"
        ));
    });
}

/// A `commit confirmed` nobody confirmed is undone by efbd: every open shell is told at
/// once, above its prompt, as Junos tells every terminal.
fn tell_confirm_timeouts(shell: &Shell, printer: impl ExternalPrinter + Send + 'static) {
    let printer = Mutex::new(printer);
    let client = shell.client.lock().unwrap_or_else(|p| p.into_inner());
    client.watch_events(vec!["confirm-timeout".into()], move |event| {
        let field = |name: &str| {
            event
                .fields
                .iter()
                .find(|f| f.name == name)
                .map_or("?", |f| f.value.as_str())
        };
        let changes = field("changes");
        let message = format!(
            "\nMessage from efbd at {}: commit {} was not confirmed in time; efbd rolled it back (now commit {}; {changes} change{} undone)\n",
            event.time,
            field("undone"),
            field("id"),
            if changes == "1" { "" } else { "s" }
        );
        let mut printer = printer.lock().unwrap_or_else(|p| p.into_inner());
        let _ = printer.print(message);
    });
}
