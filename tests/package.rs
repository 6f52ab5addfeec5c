//! The Debian packages (packaging/deb.sh; README "Installing on a switch"): what they hold,
//! their units as systemd reads them, efbd started from an installed package the way
//! efbd.service starts it (its account, readiness on a real NOTIFY_SOCKET), an upgrade that
//! keeps the datastore and its history; and efbd's refusals, before it starts anything, of a
//! datastore it may not write and of a malformed settings file.
//!
//! The packages are packed once per run from the binaries this run built (its profile: dev
//! under `cargo test`), with cargo-deb, which ./test.sh installs. Installing uses the real
//! dpkg on a scratch root (`--root`, maintainer scripts run with DPKG_ROOT pointing there).

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use efb_tests::{binary, repo, run_cli};
use tempfile::TempDir;

/// How long efbd (a debug build, on a busy machine) may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------
// The packages

/// The two packages of this run.
struct Packages {
    efb: PathBuf,
    target: PathBuf,
}

fn packages() -> &'static Packages {
    static PACKAGES: OnceLock<Packages> = OnceLock::new();
    PACKAGES.get_or_init(build_packages)
}

/// packaging/deb.sh with this run's profile; fast compression and no separate debug files
/// (the content is what counts, and a debug build's symbols are large).
fn build_packages() -> Packages {
    let efbd = binary("efbd");
    let profile_dir = efbd.parent().expect("profile directory");
    let profile = if profile_dir.ends_with("release") {
        "release"
    } else {
        "dev"
    };
    let out = profile_dir.join("efb-package/debs");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("package directory");
    let output = Command::new(repo().join("packaging/deb.sh"))
        .args([
            "--profile",
            profile,
            "--fast",
            "--no-separate-debug-symbols",
            "-o",
        ])
        .arg(&out)
        .output()
        .expect("packaging/deb.sh runs");
    assert!(
        output.status.success(),
        "packaging/deb.sh failed:\n{}",
        text(&output)
    );
    let find = |prefix: &str| {
        std::fs::read_dir(&out)
            .expect("package directory")
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .find(|path| {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                name.starts_with(prefix) && name.ends_with(".deb")
            })
            .unwrap_or_else(|| panic!("no {prefix}*.deb in {}:\n{}", out.display(), text(&output)))
    };
    Packages {
        efb: find("efb_"),
        target: find("efb-target_"),
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `command`; its standard output, or a panic with everything it said.
fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?} does not run: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}",
        text(&output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A copy of `deb` with another version, as the package before this one: same files and
/// scripts, so an upgrade from it tests what an upgrade does (maintainer scripts, conffiles,
/// the state directory), not what changed in between.
fn with_version(deb: &Path, version: &str, dir: &Path) -> PathBuf {
    let tree = dir.join("tree");
    run(Command::new("dpkg-deb").arg("-R").arg(deb).arg(&tree));
    let control = tree.join("DEBIAN/control");
    let text = std::fs::read_to_string(&control).expect("control file");
    let text: String = text
        .lines()
        .map(|line| match line.starts_with("Version:") {
            true => format!("Version: {version}\n"),
            false => format!("{line}\n"),
        })
        .collect();
    std::fs::write(&control, text).expect("control file");
    let out = dir.join(format!("efb_{version}.deb"));
    run(Command::new("dpkg-deb")
        .args(["--root-owner-group", "-Znone", "-b"])
        .arg(&tree)
        .arg(&out));
    out
}

// ---------------------------------------------------------------------------------------
// A scratch root with the real dpkg

/// A directory packages are installed into with `dpkg --root`.
struct Root {
    dir: TempDir,
}

impl Root {
    fn new() -> Root {
        let dir = tempfile::tempdir().expect("scratch root");
        // efbd's account goes through it, as through / on a switch.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let root = Root { dir };
        for sub in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "usr/sbin"] {
            std::fs::create_dir_all(root.path(sub)).expect("dpkg's directories");
        }
        std::fs::write(root.path("var/lib/dpkg/status"), "").expect("dpkg status");
        // Should a maintainer script try to start a unit (only where systemd runs), it may
        // not: the units belong to the scratch root, not to this machine.
        let policy = root.path("usr/sbin/policy-rc.d");
        std::fs::write(&policy, "#!/bin/sh\nexit 101\n").expect("policy-rc.d");
        std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        root
    }

    fn path(&self, path: &str) -> PathBuf {
        self.dir.path().join(path.trim_start_matches('/'))
    }

    /// dpkg on this root; the maintainer scripts run here, with DPKG_ROOT set to it (the
    /// root has no shell to chroot into). Its Depends are this machine's packages.
    fn dpkg(&self, args: &[&str]) -> String {
        run(Command::new("dpkg")
            .arg(format!("--root={}", self.dir.path().display()))
            .args([
                "--force-script-chrootless",
                "--force-depends",
                "--force-unsafe-io",
            ])
            .args(args))
    }

    fn install(&self, deb: &Path) -> String {
        self.dpkg(&["-i", &deb.display().to_string()])
    }

    /// The installed version of `package` and its state ("0.1.0-1 ii").
    fn version(&self, package: &str) -> String {
        run(Command::new("dpkg-query")
            .arg(format!("--root={}", self.dir.path().display()))
            .args(["-W", "-f=${Version} ${db:Status-Abbrev}", package]))
        .trim()
        .to_string()
    }

    /// The uid and gid of `account` in the root's own passwd file.
    fn account(&self, account: &str) -> (u32, u32) {
        let passwd = std::fs::read_to_string(self.path("etc/passwd")).expect("etc/passwd");
        passwd
            .lines()
            .map(|line| line.split(':').collect::<Vec<_>>())
            .find(|fields| fields.first() == Some(&account))
            .and_then(|fields| Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?)))
            .unwrap_or_else(|| panic!("no account {account} in the root's etc/passwd:\n{passwd}"))
    }

    /// `key=` of the installed efbd.service, as systemd reads it (the last one counts).
    fn unit_setting(&self, key: &str) -> String {
        let unit = std::fs::read_to_string(self.path("usr/lib/systemd/system/efbd.service"))
            .expect("installed efbd.service");
        unit.lines()
            .filter_map(|line| line.strip_prefix(key)?.strip_prefix('='))
            .next_back()
            .unwrap_or_else(|| panic!("efbd.service has no {key}=:\n{unit}"))
            .to_string()
    }

    /// This machine's systemd units (targets, slices) next to the installed ones, so that
    /// systemd-analyze can resolve the dependencies every service has.
    fn with_systemd_units(&self) {
        let host = Path::new("/usr/lib/systemd/system");
        assert!(
            host.join("multi-user.target").exists(),
            "{} is missing: install the Debian package systemd (./test.sh does)",
            host.display()
        );
        let units = self.path("usr/lib/systemd/system");
        std::fs::create_dir_all(&units).expect("unit directory");
        run(Command::new("cp").arg("-a").arg(host.join(".")).arg(&units));
    }
}

