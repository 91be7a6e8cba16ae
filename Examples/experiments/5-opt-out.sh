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

# The private home, display and helpers every experiment shares.
. "$(cd "$(dirname "$0")" && pwd)/lib/setup.sh"

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
