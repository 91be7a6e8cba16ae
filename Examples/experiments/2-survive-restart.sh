#!/bin/sh
# Experiment 2, survive-restart: an app's value outlives its process, through its file slot.
#
# Acme Notes serves the identifier, then quits: its selection slot is gone with
# its process. Its file slot stays, so Indie Chess, which has never run before
# (no local cache) and has no mirror, still finds the value; `openudid slots`
# shows where. When Notes starts again it serves the same value.
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
first=$served
is_identifier "$first" || surprise "Acme Notes served \"$first\", not a 40-hex identifier"
say "com.acme.notes serves $first, then quits"
stop "$served_pid"

slots=$(ou slots)
printf '%s\n' "$slots" | grep -q "^selection.*com\.acme\.notes" && surprise "a selection of com.acme.notes outlived its process: $slots"
printf '%s\n' "$slots" | grep -E "^file +com\.acme\.notes " | grep -q "$first" \
    || surprise "no file slot of com.acme.notes holds $first; openudid slots says:
$slots"
say "its selection is gone; its file slot holds $first"

chess=$(ou get --app org.indie.chess --mirror none)
[ "$chess" = "$first" ] || surprise "org.indie.chess got $chess after Notes quit, not $first"
say "org.indie.chess, new here, got $chess from that file slot"

serve com.acme.notes --mirror none
[ "$served" = "$first" ] || surprise "Acme Notes came back with $served instead of $first"
say "com.acme.notes, started again, serves $served"
say "as expected"