/// `systemd-analyze verify` of `unit` (a name in the root, or a file): Err with what it
/// said. systemd only warns, and exits 0, about an unknown key or a value it cannot parse
/// (the line is ignored): any output is a complaint.
fn verify(root: &Root, unit: &str) -> Result<(), String> {
    let output = Command::new("systemd-analyze")
        .arg("verify")
        .arg("--man=no")
        .arg(format!("--root={}", root.dir.path().display()))
        .arg(unit)
        .output()
        .expect("systemd-analyze runs (the Debian package systemd)");
    match output.status.success() && output.stdout.is_empty() && output.stderr.is_empty() {
        true => Ok(()),
        false => Err(text(&output)),
    }
}

// ---------------------------------------------------------------------------------------
// efbd as its unit runs it, told apart by a real notification socket

/// The service manager's end of `sd_notify`: a datagram socket efbd is told about in
/// NOTIFY_SOCKET, writable by efbd's account.
struct Notify {
    dir: TempDir,
    socket: UnixDatagram,
}

impl Notify {
    fn new() -> Notify {
        let dir = tempfile::tempdir().expect("notify directory");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let path = dir.path().join("notify");
        let socket = UnixDatagram::bind(&path).expect("notify socket");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        Notify { dir, socket }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("notify")
    }

