#!/usr/bin/env bash
# Runs every test of the project (unit, integration, real-client, crash), after installing
# what is missing. Usage: ./test.sh [extra cargo test arguments]
set -euo pipefail
EFB_ROOT="$(cd "$(dirname "$0")" && pwd)"
cd "$EFB_ROOT"
. .ci/setup.sh
efb_setup
# Only the tests pack Debian packages (tests/package.rs): ./run.sh does not need cargo-deb.
efb_ensure_cargo_deb

efb_log "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

efb_log "tests"
# A test that hangs must fail the run, not hold CI until its own limit: the tests take
# about 6 minutes here and 12 on CI, with their build 20.
EFB_VENV="$EFB_ROOT/.venv" EFB_P4_VENV="$EFB_ROOT/.venv-p4" \
    timeout --kill-after=30 "${EFB_TESTS_MINUTES:=40}m" \
    cargo test --workspace --lib --bins --tests "$@" ||
    { status=$?; [ "$status" -eq 124 ] && efb_log "tests still running after $EFB_TESTS_MINUTES minutes: stopped"; exit "$status"; }
# Doc tests: among them what must not compile (efb-p4info: an action passed for a table).
cargo test --quiet --doc --workspace

# Everything below runs in the dev profile (opt-level 1, debug assertions on): one build for
# the tests, the benchmarks' quick round and the soak. The benchmarks' figures come from
# `cargo bench` (release) by hand; a second, optimised build of the workspace took 664 s
# locally, and about twice that on CI.
efb_log "benchmarks build and run one quick round"
EFB_BENCH_QUICK=1 cargo bench --workspace --profile dev --quiet

efb_log "liveness soak: pairs die and return at 10 ms (down after 3, both cores kept busy) for ${EFB_SOAK_SECONDS:=60} s"
EFB_SOAK_SECONDS="$EFB_SOAK_SECONDS" cargo test --quiet -p efb-tests --test liveness soak -- --ignored
