//! efbd's files against another account on the machine, as efbd meets them at start: a
//! datastore directory others may write, or that belongs to someone else, is refused in one
//! line naming the fix; links planted where efbd (root here) writes are refused and what
//! they point at is left alone; the database and the generated key are private whatever
//! the umask; a users file or a TLS key others may write is refused; a client certificate
//! naming two users logs in as none. A factory default in the datastore that another
//! account wrote is not booted; a datastore path that is a link of another account is
//! refused; the generated certificate is good for a year, and renewed near its end.
//!
//! Tests run as root (as in CI): root is what makes a planted link dangerous. The checks of
//! another account's files give them to `nobody` and are skipped when not root.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use efb_tests::gnmi_io::authed;
use efb_tests::{Daemon, binary, repo, run_cli};
use gnmi_proto::gnmi::CapabilityRequest;
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use tonic::Code;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

/// The test's effective uid is root's (/proc/self belongs to it).
fn is_root() -> bool {
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

/// `nobody`'s uid: an account that is neither root nor efbd's.
fn nobody() -> u32 {
    let out = Command::new("id").args(["-u", "nobody"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// efbd on `datastore` with gNMI (TLS) on a free port, no chip, no metrics, under `umask`.
fn efbd(datastore: &Path, umask: &str, extra: &[&str]) -> Command {
    let mut command = Command::new("sh");
    command
        .args(["-c", &format!("umask {umask}; exec \"$0\" \"$@\"")])
        .arg(binary("efbd"))
        .arg("--datastore")
        .arg(datastore)
        .args(["--no-data-plane", "--no-metrics", "--log-level", "off"])
        .args(["--gnmi-listen", "127.0.0.1:0"])
        .args(extra);
    command
}

/// efbd must not start: its exit code and its one line of error.
fn refused(datastore: &Path, extra: &[&str]) -> (i32, String) {
    let (code, out, err) = run_cli(efbd(datastore, "022", extra), "");
    assert!(out.is_empty(), "efbd started: {out}");
    assert_eq!(err.lines().count(), 1, "one line of error:\n{err}");
    (code, err)
}

/// efbd started (its banner read): stopped with SIGTERM when dropped.
struct Running(Child);

impl Running {
    fn start(datastore: &Path, umask: &str, extra: &[&str]) -> Running {
        let mut child = efbd(datastore, umask, extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        if !line.starts_with("efbd: management API on unix:") {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "efbd did not start: {line}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Running(child)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

#[test]
fn a_datastore_others_may_write_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    for (bits, who) in [(0o777, "group and others"), (0o770, "group")] {
        let datastore = dir.path().join(format!("datastore-{bits:o}"));
        std::fs::create_dir(&datastore).unwrap();
        chmod(&datastore, bits);
        let (code, err) = refused(&datastore, &[]);
        assert_eq!(code, 1, "{err}");
        let shown = datastore.display();
        assert_eq!(
            err,
            format!(
                "efbd: datastore {shown} (setting `datastore`, flag --datastore): writable by \
                 {who} (mode {bits:04o}), so another account could replace efbd's database and \
                 files there, or plant links where efbd writes; chmod go-w {shown}\n"
            )
        );
        assert_eq!(
            std::fs::read_dir(&datastore).unwrap().count(),
            0,
            "nothing written"
        );
        // The fix given works.
        let fixed = Command::new("chmod")
            .args(["go-w", &shown.to_string()])
            .status()
            .unwrap();
        assert!(fixed.success());
        drop(Running::start(&datastore, "022", &[]));
    }
}

#[test]
fn a_datastore_of_another_account_is_refused() {
    if !is_root() {
        println!("SKIPPED: giving a directory to another account needs root (CI runs as root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let datastore = dir.path().join("datastore");
    std::fs::create_dir(&datastore).unwrap();
    chmod(&datastore, 0o755);
    let nobody = nobody();
    std::os::unix::fs::chown(&datastore, Some(nobody), None).unwrap();
    let (code, err) = refused(&datastore, &[]);
    assert_eq!(code, 1, "{err}");
    let shown = datastore.display();
    assert!(
        err.starts_with(&format!(
            "efbd: datastore {shown} (setting `datastore`, flag --datastore): owned by nobody \
             (uid {nobody}), not by efbd's account root (uid 0)"
        )) && err.ends_with(&format!(
            "; chown root {shown}, or run efbd as the account that owns it\n"
        )),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&datastore).unwrap().count(), 0);
}

#[test]
fn links_planted_where_efbd_writes_are_refused_and_what_they_name_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let datastore = dir.path().join("datastore");
    std::fs::create_dir(&datastore).unwrap();
    // A file only root may read, as /etc/shadow.
    let precious = dir.path().join("shadow");
    std::fs::write(&precious, "root:$y$secret:20000::::::\n").unwrap();
    chmod(&precious, 0o600);
    for (name, refusal) in [
        ("gnmi-key.pem", "gnmi-key.pem: is a symbolic link"),
        ("gnmi-cert.pem", "gnmi-cert.pem: is a symbolic link"),
        (
            "efbd.sock",
            "efbd.sock: is a symbolic link, which efbd does not follow",
        ),
    ] {
        let link = datastore.join(name);
        symlink(&precious, &link).unwrap();
        let (code, err) = refused(&datastore, &[]);
        assert!(code == 1 && err.contains(refusal), "{name}: {err}");
        if name.ends_with(".pem") {
            assert!(err.contains(&format!("rm {}", link.display())), "{err}");
        }
        assert_eq!(
            std::fs::read_to_string(&precious).unwrap(),
            "root:$y$secret:20000::::::\n"
        );
        assert_eq!(mode(&precious), 0o600, "{name}: mode of the file linked to");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        std::fs::remove_file(&link).unwrap();
    }
    // Without the links, efbd starts: they were the only problem.
    drop(Running::start(&datastore, "022", &[]));
}

#[test]
fn the_database_and_the_generated_key_are_private_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    for umask in ["022", "077", "000"] {
        // Missing: efbd makes it.
        let datastore = dir.path().join(format!("datastore-{umask}"));
        let running = Running::start(&datastore, umask, &[]);
        let modes: Vec<(&str, u32)> = ["", "db", "gnmi-key.pem", "gnmi-cert.pem"]
            .into_iter()
            .map(|name| (name, mode(&datastore.join(name))))
            .collect();
        assert_eq!(
            modes,
            [
                ("", 0o711),
                ("db", 0o700),
                ("gnmi-key.pem", 0o600),
                ("gnmi-cert.pem", 0o644)
            ],
            "umask {umask}"
        );
        drop(running);
    }
    // A database directory an older efbd left open to everyone is closed at the next start.
    let datastore = dir.path().join("datastore-022");
    chmod(&datastore.join("db"), 0o755);
    let running = Running::start(&datastore, "022", &[]);
    assert_eq!(mode(&datastore.join("db")), 0o700);
    drop(running);
}

#[test]
fn a_users_file_or_a_key_others_may_write_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let datastore = dir.path().join("datastore");
    let users = dir.path().join("users.toml");
    std::fs::copy(repo().join("examples/users.demo.toml"), &users).unwrap();
    let shown = users.display().to_string();
    let with_users = ["--gnmi-users", shown.as_str()];
    chmod(&users, 0o666);
    let (code, err) = refused(&datastore, &with_users);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err,
        format!(
            "efbd: gnmi.users (--gnmi-users): {shown}: writable by group and others (mode 0666), \
             so another account could change what efbd trusts in it; chmod go-w {shown}\n"
        )
    );
    chmod(&users, 0o644);
    if is_root() {
        let nobody = nobody();
        std::os::unix::fs::chown(&users, Some(nobody), None).unwrap();
        let (code, err) = refused(&datastore, &with_users);
        assert!(
            code == 1
                && err.contains(&format!(
                    "{shown}: owned by nobody (uid {nobody}), neither root nor efbd's account"
                ))
                && err.ends_with(&format!("; chown root {shown}\n")),
            "{err}"
        );
        std::os::unix::fs::chown(&users, Some(0), None).unwrap();
    } else {
        println!("SKIPPED: a users file of another account (needs root)");
    }
    // A link to a good file is fine: the file it leads to is judged.
    chmod(&users, 0o600);
    let link = dir.path().join("users-link.toml");
    symlink(&users, &link).unwrap();
    drop(Running::start(
        &datastore,
        "022",
        &["--gnmi-users", link.to_str().unwrap()],
    ));

    // A configured key: the generated pair of that start, copied and opened to others.
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::copy(datastore.join("gnmi-cert.pem"), &cert).unwrap();
    std::fs::copy(datastore.join("gnmi-key.pem"), &key).unwrap();
    chmod(&key, 0o646);
    let tls = [
        "--gnmi-tls-cert",
        cert.to_str().unwrap(),
        "--gnmi-tls-key",
        key.to_str().unwrap(),
    ];
    let (code, err) = refused(&datastore, &tls);
    assert!(
        code == 1
            && err.starts_with(&format!(
                "efbd: gnmi.tls_key (--gnmi-tls-key): {}: writable by others (mode 0646)",
                key.display()
            ))
            && err.ends_with(&format!("chmod go-w {}\n", key.display())),
        "{err}"
    );
    chmod(&key, 0o600);
    drop(Running::start(&datastore, "022", &tls));
}

/// A CA, a certificate it signs for `cns` (several: each a subject CN), as PEM files in
/// `dir`: ca.pem, client.pem, client-key.pem.
fn client_certificate(dir: &Path, cns: &[&str]) -> PathBuf {
    use rcgen::{CertificateParams, DnType, KeyPair};
    let issuer = efb_tests::certs::ca(dir);
    let mut params = CertificateParams::new(Vec::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    for (i, cn) in cns.iter().enumerate() {
        // rcgen keeps one value per attribute type: the second CN under its OID spelled out.
        let ty = match i {
            0 => DnType::CommonName,
            1 => DnType::CustomDnType(vec![2, 5, 4, 3]),
            _ => panic!("at most two CNs"),
        };
        params.distinguished_name.push(ty, *cn);
    }
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("client.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("client-key.pem"), key.serialize_pem()).unwrap();
    dir.join("ca.pem")
}

#[test]
fn a_client_certificate_with_two_common_names_logs_in_as_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let users = repo().join("examples/users.demo.toml");
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (cns, refusal) in [
        (
            &["viewer", "admin"][..],
            Some("the client certificate has 2 subject common names (CN); one is needed"),
        ),
        (&["viewer"][..], None),
    ] {
        let certs = dir.path().join(cns.join("-"));
        std::fs::create_dir(&certs).unwrap();
        let ca = client_certificate(&certs, cns);
        let daemon = Daemon::start(
            &certs.join("datastore"),
            &[
                "--gnmi-users",
                users.to_str().unwrap(),
                "--gnmi-client-ca",
                ca.to_str().unwrap(),
            ],
        );
        let read = |path: PathBuf| std::fs::read_to_string(path).unwrap();
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(read(
                daemon.datastore.join("gnmi-cert.pem"),
            )))
            .domain_name("127.0.0.1")
            .identity(Identity::from_pem(
                read(certs.join("client.pem")),
                read(certs.join("client-key.pem")),
            ));
        let endpoint = Channel::from_shared(format!("https://{}", daemon.gnmi.clone().unwrap()))
            .unwrap()
            .tls_config(tls)
            .unwrap();
        rt.block_on(async {
            let mut client = GNmiClient::new(endpoint.connect().await.unwrap());
            let answer = client.capabilities(CapabilityRequest::default()).await;
            match refusal {
                Some(refusal) => {
                    let err = answer.unwrap_err();
                    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
                    assert!(err.message().starts_with(refusal), "{err:?}");
                    // Not even with the password of one of the names.
                    let err = client
                        .capabilities(authed(CapabilityRequest::default(), "admin"))
                        .await
                        .unwrap_err();
                    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
                }
                None => {
                    answer.unwrap();
                }
            }
        });
        assert!(daemon.stop());
    }
}

/// What the shell of the efbd on `datastore` says to `show ...`.
fn show(datastore: &Path, what: &str) -> String {
    let mut command = Command::new(binary("efb-cli"));
    command
        .arg("--connect")
        .arg(datastore.join("efbd.sock"))
        .args(["-c", &format!("show {what}")]);
    let (code, out, err) = run_cli(command, "");
    assert_eq!(code, 0, "{out}{err}");
    out
}

#[test]
fn a_factory_default_another_account_may_write_is_not_booted() {
    let dir = tempfile::tempdir().unwrap();
    let datastore = dir.path().join("datastore");
    std::fs::create_dir(&datastore).unwrap();
    chmod(&datastore, 0o755);
    let file = datastore.join("factory-default.json");
    std::fs::write(
        &file,
        r#"{"ecofilter-balancer:ecofilter-balancer": {"balancing-method": "layer-4"}}"#,
    )
    .unwrap();
    chmod(&file, 0o666);
    let shown = file.display();
    let (code, err) = refused(&datastore, &[]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err,
        format!(
            "efbd: factory default (setting `factory_default`): {shown}: writable by group and \
             others (mode 0666), so another account could change what efbd trusts in it; chmod \
             go-w {shown}\n"
        )
    );
    if is_root() {
        // The attack as found: nobody's file, open to all.
        let nobody = nobody();
        std::os::unix::fs::chown(&file, Some(nobody), None).unwrap();
        let (code, err) = refused(&datastore, &[]);
        assert_eq!(code, 1, "{err}");
        assert_eq!(
            err,
            format!(
                "efbd: factory default (setting `factory_default`): {shown}: owned by nobody \
                 (uid {nobody}), neither root nor efbd's account root (uid 0), so another \
                 account could change what efbd trusts in it; chown root {shown}\n"
            )
        );
        std::os::unix::fs::chown(&file, Some(0), None).unwrap();
    } else {
        println!("SKIPPED: a factory default of another account (needs root)");
    }
    // Nothing was committed: with the fix, the file boots as the first commit.
    chmod(&file, 0o644);
    let running = Running::start(&datastore, "022", &[]);
    let history = show(&datastore, "system commit");
    let commits: Vec<&str> = history.lines().skip(1).collect();
    assert!(
        commits.len() == 1 && commits[0].starts_with("1 ") && commits[0].contains("boot"),
        "{history}"
    );
    assert!(show(&datastore, "configuration").contains("layer-4"));
    drop(running);
}

#[test]
fn a_datastore_link_of_another_account_is_refused_one_of_root_is_followed() {
    if !is_root() {
        println!("SKIPPED: giving a link to another account needs root (CI runs as root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("efb");
    std::fs::create_dir(&target).unwrap();
    chmod(&target, 0o711);
    let link = dir.path().join("datastore");
    symlink(&target, &link).unwrap();
    let nobody = nobody();
    std::os::unix::fs::lchown(&link, Some(nobody), None).unwrap();
    let (code, err) = refused(&link, &[]);
    assert_eq!(code, 1, "{err}");
    let (shown, to) = (link.display(), std::fs::canonicalize(&target).unwrap());
    let to = to.display();
    assert_eq!(
        err,
        format!(
            "efbd: datastore {shown} (a link to {to}) (setting `datastore`, flag --datastore): is \
             a symbolic link owned by nobody (uid {nobody}), neither root nor efbd's account root \
             (uid 0), so that account could re-point it to a directory of its own; chown -h root \
             {shown}, or set `datastore` to the directory it leads to ({to})\n"
        )
    );
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "nothing written"
    );
    // Root's link to a good directory: efbd starts, and keeps its files where it leads.
    std::os::unix::fs::lchown(&link, Some(0), None).unwrap();
    let running = Running::start(&link, "022", &[]);
    assert_eq!(mode(&target.join("gnmi-key.pem")), 0o600);
    assert_eq!(mode(&target.join("db")), 0o700);
    drop(running);
}

/// The validity of the first certificate in `path`: not before, not after (Unix seconds).
fn validity(path: &Path) -> (i64, i64) {
    let pem = std::fs::read(path).unwrap();
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
    let (_, cert) = x509_parser::parse_x509_certificate(&pem.contents).unwrap();
    let validity = cert.validity();
    (
        validity.not_before.timestamp(),
        validity.not_after.timestamp(),
    )
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

const DAY: i64 = 24 * 3600;

#[test]
fn the_generated_certificate_is_good_for_a_year_and_renewed_near_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let datastore = dir.path().join("datastore");
    let cert = datastore.join("gnmi-cert.pem");
    let running = Running::start(&datastore, "022", &[]);
    let now = unix_now();
    let (not_before, not_after) = validity(&cert);
    assert!(
        not_after - not_before <= 366 * DAY,
        "{not_before} to {not_after}"
    );
    assert!(not_before <= now && now + 364 * DAY <= not_after);
    drop(running);

    // A pair an earlier efbd made that has 10 days left: renewed at start, key too.
    std::fs::remove_file(&cert).unwrap();
    std::fs::remove_file(datastore.join("gnmi-key.pem")).unwrap();
    let old_key = near_its_end(&datastore, 10);
    let mut child = efbd(&datastore, "022", &[])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let gnmi = lines.nth(1).unwrap().unwrap();
    let running = Running(child);
    assert!(
        gnmi.ends_with(&format!(
            "certificate {} (self-signed, renewed now)",
            cert.display()
        )),
        "{gnmi}"
    );
    let (_, not_after) = validity(&cert);
    assert!(not_after >= now + 364 * DAY, "renewed for a year");
    assert_ne!(
        std::fs::read_to_string(datastore.join("gnmi-key.pem")).unwrap(),
        old_key
    );
    assert_eq!(
        (mode(&cert), mode(&datastore.join("gnmi-key.pem"))),
        (0o644, 0o600)
    );
    drop(running);
}

/// Writes a self-signed pair with `days` left as efbd's generated one: the key's PEM.
fn near_its_end(datastore: &Path, days: u64) -> String {
    use rcgen::{CertificateParams, KeyPair};
    use std::time::{Duration, SystemTime};
    let now = SystemTime::now();
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.not_before = (now - Duration::from_secs(300 * 86_400)).into();
    params.not_after = (now + Duration::from_secs(days * 86_400)).into();
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    for (name, text, bits) in [
        ("gnmi-key.pem", key.serialize_pem(), 0o600),
        ("gnmi-cert.pem", cert.pem(), 0o644),
    ] {
        std::fs::write(datastore.join(name), text).unwrap();
        chmod(&datastore.join(name), bits);
    }
    key.serialize_pem()
}
