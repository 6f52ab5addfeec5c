#!/usr/bin/env bash
# The balancer's main job, after installing what is missing: efbd with its embedded
# defaults (datastore under datastore/, management API on 127.0.0.1:50051), the one-filter
# example site loaded on first start, then the shell. Leaving the shell stops efbd.
set -euo pipefail
EFB_ROOT="$(cd "$(dirname "$0")" && pwd)"
cd "$EFB_ROOT"
. .ci/setup.sh
efb_setup

efb_log "building efbd and efb-cli (release)"
cargo build --release --quiet -p efbd -p efb-cli
bin="$EFB_ROOT/target/release"
log="$EFB_ROOT/datastore/efbd.log"

efb_log "starting efbd (log: datastore/efbd.log)"
"$bin/efbd" >"$log.out" 2>"$log" &
efbd_pid=$!
trap 'kill -TERM "$efbd_pid" 2>/dev/null; wait "$efbd_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  grep -q "management API on" "$log.out" 2>/dev/null && break
  if ! kill -0 "$efbd_pid" 2>/dev/null; then
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done

if "$bin/efb-cli" -c "show configuration | count" | grep -q "Count: 0 lines"; then
  efb_log "first start: loading the one-filter example site"
  printf 'edit\nload override examples/one-filter-site.json\ncommit comment "one-filter example site"\n' | "$bin/efb-cli" --user setup
fi

"$bin/efb-cli"
