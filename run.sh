#!/usr/bin/env bash
# The balancer's main job, after installing what is missing: the software target (the
# emulated chip, P4Runtime on 127.0.0.1:9559), efbd with its embedded defaults (datastore
# under datastore/, management API on the Unix socket datastore/efbd.sock, gNMI with TLS on
# 127.0.0.1:9339 only with the demo users admin/admin, operator/operator, viewer/viewer,
# Prometheus metrics at http://127.0.0.1:9464/metrics), the one-filter example site loaded
# on first start, then the shell (as the account that runs efbd, an admin). Leaving the
# shell stops efbd and the target.
set -euo pipefail
EFB_ROOT="$(cd "$(dirname "$0")" && pwd)"
cd "$EFB_ROOT"
. .ci/setup.sh
efb_setup

efb_log "building efbd, efb-cli and efb-target (release; minutes the first time)"
# Not --quiet: a first build goes on for minutes, and cargo's progress (its bar and a line
# per crate) shows that it does; a warm run says one line, "Finished".
cargo build --release -p efbd -p efb-cli -p efb-target
bin="$EFB_ROOT/target/release"
logs="$EFB_ROOT/datastore"
mkdir -p "$logs"

. .ci/background.sh

# Standard output has only the line that says where each listens; the log is standard error.
efb_log "starting efb-target, the software chip (log: datastore/efb-target.log)"
"$bin/efb-target" >"$logs/efb-target.out" 2>"$logs/efb-target.log" &
EFB_PIDS+=($!)
efb_wait_for "${EFB_PIDS[-1]}" "$logs/efb-target.out" "P4Runtime on" "$logs/efb-target.log"

efb_log "starting efbd (log: datastore/efbd.log)"
# The demo users' passwords are public: gNMI on loopback only.
"$bin/efbd" --gnmi-users examples/users.demo.toml --gnmi-listen 127.0.0.1:9339 >"$logs/efbd.out" 2>"$logs/efbd.log" &
EFB_PIDS+=($!)
efb_wait_for "${EFB_PIDS[-1]}" "$logs/efbd.out" "management API on" "$logs/efbd.log"
# Where efbd listens, and the certificate gNMI clients must trust.
sed 's/^efbd: /  /' "$logs/efbd.out"

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
