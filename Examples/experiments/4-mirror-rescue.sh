#!/bin/sh
# Experiment 4, mirror rescue: a vendor mirror brings its vendor's identifier back.
#
# With `--mirror file`, each vendor keeps a copy of the identifier apart from
# its apps (the Secret Service does the same in a desktop session; the file
# store stands in for it here). Acme Notes, Acme Photos and Indie Chess share a
# value; then all three are removed. Indie Chess, installed again first, finds
# nothing of its vendor and no app: it gets a new identifier. Acme Photos,
# installed next, finds Acme's mirror: its vote for the old identifier ties
# with Chess's file slot, and a tie goes to the identifier born first, so
# Photos gets the old identifier back, and Acme Notes joins it.
#
# Chess removes its vendor's mirror here too (`rm`), because an uninstaller of
# the last org.indie app would: without that, Chess's own mirror rescues Chess.
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
first=$(ou get --app com.acme.notes --mirror file)
photos=$(ou get --app com.acme.photos --mirror file)
chess=$(ou get --app org.indie.chess --mirror file)
is_identifier "$first" || surprise "Acme Notes got \"$first\", not a 40-hex identifier"
[ "$photos" = "$first" ] && [ "$chess" = "$first" ] || surprise "the apps disagree: notes $first, photos $photos, chess $chess"
say "notes, photos and chess share $first"
for vendor in com.acme org.indie; do
    [ -f "$XDG_DATA_HOME/openudid/ns/$ns/vendors/$vendor.json" ] \
        || surprise "no file mirror of $vendor at $XDG_DATA_HOME/openudid/ns/$ns/vendors/$vendor.json"
done
say "the file mirrors of com.acme and org.indie hold it"

for app in com.acme.notes com.acme.photos org.indie.chess; do ou remove-app "$app"; done
rm -f "$XDG_DATA_HOME/openudid/ns/$ns/vendors/org.indie.json"
say "all three apps removed, and org.indie's mirror with its last app; com.acme's mirror stays"

chess=$(ou get --app org.indie.chess --mirror file)
is_identifier "$chess" || surprise "the reinstalled Indie Chess got \"$chess\", not a 40-hex identifier"
[ "$chess" != "$first" ] || surprise "Indie Chess got the old $first back, but nothing of its vendor or any app held it"
say "org.indie.chess, installed again, gets $chess: a new one"

photos=$(ou get --app com.acme.photos --mirror file)
[ "$photos" = "$first" ] || surprise "Acme Photos got $photos, not the old $first from com.acme's mirror"
say "com.acme.photos, installed again, gets $photos: the old one, rescued by the mirror"
notes=$(ou get --app com.acme.notes --mirror file)
[ "$notes" = "$first" ] || surprise "Acme Notes got $notes, not the rescued $first"
say "com.acme.notes joins it: $notes"
say "as expected"
