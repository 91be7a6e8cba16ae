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

# The private home, display and helpers every experiment shares.
. "$(cd "$(dirname "$0")" && pwd)/lib/setup.sh"

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
