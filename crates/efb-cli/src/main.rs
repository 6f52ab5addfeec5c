//! efb-cli: the shell. Interactive on a terminal; with `-c COMMAND` or with commands on
//! standard input it runs them and exits 0 only if every one succeeded.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;
use efb_cli::client::{Client, DEFAULT_ADDRESS, Login};
use efb_cli::grammar::Grammar;
use efb_cli::shell::{Flow, Shell};
use efb_yang::schema::Schema;

#[derive(Parser)]
#[command(name = "efb-cli", version, about = "The EcoFilter Balancer shell")]
struct Args {
    /// efbd's management API: its Unix socket (PATH or unix:PATH), or HOST:PORT for TCP
    /// with TLS [default: $EFB_CONNECT, else datastore/efbd.sock].
    #[arg(long, value_name = "ADDR")]
    connect: Option<String>,
    /// Run one command and exit (status 0 when it succeeded).
    #[arg(short = 'c', value_name = "COMMAND")]
    command: Option<String>,
    /// On the Unix socket: another name to record in the commit history, as "ACCOUNT as
    /// NAME" (admins only; without it, the Unix account is recorded). Over TCP: the user
    /// to log in as.
    #[arg(long)]
    user: Option<String>,
    /// Over TCP: the CA (or efbd's own certificate) that efbd's certificate is checked
    /// against.
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// Over TCP: a client certificate (PEM) whose subject CN is a user of efbd's users
    /// file, instead of a password.
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// Over TCP: a file whose first line is the password [default: $EFB_PASSWORD].
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
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
    let address = args
        .connect
        .clone()
        .or_else(|| std::env::var("EFB_CONNECT").ok())
        .unwrap_or_else(|| DEFAULT_ADDRESS.to_string());
    let login = Login {
        password: password(&args)?,
        ca: args.ca.clone(),
        cert: args.cert.clone(),
        key: args.key.clone(),
    };
    let user = args.user.clone().unwrap_or_default();
    let client = Client::connect_with(&address, &user, &login)?;
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
        address,
        schema.module().name,
        schema.module().revision
    );
    efb_cli::interactive::run(shell, grammar)?;
    Ok(ExitCode::SUCCESS)
}

/// The password for TCP: the first line of `--password-file`, else $EFB_PASSWORD.
fn password(args: &Args) -> Result<Option<String>> {
    let Some(file) = &args.password_file else {
        return Ok(std::env::var("EFB_PASSWORD").ok());
    };
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("--password-file {}", file.display()))?;
    Ok(text.lines().next().map(str::to_string))
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
