//! Who may do what, as people meet it: real Unix accounts, one in each role's group and one
//! in none, run efb-cli against a real efbd over its Unix socket; gNMI users and the
//! management API over TCP log in from the users file (password or client certificate).
//! Each is allowed or refused exactly as its role says, a refusal names the role needed
//! and changes nothing, and `show system audit` shows accepted and refused changes with
//! who and from where.
//!
//! The accounts are created here (useradd, groupadd: root only; CI runs as root) with
//! names unique to this run, and removed at the end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use efb_tests::accounts::{Accounts, is_root, open_dir, prefix};
use efb_tests::gnmi_io::{authed, connect, path};
use efb_tests::{Daemon, binary, repo};
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use gnmi_proto::gnmi::{CapabilityRequest, SetRequest, TypedValue, Update, typed_value};
use tonic::Code;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

/// efbd with the one-filter site (loaded by root) and the groups of `groups` as the
/// admin, operator and viewer groups; its log in `dir/efbd.log`.
fn site(dir: &Path, groups: [&str; 3], extra: &[&str]) -> Daemon {
    site_with(dir, groups, "", extra)
}

/// [`site`] with more `[management]` settings.
fn site_with(dir: &Path, groups: [&str; 3], management: &str, extra: &[&str]) -> Daemon {
    let settings = dir.join("efbd.toml");
    std::fs::write(
        &settings,
        format!(
            "[management]\n{management}\n[management.groups]\nadmin = \"{}\"\noperator = \"{}\"\nviewer = \"{}\"\n",
            groups[0], groups[1], groups[2]
        ),
    )
    .unwrap();
    let users = repo().join("examples/users.demo.toml");
    let mut args = vec![
        "--config",
        settings.to_str().unwrap(),
        "--gnmi-users",
        users.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let daemon = Daemon::start_logging(&dir.join("datastore"), &args, &dir.join("efbd.log"));
    let example = repo().join("examples/one-filter-site.json");
    daemon.commit_file(&example);
    daemon
}

/// efb-cli as `account`, from the copy every account may run.
fn cli_as(
    daemon: &Daemon,
    cli: &Path,
    account: &str,
    args: &[&str],
    stdin: &str,
) -> (i32, String, String) {
    let mut command = Command::new("runuser");
    command
        .args(["-u", account, "--"])
        .arg(cli)
        .args(["--connect", &daemon.address])
        .args(args);
    efb_tests::run_cli(command, stdin)
}

/// efb-cli as `account` running `stdin`, with $USER (and $LOGNAME) unset, or set to
/// `user_env`.
fn cli_with_user_env(
    daemon: &Daemon,
    cli: &Path,
    account: &str,
    user_env: Option<&str>,
    stdin: &str,
) -> (i32, String, String) {
    let mut command = Command::new("runuser");
    command.args(["-u", account, "--", "env", "-u", "USER", "-u", "LOGNAME"]);
    if let Some(name) = user_env {
        command.arg(format!("USER={name}"));
    }
    command.arg(cli).args(["--connect", &daemon.address]);
    efb_tests::run_cli(command, stdin)
}

const STATUS: &str = "show system status";
const LOOKUP: &str =
    "show ecofilter-balancer lookup-session src 10.1.2.3 dst 8.8.8.8 proto 6 link l1";
const BYPASS: &str =
    "call ecofilter-balancer set-bypass-ecofilter-unit ecofilter-unit ef1 mode bypass";
const EDIT: &str = "edit\nset ports port p1 description \"changed\"\ncommit\n";
const EDIT_AGAIN: &str = "edit\nset ports port p1 description \"changed again\"\ncommit\n";
const UNIT: &str = "show ecofilter-balancer ecofilter-unit ef1";
const PORT: &str = "show configuration ports port p1";

#[test]
fn unix_accounts_get_the_role_of_their_group_and_the_audit_shows_them() {
    if !is_root() {
        println!("SKIPPED: creating Unix accounts needs root (CI runs as root)");
        return;
    }
    let p = prefix('r');
    let (admins, operators, viewers) = (format!("{p}adm"), format!("{p}op"), format!("{p}view"));
    let (ada, otto, vic, nob) = (
        format!("{p}-ada"),
        format!("{p}-otto"),
        format!("{p}-vic"),
        format!("{p}-nob"),
    );
    let base = format!("{p}base");
    let mut accounts = Accounts::none();
    for group in [&admins, &operators, &viewers, &base] {
        accounts.group(group);
    }
    // The admin's role through its primary group, the others' through supplementary ones.
    accounts.user(&ada, &[&admins]);
    accounts.user(&otto, &[&base, &operators]);
    accounts.user(&vic, &[&base, &viewers]);
    accounts.user(&nob, &[]);

    let dir = open_dir();
    let cli = dir.path().join("efb-cli");
    std::fs::copy(binary("efb-cli"), &cli).unwrap();
    let daemon = site(
        dir.path(),
        [&admins, &operators, &viewers],
        &["--gnmi-plaintext"],
    );
    let as_ =
        |account: &str, args: &[&str], stdin: &str| cli_as(&daemon, &cli, account, args, stdin);

    // Viewer: shows and lookups; no call, no edit.
    let (code, out, err) = as_(&vic, &["-c", STATUS], "");
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = as_(&vic, &["-c", LOOKUP], "");
    assert!(code == 0 && out.contains("f1-te7-te8"), "{out}{err}");
    let (code, _, err) = as_(&vic, &["-c", BYPASS], "");
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "call needs the operator role; {vic} has the viewer role"
        )),
        "{err}"
    );
    let (code, _, err) = as_(&vic, &[], EDIT);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "configuration edit needs the admin role; {vic} has the viewer role"
        )),
        "{err}"
    );
    // The refusals changed nothing.
    let unit = || daemon.cli(&["-c", UNIT], "").1;
    let port = || daemon.cli(&["-c", PORT], "").1;
    let (unit_before, port_before) = (unit(), port());
    assert!(!unit_before.contains("mode bypass"), "{unit_before}");
    assert!(!port_before.contains("changed"), "{port_before}");

    // Operator: calls too; still no edit, and no other name in the history.
    let (code, out, err) = as_(&otto, &["-c", BYPASS], "");
    assert_eq!(code, 0, "{out}{err}");
    let units = unit();
    assert!(
        units != unit_before && units.contains("mode bypass"),
        "{units}"
    );
    let (code, _, err) = as_(&otto, &[], EDIT);
    assert!(
        code == 1 && err.contains("configuration edit needs the admin role"),
        "{err}"
    );
    assert_eq!(port(), port_before, "the operator's edit changed nothing");
    let (code, _, err) = as_(&otto, &["--user", "someone", "-c", STATUS], "");
    assert!(
        code == 2
            && err.contains(&format!(
                "recording another user name needs the admin role; {otto} has the operator role"
            )),
        "{err}"
    );

    // Admin: commits, recorded under the account's name, whatever $USER says or without
    // it (efbd knows the account from the socket).
    for user_env in [None, Some("mallory")] {
        let said = user_env.unwrap_or("unset");
        let edit = format!("edit\nset ports port p1 description \"USER {said}\"\ncommit\n");
        let (code, out, err) = cli_with_user_env(&daemon, &cli, &ada, user_env, &edit);
        assert_eq!(code, 0, "{out}{err}");
        let (_, history, _) = as_(&ada, &["-c", "show system commit"], "");
        let last = history.lines().nth(1).unwrap_or_default();
        assert!(
            last.contains(&ada) && !last.contains(" as ") && !last.contains("unknown"),
            "{history}"
        );
    }
    // A viewer reads efbd's events: the admin's commit, under the account's name.
    let (code, log, err) = as_(&vic, &["-c", "show log commit"], "");
    assert!(
        code == 0 && log.contains(&format!("user={ada} origin=shell")),
        "{log}{err}"
    );
    // An admin may record another name (a ticket, a person at the console), with its own.
    let (code, out, err) = as_(&ada, &["--user", "ticket-42"], EDIT_AGAIN);
    assert_eq!(code, 0, "{out}{err}");
    let (_, history, _) = as_(&ada, &["-c", "show system commit"], "");
    let last = history.lines().nth(1).unwrap_or_default();
    assert!(last.contains(&format!("{ada} as ticket-42")), "{history}");

    // No group: refused at the first request, told where roles come from.
    let (code, _, err) = as_(&nob, &["-c", STATUS], "");
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("show needs the viewer role; {nob} has no role"))
            && err.contains(&format!("{admins} admin")),
        "{err}"
    );

    // gNMI users judged by the same rule, with their address.
    gnmi_sets(&daemon);

    // The audit: each refusal and each change, who and from where.
    let (code, audit, err) = as_(&vic, &["-c", "show system audit"], "");
    assert_eq!(code, 0, "{err}");
    println!("{audit}");
    // The user is the second column (after the time).
    let line = |user: &str, what: &str| {
        audit
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(user) && l.contains(what))
            .unwrap_or_else(|| panic!("no audit line of {user} with {what:?}:\n{audit}"))
            .to_string()
    };
    let refused_call = line(&vic, "call set-bypass-ecofilter-unit");
    assert!(
        refused_call.contains("viewer")
            && refused_call.contains("unix socket, uid ")
            && refused_call.contains("refused: PermissionDenied"),
        "{refused_call}"
    );
    let call = line(&otto, "call set-bypass-ecofilter-unit");
    assert!(call.contains("accepted: done"), "{call}");
    // Refused by its head: what the lines said was never read.
    assert!(line(&otto, "edit (refused before its body was read)").contains("refused"));
    assert!(line(&ada, "commit").contains("accepted: commit"));
    let nobody = line(&nob, "connect a shell");
    assert!(
        nobody.contains("none") && nobody.contains("refused"),
        "{nobody}"
    );
    let gnmi_refused = line("viewer", "Set (refused before its body was read)");
    assert!(
        gnmi_refused.contains("gNMI 127.0.0.1:") && gnmi_refused.contains("refused"),
        "{gnmi_refused}"
    );
    let gnmi_accepted = line("admin", "Set: update");
    assert!(
        gnmi_accepted.contains("accepted: committed"),
        "{gnmi_accepted}"
    );
    // The gNMI viewer's refused Set changed nothing either.
    let running = port();
    assert!(
        running.contains("from gNMI admin") && !running.contains("from gNMI viewer"),
        "{running}"
    );
    assert!(daemon.stop());
    // And efbd's log has them too (target `audit`).
    let log = std::fs::read_to_string(dir.path().join("efbd.log")).unwrap();
    let logged = |words: &[&str]| {
        log.lines()
            .any(|l| l.contains(" audit: ") && words.iter().all(|w| l.contains(w)))
    };
    assert!(
        logged(&["refused", &format!("user={vic}"), "call set-bypass"]),
        "{log}"
    );
    assert!(
        logged(&["accepted", &format!("user={ada}"), "commit"]),
        "{log}"
    );
    assert!(logged(&["refused", &format!("user={nob}")]), "{log}");
    drop(accounts);
}

