#!/usr/bin/env bash
# The balancer's main job, after installing what is missing. Until efbd and its shell land,
# a tour of the foundation with the offline tool efb-config over the example sites:
# validation, the balancing-config-hash, where sessions go, and what a change changes.
set -euo pipefail
EFB_ROOT="$(cd "$(dirname "$0")" && pwd)"
cd "$EFB_ROOT"
. .ci/setup.sh
efb_setup

cargo build --release --quiet -p efb-config
tool="$EFB_ROOT/target/release/efb-config"
site=examples/one-filter-site.json
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@" || true; }

step "$tool" validate "$site"
step "$tool" validate examples/ten-filter-site.json
step "$tool" hash "$site"
step "$tool" hash --text "$site"
step "$tool" lookup "$site" --src 10.1.2.3 --dst 8.8.8.8 --proto 6 --src-port 40000 --dst-port 443 --link l1
step "$tool" lookup "$site" --src 8.8.8.8 --dst 10.1.2.3 --proto 6 --src-port 443 --dst-port 40000 --link l1
step "$tool" lookup "$site" --src 10.1.2.3 --dst 8.8.8.8 --proto 6 --link l1 --down f1-te3-te4
step "$tool" lookup "$site" --src 10.0.0.1 --dst 10.0.0.2 --proto 6 --dst-port 179 --link l2

changed="$(mktemp --suffix .json)"
trap 'rm -f "$changed"' EXIT
python3 - "$site" "$changed" <<'PY'
import json, sys
site = json.load(open(sys.argv[1]))
balancer = site["ecofilter-balancer:ecofilter-balancer"]
balancer["ecofilter-unit"][0]["cores"] = 23
balancer["link"][1]["lan-port"] = "p2"          # already used by link l1
json.dump(site, open(sys.argv[2], "w"))
PY
step "$tool" diff "$site" "$changed"
step "$tool" validate "$changed"
step "$tool" hash "$changed"
