//! `efb-config`: check configurations where engineers prepare them, before any balancer
//! sees them. FILE is RFC 7951 JSON of the ecofilter-balancer module or set lines, read as
//! `load` reads it (efb_yang::input).
//!
//! Exit status: 0 success (for `validate`: no errors; for `hash-compare`: every balancer
//! read and all agree; for `diff`: the same configuration), 1 the configuration is not
//! valid or the question cannot be answered (for `hash-compare`: a difference, or a
//! balancer that could not be read; for `diff`: the files differ), 2 the command itself is
//! wrong (usage, unreadable file; for `diff`, as diff(1), also a file that is not a
//! configuration).

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use efb_balancing::{LiveState, Session};
use efb_config::compare;
use efb_config::inventory::{self, GnmiSettings};
use efb_model::Config;
use efb_model::validation::Validator;
use efb_yang::input::{self, Content, Format, Limit};
use efb_yang::json::Check;
use efb_yang::{DataTree, Problem, Schema, diff, setlines};

#[derive(Parser)]
#[command(
    name = "efb-config",
    version,
    about = "Validate, hash and compare EcoFilter Balancer configurations offline"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The largest FILE read, in MiB.
    #[arg(long, global = true, value_name = "MIB", default_value_t = input::DEFAULT_MAX_INPUT_MIB)]
    max_input_mib: u64,
}