#[test]
fn the_socket_s_mode_and_group_say_which_accounts_may_connect_at_all() {
    if !is_root() {
        println!("SKIPPED: creating Unix accounts needs root (CI runs as root)");
        return;
    }
    let p = prefix('s');
    let (shell_users, viewers) = (format!("{p}sh"), format!("{p}view"));
    let (inside, outside) = (format!("{p}-in"), format!("{p}-out"));
    let mut accounts = Accounts::none();
    accounts.group(&shell_users);
    accounts.group(&viewers);
    accounts.user(&inside, &[&shell_users, &viewers]);
    // A viewer too, but not in the socket's group: the socket keeps it out.
    accounts.user(&outside, &[&viewers]);

    let dir = open_dir();
    let cli = dir.path().join("efb-cli");
    std::fs::copy(binary("efb-cli"), &cli).unwrap();
    let management = format!("socket_mode = \"0660\"\nsocket_group = \"{shell_users}\"");
    let daemon = site_with(
        dir.path(),
        ["efb-admin", "efb-operator", &viewers],
        &management,
        &["--no-gnmi"],
    );
    let meta = std::fs::metadata(&daemon.address).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o660);
    let group = gid_of(&shell_users);
    assert_eq!(std::os::unix::fs::MetadataExt::gid(&meta), group);

    let (code, out, err) = cli_as(&daemon, &cli, &inside, &["-c", STATUS], "");
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = cli_as(&daemon, &cli, &outside, &["-c", STATUS], "");
    assert_eq!(code, 2);
    assert!(
        err.contains("this account may not connect")
            && err.contains("management.socket_mode and management.socket_group"),
        "{err}"
    );
    assert!(daemon.stop());
    drop(accounts);
}