    /// The next notification, if one comes within `wait`.
    fn next(&self, wait: Duration) -> Option<String> {
        self.socket
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .expect("timeout");
        let mut buffer = [0; 4096];
        let n = self.socket.recv(&mut buffer).ok()?;
        Some(String::from_utf8_lossy(&buffer[..n]).into_owned())
    }
}

/// MemoryDenyWriteExecute=yes, as the kernel enforces it without systemd (PR_SET_MDWE,
/// REFUSE_EXEC_GAIN: no memory both writable and executable, inherited across exec), the
/// unit's UMask= and LimitNOFILE= (the first argument); then exec of the command.
const UNIT_EXEC: &str = "import ctypes, os, resource, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:
    sys.exit('PR_SET_MDWE: ' + os.strerror(ctypes.get_errno()) + ' (Linux 6.3 or later needed)')
os.umask(0o027)
nofile = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
os.execv(sys.argv[2], sys.argv[2:])
";

fn is_root() -> bool {
    std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").expect("/proc/self")) == 0
}

/// `program` under `account` (uid, gid) with no capabilities and no new privileges, as
/// User=, CapabilityBoundingSet= and NoNewPrivileges= run it (only root may switch; another
/// account runs it as itself), with MemoryDenyWriteExecute=, UMask= and LimitNOFILE=
/// `nofile` (see UNIT_EXEC).
fn confined(program: &Path, account: (u32, u32), nofile: u64) -> Command {
    let python = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("python3");
    let mut command = match is_root() {
        true => {
            let mut setpriv = Command::new("setpriv");
            setpriv.args([
                &format!("--reuid={}", account.0),
                &format!("--regid={}", account.1),
                "--clear-groups",
                "--no-new-privs",
                "--inh-caps=-all",
                "--bounding-set=-all",
                python,
            ]);
            setpriv
        }
        false => {
            eprintln!("not root: efbd runs as this account, not as the unit's");
            Command::new(python)
        }
    };
    command
        .args(["-c", UNIT_EXEC])
        .arg(nofile.to_string())
        .arg(program);
    command
}

/// efbd started from the files installed in a root, as efbd.service starts it: the command
/// line of its ExecStart (paths into the root), its User= (see [`confined`]), the state and
/// runtime directories given to that account as StateDirectory= and RuntimeDirectory= do.
/// Flags move what must be in the root (datastore, socket) there and gNMI and metrics to
/// free loopback ports (tests run side by side); every other setting comes from the
/// installed settings file.
struct Service {
    child: Child,
    notify: Notify,
    log: PathBuf,
    socket: PathBuf,
    cli: PathBuf,
    /// efbd's STATUS= when it said READY=1.
    status: String,
}