#[derive(Subcommand)]
enum Command {
    /// Print the configuration's errors and warnings; exit 0 only if it has no errors.
    Validate {
        file: PathBuf,
        /// Print one JSON object ({"valid", "errors", "warnings"}) instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Print the balancing-config-hash (64 hex digits) alone.
    Hash {
        file: PathBuf,
        /// Print the text the hash is computed over instead.
        #[arg(long)]
        text: bool,
    },
    /// Say where a session goes: flow, action, unit, bucket, slot, pair, core (one JSON object).
    Lookup {
        file: PathBuf,
        #[arg(long)]
        src: IpAddr,
        #[arg(long)]
        dst: IpAddr,
        /// IP protocol: a number (6, 17...) or a name (tcp, udp...), as the shell takes it.
        #[arg(long, value_parser = protocol)]
        proto: u8,
        #[arg(long, default_value_t = 0)]
        src_port: u16,
        #[arg(long, default_value_t = 0)]
        dst_port: u16,
        /// The link the session crosses; without it only flows for every link apply.
        #[arg(long)]
        link: Option<String>,
        /// A pair to consider down: PAIR, or UNIT/PAIR when pair names repeat across units.
        #[arg(long = "down", value_name = "PAIR")]
        down: Vec<String>,
    },
    /// Print what changes from OLD to NEW as `set` / `delete` lines. Exit status as
    /// diff(1): 0 the same, 1 different, 2 trouble.
    Diff { old: PathBuf, new: PathBuf },
    /// Compare the balancing configuration of crossed balancers (running ones over gNMI,
    /// saved files, mixed): their balancing-config-hash, and exactly what differs.
    HashCompare(HashCompareArgs),
}

#[derive(clap::Args)]
#[command(after_help = "\
BALANCER is [NAME=]FILE (a saved configuration, RFC 7951 JSON) or
[NAME=]gnmi://USER@HOST[:PORT] (a running efbd; port 9339 by default). The password
comes from --password-file, --password-env, or the environment variable EFB_GNMI_PASSWORD
(gnmi://USER:PASSWORD@... works too, but shows it to everyone who can list processes).
gNMI is TLS unless --plaintext: the server's certificate must chain to --ca-file (efbd's
self-signed one is gnmi-cert.pem in its datastore; certificates may be concatenated);
there is no option to skip the check. An inventory (TOML) names balancers with their own
settings; see docs/crossed-balancers.md.

Exit status: 0 every balancer was read and all agree; 1 a difference, or a balancer could
not be read (the others are still compared); 2 the command is wrong.")]
struct HashCompareArgs {
    /// The balancers to compare.
    #[arg(value_name = "BALANCER")]
    balancers: Vec<String>,
    /// A TOML inventory of balancers (read before those on the command line).
    #[arg(long, value_name = "FILE")]
    inventory: Option<PathBuf>,
    /// The balancer the others are compared with; by default the first one read.
    #[arg(long, value_name = "NAME")]
    reference: Option<String>,
    /// Print one JSON object (for monitoring) instead of the table.
    #[arg(long)]
    json: bool,
    /// gNMI user for balancers that do not name one.
    #[arg(long, value_name = "USER")]
    username: Option<String>,
    /// Read the gNMI password from this file (its first line).
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
    /// Read the gNMI password from this environment variable.
    #[arg(long, value_name = "VARIABLE")]
    password_env: Option<String>,
    /// gNMI without TLS (efbd --gnmi-plaintext).
    #[arg(long)]
    plaintext: bool,
    /// PEM file of the certificate(s) the balancers' TLS certificates must chain to.
    #[arg(long, value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// The name the balancers' certificates must carry, when not the address's host.
    #[arg(long, value_name = "NAME")]
    tls_server_name: Option<String>,
    /// Seconds to wait for each balancer (connection and answers).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    timeout: f64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("efb-config: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let schema = Arc::new(Schema::load().context("loading the YANG module")?);
    // A one-shot tool: the process exit returns memory faster than freeing it piece by piece.
    schema.keep_parsed_trees_until_exit();
    let validator = Validator::new(schema.clone()).context("reading the YANG module")?;
    let limit = Limit::mib(cli.max_input_mib, "--max-input-mib");
    match cli.command {
        Command::Validate { file, json } => validate(&validator, &file, &limit, json),
        Command::Hash { file, text } => {
            let Some(config) = read_config(&validator, &file, &limit)? else {
                return Ok(ExitCode::from(1));
            };
            if text {
                print!("{}", efb_balancing::config_hash_text(&config));
            } else {
                efb_text_table::print_line(&efb_balancing::config_hash(&config));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Lookup {
            file,
            src,
            dst,
            proto,
            src_port,
            dst_port,
            link,
            down,
        } => {
            let Some(config) = read_config(&validator, &file, &limit)? else {
                return Ok(ExitCode::from(1));
            };
            let session = Session {
                src,
                dst,
                ip_proto: proto,
                src_port,
                dst_port,
                link,
            };
            let live = live_state(&config, &down)?;
            let found = efb_balancing::lookup_session(&config, &session, &live)?;
            efb_text_table::print_line(&serde_json::to_string_pretty(&found)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::HashCompare(args) => hash_compare(&validator, args, &limit),
        Command::Diff { old, new } => {
            let before = read_tree(&schema, &old, &limit)?;
            let after = read_tree(&schema, &new, &limit)?;
            // As diff(1) answers, so that scripts can ask `if efb-config diff A B`: 0 the
            // same, 1 different, 2 trouble (a file that is not a configuration).
            let (Some(before), Some(after)) = (before, after) else {
                return Ok(ExitCode::from(2));
            };
            let lines = setlines::render_changes(&schema, &diff::diff(&schema, &before, &after));
            for line in &lines {
                efb_text_table::print_line(line);
            }
            Ok(ExitCode::from(u8::from(!lines.is_empty())))
        }
    }
}

fn hash_compare(validator: &Validator, args: HashCompareArgs, limit: &Limit) -> Result<ExitCode> {
    let flags = GnmiSettings {
        username: args.username,
        password: None,
        password_env: args.password_env,
        password_file: args.password_file,
        plaintext: args.plaintext.then_some(true),
        ca_file: args.ca_file,
        tls_server_name: args.tls_server_name,
    };
    let mut balancers = match &args.inventory {
        Some(path) => inventory::read_inventory(path, &flags)?,
        None => Vec::new(),
    };
    for spec in &args.balancers {
        balancers.push(inventory::parse_spec(spec, &flags)?);
    }
    inventory::check_unique(&balancers)?;
    if let Some(name) = &args.reference
        && !balancers.iter().any(|b| &b.name == name)
    {
        let names: Vec<&str> = balancers.iter().map(|b| b.name.as_str()).collect();
        bail!(
            "--reference {name}: no such balancer; balancers are: {}",
            names.join(", ")
        );
    }
    let timeout = Duration::try_from_secs_f64(args.timeout)
        .ok()
        .filter(|t| !t.is_zero())
        .with_context(|| {
            format!(
                "--timeout {}: expected a number of seconds above 0",
                args.timeout
            )
        })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report = runtime.block_on(compare::compare(
        validator,
        &balancers,
        args.reference.as_deref(),
        timeout,
        limit,
    ));
    if args.json {
        efb_text_table::print_line(&serde_json::to_string_pretty(&report)?);
    } else {
        for line in report.render() {
            efb_text_table::print_line(&line);
        }
    }
    Ok(if report.agree {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The file as every configuration file is read. A file that cannot be read is an `Err`
/// (exit 2); one that was read and holds no configuration (empty, not text) is a problem
/// of the configuration, reported as such (exit 1).
fn read_input(path: &Path, limit: &Limit) -> Result<Result<Content, Problem>> {
    match input::read_file(path, limit) {
        Ok(content) => Ok(Ok(content)),
        Err(e) if e.is_content() => Ok(Err(Problem::new("", e.to_string()))),
        Err(e) => Err(e.into()),
    }
}

/// Names and types checked by libyang; problems printed, `None` when the file is unusable.
fn read_tree(schema: &Schema, path: &Path, limit: &Limit) -> Result<Option<DataTree>> {
    let tree = match read_input(path, limit)? {
        Ok(content) => content.tree(schema, Check::Types).map_err(|e| e.problems()),
        Err(problem) => Err(vec![problem]),
    };
    match tree {
        Ok(tree) => Ok(Some(tree)),
        Err(problems) => {
            print_problems(path, "error", &problems);
            Ok(None)
        }
    }
}

fn read_config(validator: &Validator, path: &Path, limit: &Limit) -> Result<Option<Config>> {
    let Some(tree) = read_tree(validator.schema(), path, limit)? else {
        return Ok(None);
    };
    match validator.read(&tree) {
        Ok(config) => Ok(Some(config)),
        Err(e) => {
            print_problems(path, "error", &[Problem::new(e.path, e.message)]);
            Ok(None)
        }
    }
}

fn validate(validator: &Validator, path: &Path, limit: &Limit, as_json: bool) -> Result<ExitCode> {
    let (mut errors, warnings) = match read_input(path, limit)? {
        Ok(content) => validate_content(validator, &content),
        Err(problem) => (vec![problem], Vec::new()),
    };
    dedup(&mut errors);
    if as_json {
        let out =
            serde_json::json!({"valid": errors.is_empty(), "errors": errors, "warnings": warnings});
        efb_text_table::print_line(&serde_json::to_string_pretty(&out)?);
    } else {
        print_problems(path, "error", &errors);
        print_problems(path, "warning", &warnings);
        efb_text_table::print_line(&format!(
            "{}: {} error{}, {} warning{}",
            path.display(),
            errors.len(),
            plural(errors.len()),
            warnings.len(),
            plural(warnings.len())
        ));
    }
    Ok(if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Errors and warnings of a configuration that was read.
fn validate_content(validator: &Validator, content: &Content) -> (Vec<Problem>, Vec<Problem>) {
    let validated = match content.format {
        Format::Json => validator
            .validate_json(&content.text)
            .map(|(tree, validated)| {
                // Left for the process exit to reclaim (see `keep_parsed_trees_until_exit`).
                std::mem::forget(tree);
                validated
            }),
        Format::SetLines => content
            .tree(validator.schema(), Check::Types)
            .map(|tree| validator.validate(&tree, false)),
    };
    match validated {
        Ok(validated) => {
            std::mem::forget(validated.config);
            (validated.report.errors, validated.report.warnings)
        }
        // Wrong names or types: there is no configuration to check the rest of.
        Err(types) => (types.problems(), Vec::new()),
    }
}

fn dedup(problems: &mut Vec<Problem>) {
    let mut seen = BTreeSet::new();
    problems.retain(|p| seen.insert((p.path.clone(), p.message.clone())));
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn print_problems(file: &Path, level: &str, problems: &[Problem]) {
    for p in problems {
        if p.path.is_empty() {
            efb_text_table::print_line(&format!("{}: {level}: {}", file.display(), p.message));
        } else {
            efb_text_table::print_line(&format!(
                "{}: {level}: {}: {}",
                file.display(),
                p.path,
                p.message
            ));
        }
    }
}

/// `--down` names: PAIR (every unit's pair of that name) or UNIT/PAIR.
fn live_state(config: &Config, down: &[String]) -> Result<LiveState> {
    let mut live = LiveState::all_up();
    for name in down {
        let (unit_filter, pair) = match name.split_once('/') {
            Some((unit, pair)) => (Some(unit), pair),
            None => (None, name.as_str()),
        };
        let matches: Vec<(String, String)> = config
            .units
            .values()
            .filter(|u| unit_filter.is_none_or(|f| f == u.name))
            .flat_map(|u| {
                u.pairs
                    .iter()
                    .map(move |p| (u.name.clone(), p.name.clone()))
            })
            .filter(|(_, p)| p == pair)
            .collect();
        if matches.is_empty() {
            let known: Vec<String> = config
                .units
                .values()
                .flat_map(|u| {
                    u.pairs
                        .iter()
                        .map(move |p| format!("{}/{}", u.name, p.name))
                })
                .collect();
            bail!(
                "--down {name}: no such pair; pairs are: {}",
                known.join(", ")
            );
        }
        live.down_pairs.extend(matches);
    }
    Ok(live)
}

/// A protocol number or name, as the shell takes it.
fn protocol(word: &str) -> Result<u8, String> {
    efb_model::protocols::number(word).ok_or_else(|| {
        format!(
            "{word:?} is not a protocol: {}",
            efb_model::protocols::ACCEPTED
        )
    })
}