/// The gid of group `name`, from `getent group`.
fn gid_of(name: &str) -> u32 {
    let out = Command::new("getent")
        .args(["group", name])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    line.split(':').nth(2).unwrap().trim().parse().unwrap()
}

#[test]
fn the_shell_finds_efbd_s_socket_by_default_as_run_sh_starts_them() {
    let dir = tempfile::tempdir().unwrap();
    // As ./run.sh: efbd's datastore is `datastore` in the directory the shell runs in.
    let daemon = Daemon::start(&dir.path().join("datastore"), &["--no-gnmi"]);
    let shell = |env: Option<&str>| {
        let mut command = Command::new(binary("efb-cli"));
        command.current_dir(dir.path()).args(["-c", STATUS]);
        match env {
            Some(path) => command.env("EFB_CONNECT", path),
            None => command.env_remove("EFB_CONNECT"),
        };
        efb_tests::run_cli(command, "")
    };
    let (code, out, err) = shell(None);
    assert!(code == 0 && out.contains("Daemon"), "{out}{err}");
    // $EFB_CONNECT, when set, is where it goes instead.
    let (code, out, err) = shell(Some(&daemon.address));
    assert!(code == 0 && out.contains("Daemon"), "{out}{err}");
    let missing = dir.path().join("elsewhere.sock");
    let (code, _, err) = shell(Some(missing.to_str().unwrap()));
    assert!(
        code == 2 && err.contains("no socket there: is efbd running?"),
        "{err}"
    );
    assert!(daemon.stop());
}

