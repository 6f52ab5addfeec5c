//! Helpers shared by the cross-crate tests: where the repository, the binaries and the real
//! clients are, and a real efbd process to talk to.

pub mod accounts;
pub mod certs;
pub mod chip_io;
pub mod figures;
pub mod gnmi_io;
pub mod mgmt_io;
pub mod terminal;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// The repository's top directory.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// A tool of the Python virtualenv with pyang and the gNMI clients that `./test.sh` prepares
/// (`.venv/`), or from `EFB_VENV`. Real-client tests fail, loudly, when it is missing: run
/// them through `./test.sh`.
pub fn venv_tool(name: &str) -> PathBuf {
    tool_of("EFB_VENV", ".venv", name)
}

/// A tool of the virtualenv with p4runtime-shell (`.venv-p4/`, or from `EFB_P4_VENV`).
pub fn p4_venv_tool(name: &str) -> PathBuf {
    tool_of("EFB_P4_VENV", ".venv-p4", name)
}

fn tool_of(variable: &str, default: &str, name: &str) -> PathBuf {
    let venv = std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(default));
    let tool = venv.join("bin").join(name);
    assert!(
        tool.exists(),
        "{} is missing: run ./test.sh, which creates the virtualenvs with the real clients",
        tool.display()
    );
    tool
}

/// Binaries this process has built.
static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A binary of the workspace, built by this test run's profile. Built (or found up to date)
/// once per test process: `cargo test -p efb-tests` does not rebuild other packages'
/// binaries, and a stale efbd would test old code.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    // target/<profile>/deps/<test> -> target/<profile>/<name>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    let path = dir.join(name);
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if !built.iter().any(|b| b == name) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut command = Command::new(cargo);
        command
            .args(["build", "--quiet", "--bin", name])
            .current_dir(repo());
        // What cargo sets for this test (the package's name, version, manifest): ring's
        // build script reruns when they change, so with them the build here and the one
        // that built the tests (where they are unset) rebuilt ring and everything above it
        // in turn, a minute or more each time.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let per_package = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_EXE_"]
                .iter()
                .any(|prefix| key.starts_with(prefix))
                || [
                    "CARGO_CRATE_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                    "CARGO_RUSTC_CURRENT_DIR",
                ]
                .contains(&key.as_ref());
            if per_package {
                command.env_remove(key.as_ref());
            }
        }
        if dir.ends_with("release") {
            command.arg("--release");
        }
        let status = command.status().expect("cargo build runs");
        assert!(status.success(), "cargo build --bin {name} failed");
        built.push(name.to_string());
    }
    path
}

