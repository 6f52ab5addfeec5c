#!/usr/bin/env bash
# Builds the Debian packages, in target/debian/ (or where -o DIR says):
#   efb         efbd, efb-cli, efb-config, efbd.service, /etc/efb/efbd.toml, the YANG module
#   efb-target  the software chip and efb-target.service (labs and demos, not switches)
# First the binaries, then what the packages carry that is made from them: the man pages
# (from --help) and the default settings (from efbd --print-settings), then `cargo deb`
# packs each package from the metadata in crates/efbd/Cargo.toml and
# crates/efb-target/Cargo.toml.
#
# Usage: packaging/deb.sh [--profile PROFILE] [cargo deb options: -o DIR, --fast, ...]
# PROFILE is release unless given (the tests pack the binaries they built, in dev).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

profile=release
if [ "${1:-}" = --profile ]; then
  profile="$2"
  shift 2
fi
case "$profile" in
  dev) dir=debug ;;
  *) dir="$profile" ;;
esac
bin="${CARGO_TARGET_DIR:-$root/target}/$dir"
out="$bin/efb-package"

if ! cargo deb --version >/dev/null 2>&1; then
  echo "packaging/deb.sh: cargo-deb is missing: cargo install cargo-deb --locked (./test.sh installs it)" >&2
  exit 1
fi

# --bin without -p: the workspace's features, as the tests build them (no second build).
cargo build --quiet --profile "$profile" --bin efbd --bin efb-cli --bin efb-config --bin efb-target
mkdir -p "$out"

# manpage NAME SECTION SUMMARY SEE-ALSO: NAME's --help as a man page.
manpage() {
  local name="$1" section="$2" summary="$3" see_also="$4" version
  version="$("$bin/$name" --version | awk '{ print $2 }')"
  {
    printf '.TH "%s" "%s" "" "efb %s" "EcoFilter Balancer"\n' "${name^^}" "$section" "$version"
    printf '.SH NAME\n%s \\- %s\n' "${name//-/\\-}" "$summary"
    printf '.SH SYNOPSIS AND OPTIONS\n.nf\n'
    # Backslashes and lines starting with a period or a quote would be read as roff.
    "$bin/$name" --help | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
    printf '.fi\n.SH SEE ALSO\n%s, /usr/share/doc/efb/README.md\n' "$see_also"
  } | gzip -9n >"$out/$name.$section.gz"
}
manpage efbd 8 "the EcoFilter Balancer daemon" "efb-cli(1), efb-config(1), systemctl(1)"
manpage efb-cli 1 "the EcoFilter Balancer shell" "efbd(8)"
manpage efb-config 1 "offline configuration tool of the EcoFilter Balancer" "efbd(8)"
manpage efb-target 1 "the EcoFilter Balancer's software target (emulated chip)" "efbd(8)"

# /etc/efb/efbd.toml: every setting efbd prints, those left at their built-in default
# commented out (a default then follows efbd's, as password_checks follows the CPUs),
# the packaged paths set.
"$bin/efbd" --print-settings >"$out/defaults.toml"
"$bin/efbd" --print-settings --datastore /var/lib/efb --mgmt-socket /run/efb/efbd.sock \
  >"$out/packaged.toml"
{
  cat <<'HEADER'
# efbd's settings, read by efbd.service (efbd --config /etc/efb/efbd.toml). A conffile:
# upgrades keep your changes. Made from `efbd --print-settings`: the lines commented out
# are the built-in defaults (remove the '#' to change one); settings without a default,
# such as gnmi.users = "/etc/efb/users.toml" (who may log in to gNMI), gnmi.tls_cert and
# management.listen, are described in efbd(8) and /usr/share/doc/efb/README.md.
# After a change: systemctl restart efbd (a malformed file stops efbd with the line).
#
# datastore: kept there by efbd.service (StateDirectory=efb; ProtectSystem=strict leaves
# no other directory writable). management.socket: where efb-cli looks ($EFB_CONNECT,
# set in /etc/profile.d/efb.sh).

HEADER
  awk 'FNR == 1 { table = "" }
       NR == FNR { if ($0 ~ /^\[/) table = $0; else if (NF) default[table "|" $0] = 1; next }
       /^\[/ { table = $0; print; next }
       NF && ((table "|" $0) in default) { print "# " $0; next }
       { print }' "$out/defaults.toml" "$out/packaged.toml"
} >"$out/efbd.toml"

for package in efbd efb-target; do
  cargo deb --no-build --profile "$profile" -p "$package" "$@"
done