impl Service {
    fn start(root: &Root, extra: &[&str]) -> Service {
        let account = root.account(&root.unit_setting("User"));
        let state = root.path("var/lib/efb");
        let runtime = root.path("run/efb");
        for dir in [&state, &runtime] {
            std::fs::create_dir_all(dir).expect("state and runtime directories");
            if is_root() {
                std::os::unix::fs::chown(dir, Some(account.0), Some(account.1)).expect("chown");
            }
        }
        let exec = root.unit_setting("ExecStart");
        let mut words = exec
            .split_whitespace()
            .map(|word| match word.starts_with('/') {
                true => root.path(word).display().to_string(),
                false => word.to_string(),
            });
        let program = PathBuf::from(words.next().expect("ExecStart names a program"));
        let notify = Notify::new();
        let log = notify.dir.path().join("efbd.log");
        let socket = runtime.join("efbd.sock");
        let nofile = root.unit_setting("LimitNOFILE");
        let nofile = nofile.parse().expect("LimitNOFILE= is a number");
        let child = confined(&program, account, nofile)
            .args(words)
            .arg("--datastore")
            .arg(&state)
            .arg("--mgmt-socket")
            .arg(&socket)
            .args(["--gnmi-listen", "127.0.0.1:0"])
            .args(["--metrics-listen", "127.0.0.1:0"])
            .args(extra)
            .env("NOTIFY_SOCKET", notify.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("efbd starts");
        let mut service = Service {
            child,
            notify,
            log,
            socket,
            cli: root.path("usr/bin/efb-cli"),
            status: String::new(),
        };
        service.status = service.wait_for("READY=1");
        service
    }

    /// Waits for a notification with the line `state`; its STATUS= line, if any.
    fn wait_for(&mut self, state: &str) -> String {
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(message) = self.notify.next(Duration::from_millis(200))
                && message.lines().any(|line| line == state)
            {
                return message
                    .lines()
                    .find_map(|line| line.strip_prefix("STATUS="))
                    .unwrap_or_default()
                    .to_string();
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("efbd exited ({status}) before {state}:\n{}", self.log());
            }
        }
        panic!(
            "no {state} from efbd within {START_TIMEOUT:?}:\n{}",
            self.log()
        );
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The installed efb-cli on this efbd: exit code, output, errors.
    fn cli(&self, args: &[&str], stdin: &str) -> (i32, String, String) {
        let mut command = Command::new(&self.cli);
        command.arg("--connect").arg(&self.socket).args(args);
        run_cli(command, stdin)
    }

    /// What `-c COMMAND` prints; a panic if it fails.
    fn show(&self, command: &str) -> String {
        let (code, out, err) = self.cli(&["-c", command], "");
        assert_eq!(code, 0, "{command}: {out}{err}");
        out
    }

    /// SIGTERM, as `systemctl stop` sends: STOPPING=1, then a clean exit.
    fn stop(mut self) {
        run(Command::new("kill").args(["-TERM", &self.child.id().to_string()]));
        self.wait_for("STOPPING=1");
        let status = self.child.wait().expect("efbd exits");
        assert!(
            status.success(),
            "efbd stopped with {status}:\n{}",
            self.log()
        );
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// efb-target from the installed package, on a free loopback port.
struct Chip {
    child: Child,
    address: String,
}

impl Chip {
    fn start(root: &Root) -> Chip {
        let mut child = Command::new(root.path("usr/bin/efb-target"))
            .args(["--listen", "127.0.0.1:0", "--log-level", "warn"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("efb-target starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("efb-target says where it listens");
        let address = line
            .trim()
            .strip_prefix("efb-target: P4Runtime on ")
            .unwrap_or_else(|| panic!("unexpected first line from efb-target: {line:?}"))
            .to_string();
        Chip { child, address }
    }
}

impl Drop for Chip {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Loads `file` (from the repository) and commits it with `comment`, from the installed
/// shell.
fn commit(service: &Service, file: &str, comment: &str) {
    let input = format!(
        "edit\nload override {}\ncommit comment \"{comment}\"\n",
        repo().join(file).display()
    );
    let (code, out, err) = service.cli(&[], &input);
    assert_eq!(code, 0, "committing {file}: {out}{err}");
}

// ---------------------------------------------------------------------------------------
// The tests

#[test]
fn the_packages_hold_the_binaries_units_settings_and_yang_module() {
    let packages = packages();
    let listing = run(Command::new("dpkg-deb").arg("-c").arg(&packages.efb));
    for file in [
        "./usr/bin/efbd",
        "./usr/bin/efb-cli",
        "./usr/bin/efb-config",
        "./usr/lib/systemd/system/efbd.service",
        "./usr/lib/sysusers.d/efb.conf",
        "./etc/efb/efbd.toml",
        "./etc/profile.d/efb.sh",
        "./usr/share/man/man8/efbd.8.gz",
        "./usr/share/man/man1/efb-cli.1.gz",
        "./usr/share/man/man1/efb-config.1.gz",
        "./usr/share/yang/modules/efb/ecofilter-balancer.yang",
        "./usr/share/doc/efb/README.md",
        "./usr/share/doc/efb/docs/security.md",
    ] {
        assert!(
            listing
                .lines()
                .any(|line| line.ends_with(&format!(" {file}"))),
            "efb lacks {file}:\n{listing}"
        );
    }
    assert!(
        !listing.contains("efb-target") && !listing.contains("./var/"),
        "the chip's emulator is a package of its own, the datastore no file of any:\n{listing}"
    );
    let field = |deb: &Path, name: &str| {
        run(Command::new("dpkg-deb").arg("-f").arg(deb).arg(name))
            .trim()
            .to_string()
    };
    assert_eq!(field(&packages.efb, "Package"), "efb");
    let depends = field(&packages.efb, "Depends");
    for needed in [
        "libc6",
        "libpcre2-8-0",
        "systemd | systemd-standalone-sysusers",
    ] {
        assert!(
            depends.contains(needed),
            "Depends lacks {needed}: {depends}"
        );
    }
    let conffiles = run(Command::new("dpkg-deb")
        .args(["-I"])
        .arg(&packages.efb)
        .arg("conffiles"));
    assert_eq!(conffiles, "/etc/efb/efbd.toml\n/etc/profile.d/efb.sh\n");
    assert_eq!(field(&packages.target, "Package"), "efb-target");
    let target = run(Command::new("dpkg-deb").arg("-c").arg(&packages.target));
    for file in [
        "./usr/bin/efb-target",
        "./usr/lib/systemd/system/efb-target.service",
        "./usr/share/man/man1/efb-target.1.gz",
    ] {
        assert!(target.contains(file), "efb-target lacks {file}:\n{target}");
    }

    let root = Root::new();
    root.install(&packages.efb);
    root.install(&packages.target);
    assert_eq!(
        std::fs::read(root.path("usr/share/yang/modules/efb/ecofilter-balancer.yang"))
            .expect("installed module"),
        std::fs::read(repo().join("yang/ecofilter-balancer.yang")).expect("module"),
        "the installed YANG module is the repository's"
    );
    let man = run(Command::new("zcat").arg(root.path("usr/share/man/man8/efbd.8.gz")));
    assert!(
        man.starts_with(".TH \"EFBD\" \"8\"") && man.contains("--config <FILE>"),
        "efbd(8) is efbd --help:\n{man}"
    );
}

#[test]
fn the_installed_settings_are_the_defaults_with_the_packaged_paths() {
    let root = Root::new();
    root.install(&packages().efb);
    let efbd = root.path("usr/bin/efbd");
    let config = root.path("etc/efb/efbd.toml");
    let installed = run(Command::new(&efbd)
        .arg("--config")
        .arg(&config)
        .arg("--print-settings"));
    let expected = run(Command::new(&efbd).args([
        "--print-settings",
        "--datastore",
        "/var/lib/efb",
        "--mgmt-socket",
        "/run/efb/efbd.sock",
    ]));
    assert_eq!(installed, expected);
    let text = std::fs::read_to_string(&config).expect("installed settings");
    assert!(
        text.contains("\ndatastore = \"/var/lib/efb\"\n")
            && text.contains("\n# max_input_mib = ")
            && text.contains("\n[management]\nsocket = \"/run/efb/efbd.sock\"\n"),
        "the packaged paths set, the defaults commented out:\n{text}"
    );
    assert_eq!(
        root.unit_setting("ExecStart"),
        "/usr/bin/efbd --config /etc/efb/efbd.toml"
    );
}

#[test]
fn the_units_pass_systemd_analyze_verify_and_a_broken_one_does_not() {
    let packages = packages();
    let root = Root::new();
    root.with_systemd_units();
    root.install(&packages.efb);
    root.install(&packages.target);
    for unit in ["efbd.service", "efb-target.service"] {
        if let Err(complaint) = verify(&root, unit) {
            panic!("systemd-analyze verify {unit}:\n{complaint}");
        }
    }
    let unit = std::fs::read_to_string(root.path("usr/lib/systemd/system/efbd.service"))
        .expect("installed efbd.service");
    for (good, broken, complaint) in [
        ("Type=notify", "Typo=notify", "Unknown key 'Typo'"),
        (
            "Type=notify",
            "Type=notifyy",
            "Failed to parse service type",
        ),
        (
            "ProtectSystem=strict",
            "ProtectSystem=strictly",
            "Failed to parse protect system value",
        ),
        (
            "ExecStart=/usr/bin/efbd",
            "ExecStart=/usr/bin/efbdd",
            "/usr/bin/efbdd is not executable",
        ),
    ] {
        let file = root.path("etc/systemd/system/efbd-broken.service");
        std::fs::create_dir_all(file.parent().expect("directory")).expect("directory");
        std::fs::write(&file, unit.replace(good, broken)).expect("broken unit");
        match verify(&root, &file.display().to_string()) {
            Ok(()) => panic!("systemd-analyze verify accepts {broken}"),
            Err(said) => assert!(said.contains(complaint), "{broken}: {said}"),
        }
    }
}

/// Every check of `systemd-analyze security` on efbd.service passes but those README
/// ("Installing on a switch") gives a reason for.
#[test]
fn efbd_service_is_hardened_but_where_the_readme_says_why_not() {
    let root = Root::new();
    root.with_systemd_units();
    root.install(&packages().efb);
    let report = run(Command::new("systemd-analyze")
        .args(["security", "--offline=yes", "--json=short"])
        .arg(format!("--root={}", root.dir.path().display()))
        .arg("efbd.service"));
    let checks: serde_json::Value = serde_json::from_str(&report).expect("JSON report");
    let exposed: Vec<&str> = checks
        .as_array()
        .expect("a list of checks")
        .iter()
        .filter(|check| check["exposure"].as_f64().is_some_and(|e| e > 0.0))
        .filter_map(|check| check["name"].as_str())
        .collect();
    let documented = [
        // gNMI serves the network; the socket is a Unix one.
        "PrivateNetwork=",
        "IPAddressDeny=",
        "RestrictAddressFamilies=~AF_UNIX",
        "RestrictAddressFamilies=~AF_(INET|INET6)",
        // Callers' uids (SO_PEERCRED) give their roles: they must not map to nobody.
        "PrivateUsers=",
        // chown of the socket to management.socket_group.
        "SystemCallFilter=~@privileged",
        // The boot id in /proc/sys.
        "ProcSubset=",
        // The audit log is for the efb group (mode 0640).
        "UMask=",
        "RootDirectory=/RootImage=",
        "DeviceAllow=",
    ];
    let undocumented: Vec<&&str> = exposed
        .iter()
        .filter(|name| !documented.contains(name))
        .collect();
    assert!(
        undocumented.is_empty(),
        "efbd.service fails these checks of systemd-analyze security: {undocumented:?}"
    );
    for name in [
        "NoNewPrivileges=",
        "ProtectSystem=",
        "MemoryDenyWriteExecute=",
    ] {
        assert!(
            checks
                .as_array()
                .into_iter()
                .flatten()
                .any(|check| check["name"] == name && check["exposure"].is_null()),
            "{name} is not among the checks passed:\n{report}"
        );
    }
}

#[test]
fn installed_efbd_runs_under_its_account_says_ready_and_serves_the_installed_shell() {
    let packages = packages();
    let root = Root::new();
    root.install(&packages.efb);
    root.install(&packages.target);
    let passwd = std::fs::read_to_string(root.path("etc/passwd")).expect("etc/passwd");
    let group = std::fs::read_to_string(root.path("etc/group")).expect("etc/group");
    assert!(
        passwd
            .lines()
            .any(|l| l.starts_with("efb:") && l.ends_with(":/var/lib/efb:/usr/sbin/nologin")),
        "postinst makes the account efb (sysusers.d):\n{passwd}"
    );
    for role in ["efb-admin:", "efb-operator:", "efb-viewer:"] {
        assert!(
            group.lines().any(|l| l.starts_with(role)),
            "no {role}\n{group}"
        );
    }
    assert!(
        root.path("etc/systemd/system/multi-user.target.wants/efbd.service")
            .is_symlink(),
        "efbd.service is enabled on install"
    );
    let chip = Chip::start(&root);
    let service = Service::start(&root, &["--p4runtime", &chip.address]);
    assert!(
        service.status.contains(&format!(
            "management API on unix:{}",
            service.socket.display()
        )) && service.status.contains("gNMI on 127.0.0.1:"),
        "STATUS= says where efbd serves: {}",
        service.status
    );
    assert!(
        !service
            .log()
            .contains("is below what the connection limits may hold"),
        "the unit's LimitNOFILE= holds every connection efbd may keep:\n{}",
        service.log()
    );
    // Ready means serving: the first connection is served, without a retry.
    let status = service.show("show system status");
    assert!(status.contains("var/lib/efb"), "{status}");
    if is_root() {
        let (uid, _) = root.account("efb");
        let owner = std::os::unix::fs::MetadataExt::uid(
            &std::fs::metadata(&service.socket).expect("socket"),
        );
        assert_eq!(owner, uid, "efbd runs as efb");
    }
    let deadline = Instant::now() + START_TIMEOUT;
    while !service.show("show system status").contains("in sync") {
        assert!(
            Instant::now() < deadline,
            "the installed efbd never got in sync with the installed efb-target:\n{}",
            service.show("show system status")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    commit(
        &service,
        "examples/one-filter-site.json",
        "from the package",
    );
    let history = service.show("show system commit");
    assert!(history.contains("from the package"), "{history}");
    service.stop();
}

#[test]
fn an_upgrade_keeps_the_datastore_its_history_and_the_local_settings() {
    let packages = packages();
    let scratch = tempfile::tempdir().expect("scratch");
    let previous = with_version(&packages.efb, "0.1.0-0", scratch.path());
    let root = Root::new();
    root.install(&previous);
    assert_eq!(root.version("efb"), "0.1.0-0 ii");
    let service = Service::start(&root, &["--no-data-plane"]);
    commit(&service, "examples/one-filter-site.json", "first site");
    commit(&service, "examples/ten-filter-site.json", "ten filters");
    let configuration = service.show("show configuration");
    let history = service.show("show system commit");
    service.stop();
    // An operator's change to the settings file, which an upgrade must keep.
    let settings = root.path("etc/efb/efbd.toml");
    let local = std::fs::read_to_string(&settings)
        .expect("settings")
        .replace("# socket_mode = \"0666\"", "socket_mode = \"0660\"");
    assert!(local.contains("\nsocket_mode = \"0660\""), "{local}");
    std::fs::write(&settings, &local).expect("local settings");

    let said = root.install(&packages.efb);
    assert!(
        said.contains("Unpacking efb (0.1.0-1) over (0.1.0-0)"),
        "{said}"
    );
    assert_eq!(root.version("efb"), "0.1.0-1 ii");
    assert_eq!(
        std::fs::read_to_string(&settings).expect("settings"),
        local,
        "the upgrade keeps the local settings"
    );
    let service = Service::start(&root, &["--no-data-plane"]);
    let mode = std::fs::metadata(&service.socket)
        .expect("socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o660, "efbd reads the kept settings");
    assert_eq!(service.show("show configuration"), configuration);
    let kept = service.show("show system commit");
    assert_eq!(kept, history);
    assert!(
        kept.contains("first site") && kept.contains("ten filters"),
        "{kept}"
    );
    service.stop();

    root.dpkg(&["--remove", "efb"]);
    assert!(
        root.path("var/lib/efb/db").exists(),
        "removing the package keeps the datastore"
    );
    root.dpkg(&["--purge", "efb"]);
    assert!(
        !root.path("var/lib/efb").exists(),
        "purging it forgets the datastore"
    );
}

// ---------------------------------------------------------------------------------------
// Bad input: refused before anything starts

/// Runs efbd (`command`) told to notify `notify`, expecting a refusal: its one line of
/// error. Nothing may have started: no banner on standard output, no READY=1.
fn refused(mut command: Command, notify: &Notify) -> (i32, String) {
    let mut child = command
        .env("NOTIFY_SOCKET", notify.path())
        .args(["--log-level", "warn"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("efbd starts");
    let deadline = Instant::now() + START_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("efbd's status") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("efbd started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    let mut err = String::new();
    let _ = child.stdout.take().map(|mut s| s.read_to_string(&mut out));
    let _ = child.stderr.take().map(|mut s| s.read_to_string(&mut err));
    assert_eq!(out, "", "efbd announced listeners before refusing");
    assert_eq!(
        notify.next(Duration::from_millis(1)),
        None,
        "efbd said READY=1"
    );
    assert_eq!(err.lines().count(), 1, "one line of error:\n{err}");
    (status.code().unwrap_or(-1), err)
}

#[test]
fn a_datastore_efbd_may_not_write_is_refused_naming_the_setting() {
    let dir = tempfile::tempdir().expect("scratch");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let datastore = dir.path().join("efb");
    std::fs::create_dir(&datastore).expect("datastore directory");
    std::fs::set_permissions(&datastore, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let run_dir = dir.path().join("run");
    std::fs::create_dir(&run_dir).expect("run directory");
    std::fs::set_permissions(&run_dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let socket = run_dir.join("efbd.sock");
    let notify = Notify::new();
    // As an account that does not own it (root may write anywhere).
    let nobody = (65534, 65534);
    let mut command = confined(&binary("efbd"), nobody, 1024);
    command
        .arg("--datastore")
        .arg(&datastore)
        .arg("--mgmt-socket")
        .arg(&socket)
        .args(["--gnmi-listen", "127.0.0.1:0", "--no-data-plane"]);
    let (code, err) = refused(command, &notify);
    assert_eq!(code, 1, "{err}");
    let expected = format!(
        "efbd: datastore {} (setting `datastore`, flag --datastore): efbd's account (uid ",
        datastore.display()
    );
    assert!(
        err.starts_with(&expected)
            && err.contains("may not write there: Permission denied")
            && err.contains("or set `datastore` to a directory it may write"),
        "{err}"
    );
    assert!(!socket.exists(), "no socket bound");
    assert_eq!(
        std::fs::read_dir(&datastore).expect("datastore").count(),
        0,
        "nothing written"
    );
}

#[test]
fn a_malformed_settings_file_is_refused_with_its_line_and_setting() {
    let dir = tempfile::tempdir().expect("scratch");
    let datastore = dir.path().join("efb");
    let socket = dir.path().join("efbd.sock");
    for (text, expected) in [
        (
            "datastore = \"/var/lib/efb\"\n\n[management]\nmax_sessions = \"ten\"\n",
            "line 4, column 16: setting `management.max_sessions`: invalid type: string \"ten\", expected a whole number",
        ),
        (
            "[gnmi]\nlisten = \"0.0.0.0:9339\n",
            "line 2, column 23: setting `gnmi.listen`: invalid basic string",
        ),
    ] {
        let file = dir.path().join("efbd.toml");
        std::fs::write(&file, text).expect("settings file");
        let notify = Notify::new();
        let mut command = Command::new(binary("efbd"));
        command
            .arg("--config")
            .arg(&file)
            .arg("--datastore")
            .arg(&datastore)
            .arg("--mgmt-socket")
            .arg(&socket);
        let (code, err) = refused(command, &notify);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.starts_with(&format!("efbd: {}: {expected}", file.display()))
                && err
                    .ends_with("(`efbd --print-settings` prints every setting with its default)\n"),
            "{err}"
        );
        assert!(!datastore.exists() && !socket.exists(), "nothing created");
    }
}
