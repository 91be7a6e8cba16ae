#!/bin/sh
# Experiment 1, share: two apps that know nothing of each other get the same identifier.
#
# Acme Notes takes part in the session (`openudid serve`); Indie Chess, of
# another vendor, then asks once (`openudid get`) and must get the value Notes
# serves. With an X display a third app that may use no files at all gets it
# too, from the selections alone. As a control, a session of its own (another
# HOME, another namespace) must get a different value, so agreement is not an
# accident of a constant.
#
# Environment:
#   OPENUDID  the openudid binary (default: openudid on PATH, else .build/debug/openudid)
#   DISPLAY   used when set; otherwise the script starts its own Xvfb when there
#             is one, and runs without selections when there is none
# Exit status: 0 when everything happened as expected; 1 on any surprise, with
# a message that says which.
set -eu

# The private home, display and helpers every experiment shares.
. "$(cd "$(dirname "$0")" && pwd)/lib/setup.sh"

# --- The experiment -------------------------------------------------------------
say "display: ${DISPLAY:-none, so files only}"
serve com.acme.notes --mirror none
notes=$served
is_identifier "$notes" || surprise "Acme Notes served \"$notes\", not a 40-hex identifier"
say "com.acme.notes serves $notes"

chess=$(ou get --app org.indie.chess --mirror none)
[ "$chess" = "$notes" ] || surprise "org.indie.chess got $chess, but com.acme.notes serves $notes"
say "org.indie.chess got   $chess (the same)"

if [ -n "$display_option" ]; then
    say "no display: skipping the selections-only app"
else
    viewer=$(ou get --app net.example.viewer --mirror none --no-files)
    [ "$viewer" = "$notes" ] || surprise "net.example.viewer, using selections only, got $viewer instead of $notes"
    say "net.example.viewer got $viewer from the selections alone (the same)"
fi

# The control: nothing shared, so another value.
mkdir -p "$work/other"
other=$(HOME="$work/other" XDG_DATA_HOME="$work/other" XDG_CONFIG_HOME="$work/other" \
    "$OPENUDID" get --app org.indie.chess --mirror none --namespace "$ns-control" --no-display)
is_identifier "$other" || surprise "the control session got \"$other\", not a 40-hex identifier"
[ "$other" != "$notes" ] || surprise "a session that shares nothing got the same value $other"
say "a session of its own got $other (different, as it must)"
say "as expected"