/// Runs a Python client scenario that prints a line per check and `done` at its end: its
/// lines are the report, and a failed check fails the test.
pub fn python_scenario(command: Command, scenario: &str) {
    let out = output_within(command, SCENARIO_LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.is_some_and(|s| s.success()) && stdout.contains("\ndone"),
        "{scenario} failed{}:\n{stdout}\n{}",
        match out.status {
            Some(_) => String::new(),
            None => format!(" (killed after {} s)", SCENARIO_LIMIT.as_secs()),
        },
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The longest a client scenario may run: the slowest (oc-config-validate's) takes about a
/// minute; a hung client must fail its test, not hold CI until its own limit.
const SCENARIO_LIMIT: Duration = Duration::from_secs(300);

/// What a process printed, and how it ended (None: killed at the limit).
pub struct Bounded {
    pub status: Option<std::process::ExitStatus>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Runs `command` to its end or for `limit`, whichever comes first, keeping what it printed.
/// It runs in a process group of its own, killed whole at the limit: what it started would
/// otherwise hold its output open.
pub fn output_within(mut command: Command, limit: Duration) -> Bounded {
    use std::os::unix::process::CommandExt;
    let mut child = command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let collect = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = collect(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = collect(child.stderr.take().map(|p| Box::new(p) as _));
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let group = format!("-{}", child.id());
                let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
                let _ = child.wait();
                break None;
            }
        }
    };
    Bounded {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// A real efbd on a temporary (or given) datastore, its management API on the Unix socket
/// in the datastore directory, gNMI on a port the system picks.
pub struct Daemon {
    child: Child,
    /// The management API's Unix socket (efb-cli --connect takes it as it is).
    pub address: String,
    /// The management API's TCP address (with TLS), when started with `--mgmt-listen`.
    pub tcp: Option<String>,
    /// The gNMI server's address, if efbd serves gNMI.
    pub gnmi: Option<String>,
    /// Whether gNMI runs over TLS.
    pub gnmi_tls: bool,
    /// The certificate gNMI clients must trust, as efbd prints it.
    pub gnmi_cert: Option<PathBuf>,
    /// The metrics address (`--metrics-listen`; without it, efbd serves no metrics:
    /// parallel tests would all want 9464).
    pub metrics: Option<String>,
    pub datastore: PathBuf,
}

impl Daemon {
    /// Starts efbd on `datastore`; without a `--p4runtime` in `extra` it runs without a
    /// data plane.
    pub fn start(datastore: &Path, extra: &[&str]) -> Daemon {
        Daemon::spawn(datastore, extra, "warn", Stdio::inherit())
    }

    /// Like [`Daemon::start`], with efbd's log (level info) written to `log`.
    pub fn start_logging(datastore: &Path, extra: &[&str], log: &Path) -> Daemon {
        let file = std::fs::File::create(log).expect("log file");
        Daemon::spawn(datastore, extra, "info", Stdio::from(file))
    }

    fn spawn(datastore: &Path, extra: &[&str], level: &str, log: Stdio) -> Daemon {
        let data_plane: &[&str] = if extra.contains(&"--p4runtime") {
            &[]
        } else {
            &["--no-data-plane"]
        };
        let no_metrics: &[&str] = if extra.contains(&"--metrics-listen") {
            &[]
        } else {
            &["--no-metrics"]
        };
        let mut child = Command::new(binary("efbd"))
            .arg("--datastore")
            .arg(datastore)
            .args(["--log-level", level])
            .args(["--gnmi-listen", "127.0.0.1:0"])
            .args(data_plane)
            .args(no_metrics)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("efbd starts");
        let stdout = child.stdout.take().expect("efbd stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .expect("efbd says where it listens");
        let address = line
            .trim()
            .strip_prefix("efbd: management API on unix:")
            .unwrap_or_else(|| panic!("unexpected first line from efbd: {line:?}"))
            .to_string();
        // Second line: `efbd: gNMI on ADDR (TLS); certificate PATH`, `efbd: gNMI on ADDR
        // (plaintext)` or `efbd: gNMI off`.
        let mut second = String::new();
        reader
            .read_line(&mut second)
            .expect("efbd says where gNMI listens");
        let gnmi = second
            .trim()
            .strip_prefix("efbd: gNMI on ")
            .and_then(|rest| rest.split_once(' '))
            .map(|(addr, mode)| (addr.to_string(), mode.to_string()));
        let gnmi_cert = gnmi.as_ref().and_then(|(_, mode)| {
            let path = mode.strip_prefix("(TLS); certificate ")?;
            let path = path.trim_end_matches(" (self-signed, made now)");
            Some(PathBuf::from(
                path.trim_end_matches(" (self-signed, renewed now)"),
            ))
        });
        // Third, with TCP on: `efbd: management API on ADDR (TLS)`.
        let tcp = extra.contains(&"--mgmt-listen").then(|| {
            let mut third = String::new();
            reader
                .read_line(&mut third)
                .expect("efbd says where its TCP listener is");
            third
                .trim()
                .strip_prefix("efbd: management API on ")
                .and_then(|rest| rest.strip_suffix(" (TLS)"))
                .unwrap_or_else(|| panic!("unexpected third line from efbd: {third:?}"))
                .to_string()
        });
        // Then `efbd: metrics on http://ADDR/metrics` (or `efbd: metrics off`).
        let metrics = extra
            .contains(&"--metrics-listen")
            .then(|| metrics_address(&mut reader, "efbd"));
        Daemon {
            child,
            address,
            tcp,
            metrics,
            gnmi_tls: gnmi
                .as_ref()
                .is_some_and(|(_, mode)| mode.starts_with("(TLS)")),
            gnmi_cert,
            gnmi: gnmi.map(|(addr, _)| addr),
            datastore: datastore.to_path_buf(),
        }
    }

    /// SIGTERM, then the exit status (true: it stopped cleanly).
    pub fn stop(mut self) -> bool {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        for _ in 0..100 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        false
    }

    /// SIGKILL: the process dies wherever it is.
    /// The efbd process id (to read its memory use).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Runs one scenario of the Python gNMI clients (`tests/gnmi/clients.py`) against this
    /// daemon; its lines are the report, and a failed check fails the test.
    pub fn gnmi_clients(&self, scenario: &str) {
        let mut command = Command::new(venv_tool("python"));
        command
            .arg(repo().join("tests/gnmi/clients.py"))
            .arg(scenario)
            .args(["--gnmi", self.gnmi.as_deref().expect("efbd serves gNMI")])
            .args(["--mgmt", &self.address])
            .arg("--cli")
            .arg(binary("efb-cli"));
        if let Some(cert) = &self.gnmi_cert {
            command.arg("--cert").arg(cert);
        }
        python_scenario(command, scenario);
    }

    /// Runs `efb-cli` non-interactively against this daemon: stdin lines or `-c`.
    pub fn cli(&self, args: &[&str], stdin: &str) -> (i32, String, String) {
        let mut command = Command::new(binary("efb-cli"));
        command
            .args(["--connect", &self.address, "--user", "tester"])
            .args(args);
        run_cli(command, stdin)
    }

    /// Replaces the configuration with `file` (JSON or set lines) and commits it, from the
    /// shell; panics with what the shell said if that fails.
    pub fn commit_file(&self, file: &Path) {
        let (code, out, err) = self.cli(
            &[],
            &format!("edit\nload override {}\ncommit\n", file.display()),
        );
        assert_eq!(code, 0, "committing {}: {out}{err}", file.display());
    }
}

/// Runs an efb-cli `command` with `stdin`: exit code, standard output, standard error.
pub fn run_cli(mut command: Command, stdin: &str) -> (i32, String, String) {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("efb-cli starts");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.as_bytes());
    }
    let out = child.wait_with_output().expect("efb-cli runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address in the line `<program>: metrics on http://ADDR/metrics` (https with TLS),
/// read next.
fn metrics_address(reader: &mut impl BufRead, program: &str) -> String {
    let mut line = String::new();
    reader
        .read_line(&mut line)
        .expect("the program says where its metrics are");
    line.trim()
        .strip_prefix(&format!("{program}: metrics on "))
        .and_then(|rest| {
            rest.strip_prefix("http://")
                .or_else(|| rest.strip_prefix("https://"))
        })
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("unexpected metrics line from {program}: {line:?}"))
        .to_string()
}

/// A real efb-target (the software chip) on a port the system picks.
pub struct Target {
    child: Child,
    pub address: String,
    /// The metrics address, when started with `--metrics-listen`.
    pub metrics: Option<String>,
}

impl Target {
    pub fn start(extra: &[&str]) -> Target {
        let mut child = Command::new(binary("efb-target"))
            .args(["--listen", "127.0.0.1:0", "--log-level", "warn"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("efb-target starts");
        let stdout = child.stdout.take().expect("efb-target stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .expect("efb-target says where it listens");
        let address = line
            .trim()
            .strip_prefix("efb-target: P4Runtime on ")
            .unwrap_or_else(|| panic!("unexpected first line from efb-target: {line:?}"))
            .to_string();
        let metrics = extra
            .contains(&"--metrics-listen")
            .then(|| metrics_address(&mut reader, "efb-target"));
        Target {
            child,
            address,
            metrics,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The one-filter example site as `set` lines (what an engineer types to build it).
pub fn one_filter_site_lines() -> Vec<String> {
    let schema = efb_yang::Schema::load().expect("schema");
    let text =
        std::fs::read_to_string(repo().join("examples/one-filter-site.json")).expect("example");
    let tree = efb_yang::json::from_json(&schema, &text, efb_yang::json::Check::Complete)
        .expect("example parses");
    efb_yang::setlines::render_tree(&schema, &tree)
}

/// A plain HTTP/1.0 GET (metrics endpoints, Prometheus's API): status and body, or None if
/// nothing answered.
pub fn http_get(address: &str, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_past_its_limit_is_killed_with_what_it_printed() {
        let started = std::time::Instant::now();
        let mut command = Command::new("sh");
        // The sleep is a child of the shell and holds its output open: killing the shell
        // alone would leave the readers waiting for it.
        command.args(["-c", "echo started; sleep 30; echo never"]);
        let out = output_within(command, Duration::from_millis(300));
        assert!(out.status.is_none(), "killed at the limit");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_command_within_its_limit_ends_with_its_status() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo out; echo err >&2; exit 3"]);
        let out = output_within(command, Duration::from_secs(30));
        assert_eq!(out.status.and_then(|s| s.code()), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }
}
