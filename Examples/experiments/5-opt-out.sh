#!/bin/sh
# Experiment 5, opt-out: an app that opts out reports 40 zeros; undoing it restores the value.
#
# Acme Notes and Indie Chess share a value. Notes opts out (`openudid opt-out
# --app`): it reports the all-zero identifier, while Chess keeps the shared
# value. Notes opts back in (`--undo`) and gets the shared value again. Then
# the user opts out for every app (`--all`): everyone reports zeros, until
# that is undone too.
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
zeros=0000000000000000000000000000000000000000
say "display: ${DISPLAY:-none, so files only}"
shared=$(ou get --app com.acme.notes --mirror none)
chess=$(ou get --app org.indie.chess --mirror none)
is_identifier "$shared" || surprise "Acme Notes got \"$shared\", not a 40-hex identifier"
[ "$chess" = "$shared" ] || surprise "org.indie.chess got $chess, not the $shared of com.acme.notes"
say "com.acme.notes and org.indie.chess share $shared"

ou opt-out --app com.acme.notes
notes=$(ou get --app com.acme.notes --mirror none)
[ "$notes" = "$zeros" ] || surprise "com.acme.notes opted out but reports $notes, not 40 zeros"
chess=$(ou get --app org.indie.chess --mirror none)
[ "$chess" = "$shared" ] || surprise "org.indie.chess reports $chess after Notes opted out, not $shared"
say "Notes opted out: it reports $notes; Chess keeps $chess"

ou opt-out --app com.acme.notes --undo
notes=$(ou get --app com.acme.notes --mirror none)
[ "$notes" = "$shared" ] || surprise "com.acme.notes opted back in but reports $notes, not $shared"
say "Notes opted back in: $notes again"

ou opt-out --all
for app in com.acme.notes org.indie.chess; do
    value=$(ou get --app "$app" --mirror none)
    [ "$value" = "$zeros" ] || surprise "the user opted out everywhere, yet $app reports $value"
done
say "the user opted out for every app: both report zeros"
ou opt-out --all --undo
for app in com.acme.notes org.indie.chess; do
    value=$(ou get --app "$app" --mirror none)
    [ "$value" = "$shared" ] || surprise "after undoing the user's opt-out, $app reports $value, not $shared"
done
say "undone: both report $shared again"
say "as expected"
