#!/usr/bin/env bash
# Two crossed balancers on one machine: efb-a and efb-b, each an efbd with its own software
# chip (efb-target), configured with examples/crossed/balancer-a.json and balancer-b.json:
# the same units and pairs (named after the filters' ports) and the same cores, on
# different local ports, with different links and flows. Each target emulates the filters
# behind its own pair ports; two processes cannot share one emulated filter, so "the same
# filters" here means filters with the same unit and pair names on both.
#
#   examples/crossed/run.sh          start both, compare them, then wait (Ctrl-C stops all)
#   examples/crossed/run.sh --demo   start both afresh, compare, change efb-b, compare
#                                    again, undo the change, compare, stop
#
# Datastores and logs: examples/crossed/datastore-a/ and datastore-b/ (git-ignored).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
EFB_ROOT="$(cd "$here/../.." && pwd)"
cd "$EFB_ROOT"
. .ci/setup.sh
efb_ensure_debian_packages
efb_ensure_rust

demo=false
case "${1:-}" in
  --demo) demo=true ;;
  "") ;;
  *) echo "usage: $0 [--demo]" >&2; exit 2 ;;
esac

efb_log "building efbd, efb-cli, efb-target and efb-config (release)"
cargo build --release --quiet -p efbd -p efb-cli -p efb-target -p efb-config
bin="$EFB_ROOT/target/release"

# Addresses apart from ./run.sh's (9559, datastore/efbd.sock, 9339, metrics 9464), so both
# can run at once; each management API is the Unix socket in its datastore.
declare -A target=([a]=127.0.0.1:9561 [b]=127.0.0.1:9562)
declare -A mgmt=([a]="$here/datastore-a/efbd.sock" [b]="$here/datastore-b/efbd.sock")
declare -A gnmi=([a]=127.0.0.1:9341 [b]=127.0.0.1:9342)
declare -A metrics=([a]=127.0.0.1:9465 [b]=127.0.0.1:9466)

. .ci/background.sh

cli() {
  local side="$1"
  shift
  "$bin/efb-cli" --connect "${mgmt[$side]}" --user "crossed-$side" "$@"
}

start_balancer() {
  local side="$1" dir="$here/datastore-$1"
  mkdir -p "$dir"
  "$bin/efb-target" --listen "${target[$side]}" >"$dir/efb-target.out" 2>"$dir/efb-target.log" &
  EFB_PIDS+=($!)
  efb_wait_for "${EFB_PIDS[-1]}" "$dir/efb-target.out" "P4Runtime on" "$dir/efb-target.log"
  "$bin/efbd" --datastore "$dir" --p4runtime "${target[$side]}" \
    --gnmi-listen "${gnmi[$side]}" --metrics-listen "${metrics[$side]}" \
    --gnmi-users examples/users.demo.toml >"$dir/efbd.out" 2>"$dir/efbd.log" &
  EFB_PIDS+=($!)
  efb_wait_for "${EFB_PIDS[-1]}" "$dir/efbd.out" "management API on" "$dir/efbd.log"
  for _ in $(seq 1 100); do
    cli "$side" -c "show system status" | grep -q "in sync" && break
    sleep 0.1
  done
  if cli "$side" -c "show configuration | count" | grep -q "Count: 0 lines"; then
    printf 'edit\nload override examples/crossed/balancer-%s.json\ncommit comment "crossed example, balancer %s"\n' \
      "$side" "$side" | cli "$side" >/dev/null
  fi
  efb_log "efb-$side: efb-cli --connect ${mgmt[$side]}, gNMI (TLS) on ${gnmi[$side]}, chip ${target[$side]}"
}

if $demo; then
  rm -rf "$here/datastore-a" "$here/datastore-b"
fi
start_balancer a
start_balancer b

# The demo users' password (examples/users.demo.toml); on a real site, a password file.
export EFB_GNMI_PASSWORD=viewer
compare() {
  local status=0
  (set -x; "$bin/efb-config" hash-compare --inventory examples/crossed/site.toml "$@") || status=$?
  echo "exit status $status"
}
session="src 100.64.1.20 dst 93.184.216.34 proto 6 src-port 51000 dst-port 443"
lookup() {
  for side in a b; do
    local link=l1
    [ "$side" = b ] && link=north
    echo "efb-$side> show ecofilter-balancer lookup-session $session link $link | match \"unit|pair|core|egress\""
    cli "$side" -c "show ecofilter-balancer lookup-session $session link $link | match \"unit|pair|core|egress\""
  done
}

efb_log "the two running balancers and the saved configuration of efb-b"
compare examples/crossed/balancer-b.json
if ! $demo; then
  efb_log "running; compare again with: EFB_GNMI_PASSWORD=viewer $bin/efb-config hash-compare --inventory examples/crossed/site.toml"
  efb_log "Ctrl-C stops both balancers and both chips"
  wait
  exit 0
fi

efb_log "one subscriber session, asked of both balancers"
lookup
efb_log "a deliberate change on efb-b only: unit dpi-1 gets 12 cores"
printf 'edit\nset ecofilter-balancer ecofilter-unit dpi-1 cores 12\ncommit comment "deliberate difference"\n' | cli b >/dev/null
compare
lookup
efb_log "undo it on efb-b (rollback 1, commit)"
printf 'edit\nrollback 1\ncommit comment "undo the difference"\n' | cli b >/dev/null
compare
