//! What the property-based fuzzing of the parsers shares (`crates/*/tests/fuzz_*.rs`):
//!
//! - [`config`]: proptest's settings, the one place `EFB_FUZZ_CASES` and `EFB_FUZZ_SEED`
//!   are read. Each property names its own case count, chosen so that the whole set stays
//!   within about 30 s of `cargo test` in the dev profile; `EFB_FUZZ_CASES=N` runs every
//!   property N times instead. No failure files are written: a failure prints its seed, and
//!   `EFB_FUZZ_SEED=S` replays it.
//! - [`json`]: arbitrary JSON (model names among arbitrary ones), and text mutated a little.
//! - [`model`]: what the schema says is valid: leaf values, data paths, configuration trees.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use efb_yang::Schema;
use proptest::test_runner::{Config, RngSeed};

pub mod json;
pub mod model;

/// The environment variable that sets how many cases every property runs.
pub const CASES_VAR: &str = "EFB_FUZZ_CASES";
/// The environment variable that fixes the seed (printed by a failing property).
pub const SEED_VAR: &str = "EFB_FUZZ_SEED";

/// Settings for one property: `cases` cases unless `EFB_FUZZ_CASES` says otherwise, the
/// seed `EFB_FUZZ_SEED` or a random one (printed: the harness shows it when the property
/// fails), no failure persistence, shrinking bounded in time.
pub fn config(cases: u32) -> Config {
    let cases = env_number(CASES_VAR)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(cases);
    let seed = env_number(SEED_VAR).unwrap_or_else(random_seed);
    eprintln!(
        "fuzz: {cases} cases, seed {seed} (to repeat: {SEED_VAR}={seed} {CASES_VAR}={cases})"
    );
    Config {
        cases,
        // Values are drawn by type and kept when libyang takes them (about one in four is
        // not): the limit of values thrown away grows with the cases.
        max_local_rejects: cases.saturating_mul(16).max(65_536),
        max_global_rejects: cases.saturating_mul(4).max(1024),
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        max_shrink_time: 30_000,
        ..Config::default()
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

fn random_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

/// The embedded schema, loaded once per test binary.
///
/// # Panics
/// When the embedded module does not load (every other test fails then too).
pub fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| match Schema::load() {
        Ok(schema) => schema,
        Err(e) => panic!("the embedded schema does not load: {e}"),
    })
}

/// The bound every error message of this project keeps to, whatever it quotes (see
/// `efb_yang::text`): the listed problems, each cut, plus the count of the others.
pub const MESSAGE_BOUND: usize =
    efb_yang::text::LISTED_PROBLEMS * (efb_yang::text::PROBLEM_BYTES + 40) + 100;
