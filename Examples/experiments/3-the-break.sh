#!/bin/sh
# Experiment 3, the break: remove every app, and the identifier is gone for good.
#
# This is the original OpenUDID's fundamental break, kept here because it is
# the truth of the mechanism: the identifier lives only in the participating
# apps (their selections, file slots and local caches). Acme Notes and Indie
# Chess agree on a value; both are removed (`openudid remove-app`, what
# uninstalling them with their data does); no vendor mirror is used. The next
# app, even Acme Notes installed again, gets a new identifier.
#
# Environment:
#   OPENUDID  the openudid binary (default: openudid on PATH, else .build/debug/openudid)
#   DISPLAY   used when set; otherwise the script starts its own Xvfb when there
#             is one, and runs without selections when there is none
# Exit status: 0 when everything happened as expected; 1 on any surprise, with
# a message that says which.
set -eu

# --- Set-up (the same in every experiment) ------------------------------------
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

# --- The experiment -------------------------------------------------------------
say "display: ${DISPLAY:-none, so files only}"
notes=$(ou get --app com.acme.notes --mirror none)
chess=$(ou get --app org.indie.chess --mirror none)
is_identifier "$notes" || surprise "Acme Notes got \"$notes\", not a 40-hex identifier"
[ "$chess" = "$notes" ] || surprise "org.indie.chess got $chess, not the $notes of com.acme.notes"
say "com.acme.notes and org.indie.chess share $notes"

ou remove-app com.acme.notes
ou remove-app org.indie.chess
[ -z "$(ou slots | sed 1d)" ] || surprise "slots remain after removing every app: $(ou slots)"
say "both removed; no slot is left"

again=$(ou get --app com.acme.notes --mirror none)
is_identifier "$again" || surprise "the reinstalled Acme Notes got \"$again\", not a 40-hex identifier"
[ "$again" != "$notes" ] || surprise "the identifier $notes survived the removal of every app; it should not have"
say "com.acme.notes, installed again, gets $again: a new identifier (the break)"
newcomer=$(ou get --app net.example.viewer --mirror none)
[ "$newcomer" = "$again" ] || surprise "a newcomer got $newcomer instead of the new $again"
say "and from now on everyone shares the new one"
say "as expected"
