# Sourced by ../run.sh and ../examples/crossed/run.sh: the processes a script starts in the
# background (add each one's pid to EFB_PIDS) are stopped with SIGTERM, and waited for, when
# the script exits, however it exits.

EFB_PIDS=()
efb_stop_background() {
  for pid in "${EFB_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${EFB_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap efb_stop_background EXIT

# efb_wait_for PID FILE TEXT LOG: until FILE holds TEXT (10 s at most); if PID dies first,
# shows LOG (its standard error) and fails.
efb_wait_for() {
  for _ in $(seq 1 100); do
    grep -q "$3" "$2" 2>/dev/null && return 0
    if ! kill -0 "$1" 2>/dev/null; then
      cat "$4" >&2
      exit 1
    fi
    sleep 0.1
  done
  efb_log "timed out waiting for \"$3\" in $2"
  exit 1
}
