# Sourced by every experiment: a private home with its own XDG directories, a
# display (DISPLAY if set, else a private Xvfb if there is one, else none, so
# files only), a namespace of its own, and the helpers the experiments use:
#   ou ARGS...          openudid ARGS in this experiment's namespace and display
#   serve APP [OPT...]  starts `openudid serve` in the background; its first
#                       identifier lands in $served, its process id in $served_pid
#   stop PID            stops a served app and waits until it is gone
#   say TEXT, surprise TEXT (exits 1), is_identifier VALUE
# Everything it starts is stopped, and the private home removed, on exit.
# Expects `name` unset and `set -eu` in force; uses $0 for the script's name.
name=$(basename "$0" .sh)
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${OPENUDID:-}" ]; then
    OPENUDID=$(command -v openudid 2>/dev/null || echo "$here/../../.build/debug/openudid")
fi
[ -x "$OPENUDID" ] || { echo "$name: no openudid at $OPENUDID: run swift build, or set OPENUDID" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/openudid-$name.XXXXXX")
pids=""
cleanup() {
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    for pid in $pids; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$work/home/data" "$work/home/config" "$work/home/cache" "$work/home/runtime"
chmod 700 "$work/home/runtime"
export HOME="$work/home" XDG_DATA_HOME="$work/home/data" XDG_CONFIG_HOME="$work/home/config"
export XDG_CACHE_HOME="$work/home/cache" XDG_RUNTIME_DIR="$work/home/runtime"
unset DBUS_SESSION_BUS_ADDRESS
ns="$name-$$"
if [ -z "${DISPLAY:-}" ] && command -v Xvfb >/dev/null 2>&1; then
    Xvfb -displayfd 3 -nolisten tcp 3>"$work/display" >/dev/null 2>&1 &
    pids="$pids $!"
    tries=0
    while [ ! -s "$work/display" ] && [ $tries -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done
    [ -s "$work/display" ] && DISPLAY=":$(tr -d '[:space:]' <"$work/display")" && export DISPLAY
fi
display_option=--no-display
[ -n "${DISPLAY:-}" ] && display_option=
ou() { "$OPENUDID" "$@" --namespace "$ns" $display_option; }
say() { echo "$name: $*"; }
surprise() { echo "$name: SURPRISE: $*" >&2; exit 1; }
is_identifier() { printf '%s\n' "$1" | grep -Eqx '[0-9a-f]{40}' && [ "$1" != 0000000000000000000000000000000000000000 ]; }
# serve APP [OPTION...]: starts `openudid serve` in the background, waits for its
# first identifier, and leaves it in $served (its process id in $served_pid).
serve() {
    app=$1
    shift
    # Not through ou(): a shell function run in the background keeps a subshell
    # in between, which would outlive a kill of the recorded process id.
    runs=$((${runs:-0} + 1))
    out="$work/$app.$runs"
    "$OPENUDID" serve --app "$app" "$@" --namespace "$ns" $display_option >"$out.out" 2>"$out.err" &
    served_pid=$!
    pids="$pids $served_pid"
    tries=0
    while [ ! -s "$out.out" ] && [ $tries -lt 150 ]; do sleep 0.1; tries=$((tries + 1)); done
    [ -s "$out.out" ] || surprise "openudid serve --app $app printed nothing: $(cat "$out.err")"
    served=$(head -n 1 "$out.out")
}
# stop PID: stops a served app and waits until it is gone.
stop() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
