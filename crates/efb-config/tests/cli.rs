//! `efb-config` as engineers run it in their pipelines: real process, real files, exit
//! status and output checked.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_efb-config"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// The one-filter example with a change applied to its JSON.
fn variant(dir: &Path, name: &str, change: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example("one-filter-site.json")).unwrap())
            .unwrap();
    change(&mut value);
    write(dir, name, &value.to_string())
}

#[test]
fn validate_accepts_both_example_sites() {
    for name in ["one-filter-site.json", "ten-filter-site.json"] {
        let (code, out, _) = run(&["validate", example(name).to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        assert!(out.ends_with("0 errors, 0 warnings\n"), "{out}");
    }
}

/// A set-line file takes the words a typed line takes: `ip-proto "udp"` (as `show
/// configuration | display set` of another tool may quote it) is UDP, not a refusal.
#[test]
fn validate_reads_set_lines_with_protocol_names_as_the_shell_does() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(dir.path(), "empty.json", "{}");
    let (_, site, _) = run(&[
        "diff",
        &empty,
        example("one-filter-site.json").to_str().unwrap(),
    ]);
    let lines: String = site
        .lines()
        .filter(|l| l.starts_with("set "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(lines.lines().count() > 20, "the site as set lines: {site}");
    let file = write(
        dir.path(),
        "dns.set",
        &format!(
            "{lines}set ecofilter-balancer flow dns priority 500 direction both\n\
             set ecofilter-balancer flow dns match ip-proto \"udp\" dst-port 53\n"
        ),
    );
    let (code, out, err) = run(&["validate", &file]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.ends_with("0 errors, 0 warnings\n"), "{out}");
}

#[test]
fn validate_names_every_problem_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let file = variant(dir.path(), "bad.json", |v| {
        let balancer = &mut v["ecofilter-balancer:ecofilter-balancer"];
        balancer["link"][1]["lan-port"] = "p2".into(); // used by link l1 too
        balancer["flow"][0]["links"] = serde_json::json!(["nope"]); // dangling
        balancer["balancing-method"] = "dst-ip".into(); // a warning
    });
    let (code, out, _) = run(&["validate", &file]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("error: /ecofilter-balancer:ecofilter-balancer/link[name='l2']/lan-port: port p2 is already used by link l1"), "{out}");
    assert!(
        out.contains("flow[name='service-vlan']/links") && out.contains("nope"),
        "{out}"
    );
    assert!(
        out.contains("warning: /ecofilter-balancer:ecofilter-balancer/balancing-method"),
        "{out}"
    );
    assert!(out.contains("2 errors, 1 warning"), "{out}");

    let (code, out, _) = run(&["validate", "--json", &file]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["valid"], false);
    assert_eq!(report["errors"].as_array().unwrap().len(), 2);
}

#[test]
fn validate_reports_malformed_json_and_wrong_types() {
    let dir = tempfile::tempdir().unwrap();
    let broken = write(
        dir.path(),
        "broken.json",
        "{\"ecofilter-balancer:ports\": {\"port\": [",
    );
    let (code, out, _) = run(&["validate", &broken]);
    assert_eq!(code, 1);
    assert!(out.contains("error:"), "{out}");
    let typed = write(
        dir.path(),
        "typed.json",
        r#"{"ecofilter-balancer:ports": {"port": [{"name": "p1", "number": 33, "speed": "100g"}]}}"#,
    );
    let (code, out, _) = run(&["validate", &typed]);
    assert_eq!(code, 1);
    assert!(out.contains("port[name='p1']/number"), "{out}");
    let (code, _, err) = run(&["validate", "/no/such/file.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read /no/such/file.json"), "{err}");
}

#[test]
fn hash_is_sha256_of_the_balancing_text() {
    let (code, out, _) = run(&["hash", example("one-filter-site.json").to_str().unwrap()]);
    assert_eq!(code, 0);
    // python3: hashlib.sha256(("efb-balancing-v2\nmethod layer-3\nunit ef1 cores 17 pairs 8 rebalance false\n"
    //   + "".join("pair f1-te%d-te%d\n" % (i, i + 1) for i in range(1, 17, 2))).encode()).hexdigest()
    assert_eq!(
        out,
        "64351d629194d2923340e38a3f94e497ab22e318cf93a2408867c469990c014f\n"
    );
    // Port names do not count; pair order does.
    let dir = tempfile::tempdir().unwrap();
    let renamed = variant(dir.path(), "renamed.json", |v| {
        v["ecofilter-balancer:ecofilter-balancer"]["link"][0]["description"] = "other".into();
        v["ecofilter-balancer:ecofilter-balancer"]["flow"]
            .as_array_mut()
            .unwrap()
            .pop();
    });
    assert_eq!(run(&["hash", &renamed]).1, out);
    let reordered = variant(dir.path(), "reordered.json", |v| {
        v["ecofilter-balancer:ecofilter-balancer"]["ecofilter-unit"][0]["pair"]
            .as_array_mut()
            .unwrap()
            .swap(0, 1);
    });
    assert_ne!(run(&["hash", &reordered]).1, out);
}

#[test]
fn lookup_says_where_a_session_goes() {
    let file = example("one-filter-site.json");
    let file = file.to_str().unwrap();
    let args = [
        "lookup",
        file,
        "--src",
        "10.1.2.3",
        "--dst",
        "8.8.8.8",
        "--proto",
        "6",
        "--src-port",
        "40000",
        "--dst-port",
        "443",
        "--link",
        "l1",
    ];
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let found: serde_json::Value = serde_json::from_str(&out).unwrap();
    // python3: k = bytes(a ^ b for a, b in zip(socket.inet_aton("8.8.8.8"),
    //   socket.inet_aton("10.1.2.3"))) + bytes([6]); zlib.crc32(k) & 4095 == 735;
    // 735 % 136 == 55 -> pair 55 // 17 == 3, core 55 % 17 == 4
    assert_eq!(found["action"], "to-ecofilter");
    assert_eq!(found["flow"], "to-filters");
    assert_eq!(found["unit"], "ef1");
    assert_eq!(found["bucket"], 735);
    assert_eq!(found["slot"], 55);
    assert_eq!(found["pair"], "f1-te7-te8");
    assert_eq!(found["core"], 4);
    assert_eq!(found["software-bypass"], false);
    // The protocol by name, as the shell takes it, gives the same answer.
    let mut by_name = args.to_vec();
    by_name[7] = "TCP";
    let named: serde_json::Value = serde_json::from_str(&run(&by_name).1).unwrap();
    assert_eq!(named, found);
    by_name[7] = "tcpx";
    let (code, _, err) = run(&by_name);
    assert_ne!(code, 0);
    assert!(
        err.contains("\"tcpx\" is not a protocol") && err.contains("tcp, udp"),
        "{err}"
    );
    // The reverse direction lands on the same pair and core.
    let reverse = [
        "lookup",
        file,
        "--src",
        "8.8.8.8",
        "--dst",
        "10.1.2.3",
        "--proto",
        "6",
        "--src-port",
        "443",
        "--dst-port",
        "40000",
        "--link",
        "l1",
    ];
    let back: serde_json::Value = serde_json::from_str(&run(&reverse).1).unwrap();
    assert_eq!(
        (back["pair"].clone(), back["core"].clone()),
        (found["pair"].clone(), found["core"].clone())
    );
    // With its pair down (rebalance off) the session is bypassed in software.
    let mut down = args.to_vec();
    down.extend(["--down", "f1-te7-te8"]);
    let bypassed: serde_json::Value = serde_json::from_str(&run(&down).1).unwrap();
    assert_eq!(bypassed["software-bypass"], true);
    // BGP is bypassed by its flow.
    let bgp = [
        "lookup",
        file,
        "--src",
        "10.0.0.1",
        "--dst",
        "10.0.0.2",
        "--proto",
        "6",
        "--src-port",
        "50000",
        "--dst-port",
        "179",
        "--link",
        "l2",
    ];
    let bgp: serde_json::Value = serde_json::from_str(&run(&bgp).1).unwrap();
    assert_eq!(
        (bgp["action"].as_str(), bgp["flow"].as_str()),
        (Some("bypass"), Some("bgp-to"))
    );
}

#[test]
fn lookup_refuses_what_cannot_be_answered() {
    let file = example("one-filter-site.json");
    let file = file.to_str().unwrap();
    let (code, _, err) = run(&[
        "lookup",
        file,
        "--src",
        "10.1.2.3",
        "--dst",
        "2001:db8::1",
        "--proto",
        "6",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("10.1.2.3") && err.contains("2001:db8::1"),
        "{err}"
    );
    let (code, _, err) = run(&[
        "lookup", file, "--src", "10.1.2.3", "--dst", "10.1.2.4", "--proto", "6", "--down", "nope",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--down nope: no such pair; pairs are: ef1/f1-te1-te2"),
        "{err}"
    );
    // A link the file does not have, refused as the shell refuses it (was answered).
    let (code, out, err) = run(&[
        "lookup", file, "--src", "10.1.2.3", "--dst", "10.1.2.4", "--proto", "6", "--link", "l9",
    ]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.contains("link l9: no such link; links are: l1, l2"),
        "{err}"
    );
    let (code, _, err) = run(&[
        "lookup",
        file,
        "--src",
        "10.1.2.300",
        "--dst",
        "10.1.2.4",
        "--proto",
        "6",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--src"), "{err}");
}

#[test]
fn diff_prints_set_and_delete_lines() {
    let dir = tempfile::tempdir().unwrap();
    let changed = variant(dir.path(), "changed.json", |v| {
        let flows = v["ecofilter-balancer:ecofilter-balancer"]["flow"]
            .as_array_mut()
            .unwrap();
        flows.retain(|f| f["name"] != "multicast-v6");
        flows[0]["priority"] = 450.into();
    });
    let original = example("one-filter-site.json");
    let (code, out, _) = run(&["diff", original.to_str().unwrap(), &changed]);
    assert_eq!(code, 1, "different files: 1, as diff(1)");
    assert_eq!(
        out,
        "delete ecofilter-balancer flow multicast-v6\nset ecofilter-balancer flow service-vlan priority 450\n"
    );
    let same = dir.path().join("same.json");
    std::fs::copy(&original, &same).unwrap();
    let (code, out, _) = run(&["diff", original.to_str().unwrap(), same.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (0, ""), "the same: 0 and nothing");
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{").unwrap();
    let (code, _, err) = run(&["diff", original.to_str().unwrap(), broken.to_str().unwrap()]);
    assert_eq!(code, 2, "trouble: 2, as diff(1): {err}");
}

#[test]
fn hash_compare_of_saved_files_agrees_or_names_every_difference() {
    let dir = tempfile::tempdir().unwrap();
    let site = example("one-filter-site.json");
    let site = site.to_str().unwrap();
    // Different local ports and flows, the same balancing: they agree.
    let elsewhere = variant(dir.path(), "elsewhere.json", |v| {
        let balancer = &mut v["ecofilter-balancer:ecofilter-balancer"];
        balancer["ecofilter-unit"][0]["pair"][0]["lan-port"] = "p12-0".into();
        balancer["ecofilter-unit"][0]["pair"][6]["lan-port"] = "p9-0".into();
        balancer["flow"].as_array_mut().unwrap().truncate(2);
    });
    let (code, out, err) = run(&["hash-compare", site, &format!("b={elsewhere}")]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("one-filter-site") && out.contains("reference"),
        "{out}"
    );
    assert!(
        out.trim_end().ends_with(
            "AGREE: all 2 balancers have the balancing configuration of one-filter-site"
        ),
        "{out}"
    );

    // Every kind of difference the hash input can hold, each named by balancer and path.
    let changed = variant(dir.path(), "changed.json", |v| {
        let balancer = &mut v["ecofilter-balancer:ecofilter-balancer"];
        balancer["balancing-method"] = "layer-4".into();
        let unit = &mut balancer["ecofilter-unit"][0];
        unit["cores"] = 16.into();
        unit["rebalance"] = true.into();
        let pairs = unit["pair"].as_array_mut().unwrap();
        pairs.swap(0, 1);
        pairs.pop();
        let mut second = unit.clone();
        second["name"] = "ef2".into();
        second["pair"] = serde_json::json!([]);
        balancer["ecofilter-unit"]
            .as_array_mut()
            .unwrap()
            .push(second);
    });
    let (code, out, err) = run(&["hash-compare", site, &format!("b={changed}")]);
    assert_eq!(code, 1, "{out}{err}");
    let unit = "/ecofilter-balancer:ecofilter-balancer/ecofilter-unit";
    for expected in [
        "b differs from one-filter-site:".to_string(),
        "balancing-method is layer-4 on b but layer-3 on one-filter-site".to_string(),
        format!("{unit}[name='ef1']/cores"),
        format!("{unit}[name='ef1']/rebalance"),
        format!("{unit}[name='ef1']/pair[name='f1-te15-te16']"),
        format!("{unit}[name='ef1']/pair\n"),
        "b has f1-te3-te4 where one-filter-site has f1-te1-te2".to_string(),
        format!("{unit}[name='ef2']\n"),
        "unit ef2 (0 pairs, 16 cores, rebalance true) is on b but not on one-filter-site"
            .to_string(),
        "DISAGREE: 1 of 2 balancers read differs from one-filter-site".to_string(),
    ] {
        assert!(out.contains(&expected), "{expected:?} missing from:\n{out}");
    }

    // The same as JSON, and with the other file as the reference.
    let (code, out, _) = run(&[
        "hash-compare",
        "--json",
        "--reference",
        "b",
        site,
        &format!("b={changed}"),
    ]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["agree"], false);
    assert_eq!(report["reference"], "b");
    let kinds: Vec<&str> = report["balancers"][0]["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "method",
            "cores",
            "rebalance",
            "pair-extra",
            "pair-order",
            "unit-missing"
        ],
        "{out}"
    );
}

#[test]
fn hash_compare_reports_an_unreadable_file_and_compares_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let site = example("one-filter-site.json");
    let site = site.to_str().unwrap();
    let broken = write(
        dir.path(),
        "broken.json",
        "{\"ecofilter-balancer:ports\": [",
    );
    let (code, out, _) = run(&[
        "hash-compare",
        "missing=/no/such/file.json",
        &format!("broken={broken}"),
        site,
        &format!("same={site}"),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("missing: not compared (error): cannot read /no/such/file.json"),
        "{out}"
    );
    assert!(
        out.contains("broken: not compared (error): not a configuration"),
        "{out}"
    );
    assert!(
        out.contains(
            "DISAGREE: the 2 balancers read agree with one-filter-site; 2 could not be compared"
        ),
        "{out}"
    );
}

#[test]
fn hash_compare_refuses_a_wrong_command() {
    let site = example("one-filter-site.json");
    let site = site.to_str().unwrap();
    let (code, _, err) = run(&["hash-compare"]);
    assert_eq!(code, 2);
    assert!(err.contains("no balancers to compare"), "{err}");
    let (code, _, err) = run(&["hash-compare", &format!("a={site}"), &format!("a={site}")]);
    assert_eq!(code, 2);
    assert!(err.contains("two balancers are named a"), "{err}");
    let (code, _, err) = run(&["hash-compare", "--reference", "zz", site]);
    assert_eq!(code, 2);
    assert!(err.contains("--reference zz: no such balancer"), "{err}");
    let (code, _, err) = run(&["hash-compare", "x=gnmi://admin:hunter2@host:99999"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("HOST:PORT") && !err.contains("hunter2"),
        "{err}"
    );
}

/// `efb-config diff A B | head -1`: a reader that goes away ends the tool as it ends any
/// Unix tool (status 141, SIGPIPE's), not with a panic.
#[test]
fn a_reader_that_goes_away_ends_it_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_efb-config"))
        .args(["diff"])
        .arg(example("one-filter-site.json"))
        .arg(example("ten-filter-site.json"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes at once: the tool still has the schema and two files to read before
    // its first line.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
