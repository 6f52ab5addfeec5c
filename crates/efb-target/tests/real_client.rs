#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Real-client conformance: p4runtime-shell (from the project's virtualenv) connects to
//! efb-target, reads the P4Info and the entries this test wrote, and writes an entry
//! itself, which this test then reads back over P4Runtime.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Bench, M, entry, insert};
use efb_p4info::names::fields as f;
use efb_p4info::names::flows::IPV4;
use efb_target::Profile;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4runtime_shell_reads_our_entries_and_writes_its_own() {
    let python = efb_tests::p4_venv_tool("python");
    let probe = Command::new(&python)
        .args(["-c", "import p4runtime_sh.shell"])
        .output()
        .expect("run the virtualenv's python");
    assert!(
        probe.status.success(),
        "p4runtime-shell is missing from the virtualenv of {}: ./test.sh installs it (EFB_PYTHON_PACKAGES in .ci/setup.sh)\n{}",
        python.display(),
        String::from_utf8_lossy(&probe.stderr)
    );
    let (mut bench, session) = Bench::ready(Profile::StratumTofino).await;
    let ix = bench.index.clone();
    let bgp = [
        (f::FRAME_CLASS, M::Ternary(1, 0xff)),
        (f::L4_DST_PORT, M::Ternary(179, 0xffff)),
    ];
    let to_unit = IPV4.to_unit.unwrap();
    bench
        .write(vec![
            insert(entry(&ix, IPV4.table, &bgp, IPV4.bypass, &[], 100)),
            insert(entry(
                &ix,
                IPV4.table,
                &[(f::FRAME_CLASS, M::Ternary(1, 0xff))],
                to_unit,
                &[(f::UNIT_ID, 1)],
                1,
            )),
        ])
        .await
        .unwrap();
    drop(session);

    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/real_client/p4runtime_shell_client.py"
    );
    let addr = bench.servers.addr.to_string();
    let output = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(python);
        command.arg(script).arg(addr);
        efb_tests::output_within(command, Duration::from_secs(120))
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.is_some_and(|s| s.success()),
        "p4runtime-shell failed (or ran for 2 minutes):\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));

    let tables: Vec<&str> = seen["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for spec in efb_p4info::contract::TABLES {
        assert!(
            tables.contains(&spec.name.as_str()),
            "{} missing from what the shell saw: {tables:?}",
            spec.name
        );
    }
    let flows = seen["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2, "{flows:?}");
    assert_eq!(flows[0]["priority"], 100);
    assert_eq!(flows[0]["action"], IPV4.bypass.as_str());
    assert_eq!(
        flows[0]["fields"],
        serde_json::json!(["frame_class", "l4_dst_port"])
    );
    assert_eq!(flows[1]["action"], to_unit.as_str());
    assert_eq!(seen["inserted"], true);
    assert!(
        seen["duplicate"]
            .as_str()
            .unwrap()
            .contains("ALREADY_EXISTS"),
        "{}",
        seen["duplicate"]
    );

    // The shell's entry is in the table, as it wrote it.
    let written = bench.read_table(IPV4.table).await;
    let mine = written
        .iter()
        .find(|e| e.priority == 500)
        .expect("the shell's entry");
    let expected = entry(
        &ix,
        IPV4.table,
        &[
            (f::FRAME_CLASS, M::Ternary(2, 0xff)),
            (f::IP_PROTO, M::Ternary(17, 0xff)),
            (f::L4_DST_PORT, M::Ternary(9, 0xffff)),
        ],
        IPV4.drop,
        &[],
        500,
    );
    assert_eq!(mine.r#match, expected.r#match);
    assert_eq!(mine.action, expected.action);
}
