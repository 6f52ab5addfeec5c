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
EFB_VENV="$EFB_ROOT/.venv" EFB_P4_VENV="$EFB_ROOT/.venv-p4" cargo test --workspace --lib --bins --tests "$@"

efb_log "benchmarks build and run one quick round"
EFB_BENCH_QUICK=1 cargo bench --workspace --quiet

# The soak times optimised binaries, as users run them: the bench profile (release's
# settings) reuses what the benchmarks just built.
efb_log "liveness soak: pairs die and return at 10 ms for ${EFB_SOAK_SECONDS:=60} s"
EFB_SOAK_SECONDS="$EFB_SOAK_SECONDS" cargo test --profile bench --quiet -p efb-tests --test liveness soak
