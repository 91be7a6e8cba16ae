#!/bin/sh
# Experiment 6, Python: an app written in Python takes part beside the others.
#
# Acme Notes runs (`openudid serve`). An app in Python, through the openudid
# package (bindings/python) over libopenudid, gets Notes' identifier, and an
# app-scoped value of its own that differs from it. It opts out: it reports
# 40 zeros while Indie Chess still gets the shared value; it opts back in and
# reports the shared value again. Then it removes itself, as uninstalling
# would, and its local cache is gone.
#
# Environment:
#   OPENUDID          the openudid binary (default: openudid on PATH, else .build/debug/openudid)
#   OPENUDID_LIBRARY  libopenudid.so.1 (default: the one beside $OPENUDID, else the
#                     one in .build/debug, else the installed one)
#   DISPLAY           used when set; otherwise the script starts its own Xvfb when
#                     there is one, and runs without selections when there is none
# Exit status: 0 when everything happened as expected; 1 on any surprise, with
# a message that says which.
set -eu

# The private home, display and helpers every experiment shares.
. "$(cd "$(dirname "$0")" && pwd)/lib/setup.sh"

# --- The Python side ---------------------------------------------------------
command -v python3 >/dev/null 2>&1 || { echo "$name: needs python3" >&2; exit 1; }
# The package as installed by pip, else the one in this checkout.
python3 -c 'import openudid' 2>/dev/null || export PYTHONPATH="$here/../../bindings/python"
export PYTHONDONTWRITEBYTECODE=1
if [ -z "${OPENUDID_LIBRARY:-}" ]; then
    # A build directory names the library after SwiftPM's product, liblibopenudid.so.
    for candidate in "$(dirname "$OPENUDID")/liblibopenudid.so" "$here/../../.build/debug/liblibopenudid.so"; do
        if [ -f "$candidate" ]; then
            export OPENUDID_LIBRARY="$candidate"
            break
        fi
    done
fi
selections=yes
[ -n "${DISPLAY:-}" ] || selections=no
# py ACTION: runs one step of the Python app (org.example.python) and prints what it saw.
py() {
    python3 - "$ns" "$selections" "$1" <<'PYTHON'
import sys
import openudid

namespace, selections, action = sys.argv[1], sys.argv[2] == "yes", sys.argv[3]
if action == "remove":
    openudid.remove_app("org.example.python", namespace=namespace)
    sys.exit(0)
with openudid.OpenUDID("org.example.python", namespace=namespace, selections=selections) as udid:
    if action == "opt-out":
        udid.opt_out()
    elif action == "opt-in":
        udid.opt_in()
    print(udid.value(), udid.app_value(), udid.report()["origin"])
PYTHON
}

# --- The experiment -------------------------------------------------------------
zeros=0000000000000000000000000000000000000000
say "display: ${DISPLAY:-none, so files only}"
serve com.acme.notes
shared=$served
is_identifier "$shared" || surprise "Acme Notes served \"$shared\", not a 40-hex identifier"

set -- $(py look)
[ "${1:-}" = "$shared" ] || surprise "the Python app got \"${1:-}\", not the $shared Notes serves"
printf '%s\n' "${2:-}" | grep -Eqx '[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}' \
    || surprise "the Python app's own value \"${2:-}\" is not a version-4 UUID"
say "the Python app gets $1 (from the $3), and its own value $2"

set -- $(py opt-out)
[ "${1:-}" = "$zeros" ] || surprise "the Python app opted out but reports \"${1:-}\", not 40 zeros"
chess=$(ou get --app org.indie.chess)
[ "$chess" = "$shared" ] || surprise "org.indie.chess got $chess while the Python app opted out, not $shared"
say "the Python app opted out: it reports zeros; Chess still gets $chess"

set -- $(py opt-in)
[ "${1:-}" = "$shared" ] || surprise "the Python app opted back in but reports \"${1:-}\", not $shared"
say "the Python app opted back in: $1 again"

cache="$XDG_DATA_HOME/org.example.python/openudid-$ns.json"
[ -f "$cache" ] || surprise "the Python app kept no local cache at $cache"
py remove
[ ! -e "$cache" ] || surprise "openudid.remove_app left the Python app's local cache at $cache"
say "the Python app removed itself: its local cache is gone"
say "as expected"
