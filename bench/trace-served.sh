#!/usr/bin/env bash
# Where a handed-over `moat run -- /bin/true` spends its time: MOAT_TRACE=1
# through one rootless moat serve, N runs, the median of each phase (from
# the server's receipt of the request).
#
#   sudo N=30 bash bench/trace-served.sh [/path/to/moat]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
BIN=${1:-$PWD/bin/moat}
U=${USER_NAME:-moat-ci}
id "$U" >/dev/null 2>&1 || useradd -m "$U"
HOMEDIR=$(getent passwd "$U" | cut -d: -f6)
D=$(mktemp -d /var/tmp/moat-trace-XXXXXX)
chmod 755 "$D"
trap 'kill "$SPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
mkdir -p "$D/u"
cat > "$D/u/s.json" <<'J'
{"network":{"allowedDomains":["example.com","*.github.com","registry.npmjs.org"],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}
J
sh dist/install-binary.sh "$BIN" "$D/moat"
chown -R "$U" "$D"
UENV=(env -i HOME="$HOMEDIR" PATH=/usr/bin:/bin MOAT_DAEMON=off)
(cd "$D/u" && exec setpriv --reuid="$U" --regid="$U" --init-groups "${UENV[@]}" "$D/moat" serve --socket "$D/api.sock" 2>"$D/serve.log") &
SPID=$!
sleep 1.5
cd "$D/u"
for _ in $(seq "${N:-30}"); do
	setpriv --reuid="$U" --regid="$U" --init-groups "${UENV[@]}" MOAT_TRACE=1 MOAT_SERVER="$D/api.sock" "$D/moat" run --settings s.json -- /bin/true
done 2>"$D/trace.out"
python3 - "$D/trace.out" <<'P'
import re, sys, statistics
phases = {}
for line in open(sys.argv[1]):
    m = re.search(r'([0-9.]+)\s*ms\s+(.*)$', line.strip())
    if m:
        phases.setdefault(m.group(2), []).append(float(m.group(1)))
for name, v in phases.items():
    print('%8.2f ms  %s (%d)' % (statistics.median(v), name, len(v)))
P