fn description(text: &str) -> SetRequest {
    SetRequest {
        update: vec![Update {
            path: Some(path(&[
                ("ports", None),
                ("port", Some(("name", "p1"))),
                ("description", None),
            ])),
            val: Some(TypedValue {
                value: Some(typed_value::Value::JsonIetfVal(
                    serde_json::to_vec(text).unwrap(),
                )),
            }),
            ..Update::default()
        }],
        ..SetRequest::default()
    }
}

/// A viewer's Set is refused by the same rule as the shell's; an admin's goes through.
fn gnmi_sets(daemon: &Daemon) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut client = GNmiClient::new(connect(daemon).await);
        let err = client
            .set(authed(description("from gNMI viewer"), "viewer"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied);
        assert_eq!(
            err.message(),
            "permission denied: commit needs the admin role; viewer has the viewer role"
        );
        client
            .set(authed(description("from gNMI admin"), "admin"))
            .await
            .unwrap();
    });
}

/// A CA, and certificates it signs for `names` (subject CN), as PEM files in `dir`:
/// ca.pem, NAME.pem and NAME-key.pem.
fn certificates(dir: &Path, names: &[&str]) -> PathBuf {
    use rcgen::{CertificateParams, DnType, KeyPair};
    let issuer = efb_tests::certs::ca(dir);
    let ca_path = dir.join("ca.pem");
    for name in names {
        let mut params = CertificateParams::new(Vec::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, *name);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}-key.pem")), key.serialize_pem()).unwrap();
    }
    ca_path
}

