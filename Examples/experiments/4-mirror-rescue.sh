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

# The private home, display and helpers every experiment shares.
. "$(cd "$(dirname "$0")" && pwd)/lib/setup.sh"

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
