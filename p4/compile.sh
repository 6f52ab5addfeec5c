#!/usr/bin/env bash
# Compiles efb.p4 with the open-source Tofino compiler (p4c's Tofino back end: p4c-barefoot,
# and its assembler bfas) and writes its outputs, the data plane's contract, to
# p4/compiled/: the P4Info, bfrt.json, the pipe's context.json and tofino.bin, the
# resource summary as text, and the SHA-256 of the source they came from. CI does not run
# this (it has no compiler): a test in crates/efb-p4info fails when efb.p4 differs from the
# source the committed outputs came from. See p4/README.md for the compiler's version.
#
# Usage: p4/compile.sh P4C_BAREFOOT BFAS INCLUDE_DIR...
#   P4C_BAREFOOT  the compiler (p4c-barefoot), BFAS its assembler (bfas)
#   INCLUDE_DIR   where core.p4 and tna.p4 are (p4c's p4include and the Tofino back end's)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$#" -lt 3 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: p4/compile.sh P4C_BAREFOOT BFAS INCLUDE_DIR..." >&2
  exit 2
fi
compiler="$1"
assembler="$2"
shift 2
includes=()
for dir in "$@"; do includes+=(-I "$dir"); done

out="$here/compiled"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# What the bf-p4c driver runs for a TNA program on Tofino 1, minus its packaging.
"$compiler" --target tofino --arch tna -D__TARGET_TOFINO__=1 "${includes[@]}" \
  --p4runtime-force-std-externs \
  --p4runtime-files "$work/efb.p4info.txtpb" \
  --bf-rt-schema "$work/efb.tofino/bfrt.json" \
  -o "$work/efb.tofino" "$here/efb.p4"
"$assembler" --no-warn --target tofino --table-handle-offset0 \
  -o "$work/efb.tofino/pipe" "$work/efb.tofino/pipe/efb.bfa"

rm -rf "$out"
mkdir -p "$out/pipe"
cp "$work/efb.p4info.txtpb" "$out/efb.p4info.txtpb"
cp "$work/efb.tofino/bfrt.json" "$out/bfrt.json"
cp "$work/efb.tofino/pipe/context.json" "$out/pipe/context.json"
cp "$work/efb.tofino/pipe/tofino.bin" "$out/pipe/tofino.bin"
# Where each table went (stages, memories), from the compiler's context.json.
python3 "$here/resources.py" "$out/pipe/context.json" > "$out/resources.txt"
(cd "$here" && sha256sum efb.p4) > "$out/source.sha256"
"$compiler" --version 2>&1 | grep -m1 '^Version' > "$out/compiler.txt"
echo "p4/compile.sh: wrote $out"
