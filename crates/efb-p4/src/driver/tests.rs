#![allow(clippy::unwrap_used)]

use super::*;
use std::os::unix::fs::symlink;

#[test]
fn only_a_rebalancing_units_liveness_change_rewrites_buckets() {
    let unit = |name: &str, rebalance: bool| efb_model::Unit {
        name: name.into(),
        cores: 4,
        cores_set: true,
        liveness_profile: None,
        rebalance,
        pairs: vec![efb_model::Pair {
            name: "p0".into(),
            lan_port: format!("{name}-l"),
            wan_port: format!("{name}-w"),
            description: None,
        }],
        description: None,
    };
    let mut config = Config::default();
    for u in [unit("moves", true), unit("holds", false)] {
        config.units.insert(u.name.clone(), u);
    }
    let up = LiveState::all_up();
    let down = |unit: &str| {
        let mut live = LiveState::all_up();
        live.down_pairs.insert((unit.into(), "p0".into()));
        live
    };
    assert!(rebalance_moves(&config, &up, &down("moves")));
    assert!(rebalance_moves(&config, &down("moves"), &up));
    assert!(!rebalance_moves(&config, &up, &down("holds")));
    assert!(!rebalance_moves(&config, &down("moves"), &down("moves")));
}

#[test]
fn the_state_file_is_never_written_or_read_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("shadow");
    std::fs::write(&precious, "root only").unwrap();
    let path = dir.path().join("southbound.json");
    // A link where the temporary file goes: removed, not written through.
    symlink(&precious, dir.path().join("southbound.tmp")).unwrap();
    save_state(&path, &Saved::default()).unwrap();
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "root only");
    assert!(load_state(&path).is_ok());
    // A link in place of the state itself is refused when read.
    std::fs::remove_file(&path).unwrap();
    symlink(&precious, &path).unwrap();
    let err = load_state(&path).unwrap_err().to_string();
    assert!(err.contains("is a symbolic link"), "{err}");
    // Missing: a first start.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(load_state(&path).unwrap().election_id, 0);
}
