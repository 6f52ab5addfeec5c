//! The model is valid YANG for the two tools that matter: pyang (what engineers lint with)
//! and libyang (what the balancer validates with).

use std::process::Command;

#[test]
fn pyang_strict_accepts_the_module_without_a_word() {
    let module = efb_tests::repo().join("yang/ecofilter-balancer.yang");
    let out = Command::new(efb_tests::venv_tool("pyang"))
        .arg("--strict")
        .arg(&module)
        .output()
        .expect("pyang runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pyang --strict failed:\n{said}");
    assert!(
        said.trim().is_empty(),
        "pyang --strict had something to say:\n{said}"
    );
}

#[test]
fn pyang_sees_the_outline_of_model_md() {
    let module = efb_tests::repo().join("yang/ecofilter-balancer.yang");
    let out = Command::new(efb_tests::venv_tool("pyang"))
        .args(["-f", "tree"])
        .arg(&module)
        .output()
        .expect("pyang runs");
    let tree = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "+--rw port* [name]",
        "+--rw link* [name]",
        "+--rw ecofilter-unit* [name]",
        "+--rw pair* [name]",
        "+--rw flow* [name]",
        "+--ro balancing-config-hash?",
        "+--rw profile* [name]",
        "+--ro profile-status",
        "+---x set-bypass-ecofilter-unit",
        "+---x lookup-session",
        "+---n pair-state-change",
        "+---n unit-state-change",
    ] {
        assert!(tree.contains(expected), "{expected} missing from:\n{tree}");
    }
}

#[test]
fn libyang_loads_the_embedded_module_without_warnings() {
    let schema =
        efb_yang::Schema::load().expect("libyang loads the module with no error or warning");
    // The file in yang/ is the one embedded in the binaries.
    let on_disk = std::fs::read_to_string(efb_tests::repo().join("yang/ecofilter-balancer.yang"))
        .expect("module file");
    assert_eq!(on_disk, efb_yang::schema::MODULE_TEXT);
    assert_eq!(schema.module().name, "ecofilter-balancer");
}
