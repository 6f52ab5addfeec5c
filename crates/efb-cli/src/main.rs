//! efb-cli: the shell. Interactive on a terminal; with `-c COMMAND` or with commands on
//! standard input it runs them and exits 0 only if every one succeeded.

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;
use efb_cli::client::Client;
use efb_cli::grammar::Grammar;
use efb_cli::shell::{Flow, Shell};
use efb_yang::schema::Schema;

#[derive(Parser)]
#[command(name = "efb-cli", version, about = "The EcoFilter Balancer shell")]
struct Args {
    /// efbd's management API.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    connect: String,
    /// Run one command and exit (status 0 when it succeeded).
    #[arg(short = 'c', value_name = "COMMAND")]
    command: Option<String>,
    /// The user recorded in the commit history [default: $USER].
    #[arg(long)]
    user: Option<String>,
    /// The largest file `load` reads, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = efb_yang::input::DEFAULT_MAX_INPUT_MIB)]
    max_input_mib: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("efb-cli: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<ExitCode> {
    let user = args
        .user
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "unknown".to_string());
    let client = Client::connect(&args.connect, &user)?;
    // The daemon's own module: the shell speaks the model of the daemon it talks to.
    let text: &'static str = Box::leak(client.hello.module_text.clone().into_boxed_str());
    let schema: &'static Schema = Box::leak(Box::new(
        Schema::load_text(text).context("the daemon's YANG module")?,
    ));
    let grammar = Arc::new(Grammar::load()?);
    let scripted = args.command.is_some() || !std::io::stdin().is_terminal();
    let mut shell = Shell::new(client, schema, (*grammar).clone(), scripted);
    shell.input_limit = efb_yang::input::Limit::mib(args.max_input_mib, "--max-input-mib");
    if let Some(command) = args.command {
        return Ok(run_lines(&mut shell, std::iter::once(command), false));
    }
    if scripted {
        let lines = std::io::stdin().lock().lines().map_while(Result::ok);
        return Ok(run_lines(&mut shell, lines, true));
    }
    println!(
        "Connected to efbd {} at {} (model {} {}). Type ? for help.",
        shell
            .client
            .lock()
            .map(|c| c.hello.daemon_version.clone())
            .unwrap_or_default(),
        args.connect,
        schema.module().name,
        schema.module().revision
    );
    efb_cli::interactive::run(shell, grammar)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs commands one per line, stopping at the first that fails (so a script never commits
/// half of what it meant). Leaving with uncommitted changes is a failure too. `numbered`:
/// errors name the line (a script), or not (`-c`, one command).
fn run_lines(shell: &mut Shell, lines: impl Iterator<Item = String>, numbered: bool) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    for (number, line) in lines.enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        match shell.execute(trimmed) {
            Ok(Flow::Exit) => break,
            Ok(Flow::Continue) => {}
            Err(e) => {
                if numbered {
                    eprintln!("error: line {}: {e}", number + 1);
                } else {
                    eprintln!("error: {e}");
                }
                code = ExitCode::from(1);
                break;
            }
        }
    }
    if code == ExitCode::SUCCESS && shell.has_uncommitted_changes() {
        eprintln!(
            "error: uncommitted changes left in the candidate (end the commands with commit)"
        );
        code = ExitCode::from(1);
    }
    shell.close();
    code
}
