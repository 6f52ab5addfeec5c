# Sourced by ../run.sh and ../test.sh: installs what building and testing need, once.
# - Debian packages: cmake and libpcre2-dev build the bundled libyang; python3-venv holds
#   the real clients' virtualenv.
# - .venv/: a Python virtualenv with the real clients pyang and pygnmi (gNMI, with gnmi-pb,
#   grpcio-tools for the proto check and grpcio-reflection to read efbd's server
#   reflection) and Google's oc-config-validate (OpenConfig checked against its pyangbind
#   bindings, tests/openconfig.rs); .venv-p4/: p4runtime-shell, in a virtualenv of its own because it needs
#   protobuf 3, which gnmi-pb cannot use.
# - Debian packaging (packaging/deb.sh, tests/package.rs): cargo-deb, from crates.io, pinned
#   as the Python clients are; dpkg-dev for its dpkg-shlibdeps (the packages' Depends);
#   systemd for systemd-analyze (verify, security) and systemd-sysusers (the account efb).
# - prometheus (2.42, the Debian server): tests/metrics.rs scrapes efbd and efb-target with it,
#   checks the example web configuration with its promtool, and asks with curl (TLS, logins).
# - libyang2-tools: yanglint, libyang's own validator, what `cargo bench -p efb-tests --bench
#   validate` compares efb-config and efbd with.

EFB_DEBIAN_PACKAGES="cmake libpcre2-dev pkg-config python3-venv dpkg-dev systemd prometheus curl libyang2-tools"
EFB_CARGO_DEB_VERSION="3.8.0"
EFB_PYTHON_PACKAGES="pyang==2.7.1 pygnmi==0.8.15 gnmi-pb==0.11.0.1 grpcio==1.85.1 grpcio-tools==1.85.1 grpcio-reflection==1.85.1 protobuf==7.36.2 oc-config-validate==2.10.0.post1 pyangbind==0.8.7 PyYAML==6.0.4 retry==0.9.2"
EFB_P4_PYTHON_PACKAGES="p4runtime-shell==0.0.6 p4runtime==1.4.1 protobuf==3.20.3 grpcio==1.85.3"

efb_log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

efb_ensure_debian_packages() {
  local missing=()
  for pkg in $EFB_DEBIAN_PACKAGES; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  # python3-venv is only needed when the interpreter cannot make a virtualenv by itself.
  if python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    missing=("${missing[@]/python3-venv}")
  fi
  missing=(${missing[@]+"${missing[@]}"})
  [ ${#missing[@]} -eq 0 ] && return 0
  efb_log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

efb_ensure_rust() {
  if ! command -v cargo >/dev/null 2>&1; then
    efb_log "cargo is missing: install Rust (https://rustup.rs) and run this again"
    exit 1
  fi
}

# efb_ensure_venv DIR PACKAGES: a virtualenv at DIR holding exactly PACKAGES (remade when
# the list changes).
efb_ensure_venv() {
  local venv="$1" packages="$2"
  local stamp="$venv/.efb-packages"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$packages" ]; then
    return 0
  fi
  efb_log "preparing the Python virtualenv $venv ($packages)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check $packages
  echo "$packages" > "$stamp"
}

# cargo-deb packs the Debian packages; the tests pack the binaries they built (dev profile),
# which later cargo-deb versions may refuse: hence the pinned version.
efb_ensure_cargo_deb() {
  if [ "$(cargo deb --version 2>/dev/null)" = "cargo-deb $EFB_CARGO_DEB_VERSION" ]; then
    return 0
  fi
  efb_log "installing cargo-deb $EFB_CARGO_DEB_VERSION (cargo install)"
  cargo install --quiet --locked cargo-deb --version "$EFB_CARGO_DEB_VERSION"
}

efb_setup() {
  efb_ensure_debian_packages
  efb_ensure_rust
  efb_ensure_venv "$EFB_ROOT/.venv" "$EFB_PYTHON_PACKAGES"
  efb_ensure_venv "$EFB_ROOT/.venv-p4" "$EFB_P4_PYTHON_PACKAGES"
}