#[test]
fn the_management_api_over_tcp_needs_tls_and_a_user_of_the_users_file() {
    let dir = tempfile::tempdir().unwrap();
    let ca = certificates(dir.path(), &["operator", "stranger"]);
    let daemon = site(
        dir.path(),
        ["efb-admin", "efb-operator", "efb-viewer"],
        &[
            "--mgmt-listen",
            "127.0.0.1:0",
            "--gnmi-client-ca",
            ca.to_str().unwrap(),
        ],
    );
    let tcp = daemon.tcp.clone().expect("TCP is on");
    let server_cert = daemon.datastore.join("gnmi-cert.pem");
    let cli = |user: &str, password: Option<&str>, extra: &[&str], stdin: &str| {
        let mut command = Command::new(binary("efb-cli"));
        command
            .args(["--connect", &tcp, "--ca"])
            .arg(&server_cert)
            .args(extra);
        if !user.is_empty() {
            command.args(["--user", user]);
        }
        match password {
            Some(p) => command.env("EFB_PASSWORD", p),
            None => command.env_remove("EFB_PASSWORD"),
        };
        efb_tests::run_cli(command, stdin)
    };
    let (code, out, err) = cli("viewer", Some("viewer"), &["-c", STATUS], "");
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = cli("viewer", Some("viewer"), &[], EDIT);
    assert!(
        code == 1
            && err.contains("configuration edit needs the admin role; viewer has the viewer role"),
        "{err}"
    );
    let (code, _, err) = cli("admin", Some("wrong"), &["-c", STATUS], "");
    assert!(
        code == 2 && err.contains("wrong username or password"),
        "{err}"
    );
    let (code, out, err) = cli("admin", Some("admin"), &[], EDIT);
    assert_eq!(code, 0, "{out}{err}");
    let (_, history, _) = cli("admin", Some("admin"), &["-c", "show system commit"], "");
    let last = history.lines().nth(1).unwrap_or_default();
    assert!(last.contains("admin"), "{history}");

    // A client certificate instead of a password: its CN is the user.
    let cert = |name: &str| {
        [
            "--cert".to_string(),
            dir.path().join(format!("{name}.pem")).display().to_string(),
            "--key".to_string(),
            dir.path()
                .join(format!("{name}-key.pem"))
                .display()
                .to_string(),
        ]
    };
    let operator = cert("operator");
    let operator: Vec<&str> = operator.iter().map(String::as_str).collect();
    let mut args = operator.clone();
    args.extend(["-c", BYPASS]);
    let (code, out, err) = cli("", None, &args, "");
    assert_eq!(code, 0, "{out}{err}");
    let stranger = cert("stranger");
    let mut args: Vec<&str> = stranger.iter().map(String::as_str).collect();
    args.extend(["-c", STATUS]);
    let (code, _, err) = cli("", None, &args, "");
    assert!(
        code == 2 && err.contains("subject CN \"stranger\" is not a user of the users file"),
        "{err}"
    );
    // TCP is TLS only: without efbd's certificate to check it against, no connection.
    let (code, _, err) = efb_tests::run_cli(
        {
            let mut c = Command::new(binary("efb-cli"));
            c.args(["--connect", &tcp, "-c", STATUS]);
            c
        },
        "",
    );
    assert!(code == 2 && err.contains("--ca FILE"), "{err}");

    let (_, audit, _) = daemon.cli(&["-c", "show system audit"], "");
    println!("{audit}");
    assert!(
        audit.lines().any(|l| l.contains("operator")
            && l.contains("(certificate)")
            && l.contains("call set-bypass")
            && l.contains("accepted")),
        "{audit}"
    );
    assert!(
        audit.lines().any(|l| l.contains("viewer")
            && l.contains("TCP 127.0.0.1:")
            && l.contains("(password)")
            && l.contains("refused")),
        "{audit}"
    );
    assert!(daemon.stop());
}

#[test]
fn gnmi_client_certificates_log_in_as_the_user_their_cn_names() {
    let dir = tempfile::tempdir().unwrap();
    let ca = certificates(dir.path(), &["admin", "viewer", "stranger"]);
    let daemon = site(
        dir.path(),
        ["efb-admin", "efb-operator", "efb-viewer"],
        &["--gnmi-client-ca", ca.to_str().unwrap()],
    );
    let gnmi = daemon.gnmi.clone().unwrap();
    let server_cert = std::fs::read_to_string(daemon.datastore.join("gnmi-cert.pem")).unwrap();
    let channel = |name: Option<&str>| {
        let mut tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&server_cert))
            .domain_name("127.0.0.1");
        if let Some(name) = name {
            let read = |file: String| std::fs::read_to_string(dir.path().join(file)).unwrap();
            tls = tls.identity(Identity::from_pem(
                read(format!("{name}.pem")),
                read(format!("{name}-key.pem")),
            ));
        }
        let endpoint = Channel::from_shared(format!("https://{gnmi}"))
            .unwrap()
            .tls_config(tls)
            .unwrap();
        async move { endpoint.connect().await.unwrap() }
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // No password: the certificate says who.
        let mut viewer = GNmiClient::new(channel(Some("viewer")).await);
        viewer
            .capabilities(CapabilityRequest::default())
            .await
            .unwrap();
        let err = viewer.set(description("by viewer")).await.unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
        let mut admin = GNmiClient::new(channel(Some("admin")).await);
        admin.set(description("by admin")).await.unwrap();
        let mut stranger = GNmiClient::new(channel(Some("stranger")).await);
        let err = stranger
            .capabilities(CapabilityRequest::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated);
        assert!(
            err.message().contains("not a user of the users file"),
            "{err:?}"
        );
        // Without a certificate, passwords still work.
        let mut plain = GNmiClient::new(channel(None).await);
        plain
            .capabilities(authed(CapabilityRequest::default(), "viewer"))
            .await
            .unwrap();
    });
    assert!(daemon.stop());
}
