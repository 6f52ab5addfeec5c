#!/usr/bin/env bash
# The balancer's main job, after installing what is missing: the software target (the
# emulated chip, P4Runtime on 127.0.0.1:9559), efbd with its embedded defaults (datastore
# under datastore/, management API on 127.0.0.1:50051, gNMI with TLS on 9339 with the demo
# users admin/admin, operator/operator, viewer/viewer), the one-filter example site loaded
# on first start, then the shell. Leaving the shell stops efbd and the target.
set -euo pipefail
EFB_ROOT="$(cd "$(dirname "$0")" && pwd)"
cd "$EFB_ROOT"
. .ci/setup.sh
efb_setup

efb_log "building efbd, efb-cli and efb-target (release)"
cargo build --release --quiet -p efbd -p efb-cli -p efb-target
bin="$EFB_ROOT/target/release"
logs="$EFB_ROOT/datastore"
mkdir -p "$logs"

pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_all EXIT

# wait_for PID FILE TEXT: until FILE holds TEXT; fails with the log if PID died first.
wait_for() {
  for _ in $(seq 1 100); do
    grep -q "$3" "$2" 2>/dev/null && return 0
    if ! kill -0 "$1" 2>/dev/null; then
      cat "${2%.out}" >&2
      exit 1
    fi
    sleep 0.1
  done
  efb_log "timed out waiting for \"$3\" in $2"
  exit 1
}

efb_log "starting efb-target, the software chip (log: datastore/efb-target.log)"
"$bin/efb-target" >"$logs/efb-target.log.out" 2>"$logs/efb-target.log" &
pids+=($!)
wait_for "${pids[-1]}" "$logs/efb-target.log.out" "P4Runtime on"

efb_log "starting efbd (log: datastore/efbd.log)"
"$bin/efbd" --gnmi-users examples/users.demo.toml >"$logs/efbd.log.out" 2>"$logs/efbd.log" &
pids+=($!)
wait_for "${pids[-1]}" "$logs/efbd.log.out" "management API on"

# Commits program the chip: wait for the driver to connect and reconcile first.
for _ in $(seq 1 100); do
  "$bin/efb-cli" -c "show system status" | grep -q "in sync" && break
  sleep 0.1
done

if "$bin/efb-cli" -c "show configuration | count" | grep -q "Count: 0 lines"; then
  efb_log "first start: loading the one-filter example site"
  printf 'edit\nload override examples/one-filter-site.json\ncommit comment "one-filter example site"\n' | "$bin/efb-cli" --user setup
fi

"$bin/efb-cli"
