#!/usr/bin/env bash
# What a connect through the unix-socket broker (network.allowUnixSockets)
# costs: N connects to an allowed unix socket from python3 inside moat,
# against the kernel's own connect (allowAllUnixSockets) and no moat at all.
#
#   bash bench/broker-connect.sh [/path/to/moat]      # N=2000 by default
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-$PWD/bin/moat}
N=${N:-2000}
D=$(mktemp -d /var/tmp/moat-broker-XXXXXX)
chmod 755 "$D"
python3 - "$D/s.sock" <<'P' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(128)
while True:
    c, _ = s.accept(); c.close()
P
SP=$!
trap 'kill $SP 2>/dev/null; rm -rf "$D"' EXIT
for _ in $(seq 50); do [ -S "$D/s.sock" ] && break; sleep 0.1; done
cat > "$D/loop.py" <<'P'
import socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
for _ in range(20):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(path); s.close()
t = time.perf_counter()
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(path); s.close()
print("%.1f us per connect" % ((time.perf_counter() - t) / n * 1e6))
P
for k in allowUnixSockets allowAllUnixSockets; do
	v="[\"$D/s.sock\"]"; [ $k = allowAllUnixSockets ] && v=true
	printf '{"network":{"allowedDomains":[],"deniedDomains":[],"%s":%s},"filesystem":{"denyRead":[],"allowWrite":["%s"],"denyWrite":[]}}\n' "$k" "$v" "$D" > "$D/$k.json"
done
printf 'no moat:                          '; python3 "$D/loop.py" "$D/s.sock" "$N"
printf 'moat, the kernel connects (allowAll): '; (cd "$D" && "$BIN" run --settings "$D/allowAllUnixSockets.json" -- python3 "$D/loop.py" "$D/s.sock" "$N")
printf 'moat, the broker (allowUnixSockets):  '; (cd "$D" && "$BIN" run --settings "$D/allowUnixSockets.json" -- python3 "$D/loop.py" "$D/s.sock" "$N")
