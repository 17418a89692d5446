#!/usr/bin/env bash
# The system calls a handed-over `moat run -- /bin/true` makes: strace -f -c
# of one rootless moat serve (and its children: stage 2, init, the command)
# over N runs of the peer settings (bench/trace-served.sh's), the count of
# each call divided by N. The client's own calls are not counted.
#
#   sudo N=20 bash bench/syscalls-served.sh [/path/to/moat]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
command -v strace >/dev/null || { echo "needs strace (make deps)" >&2; exit 2; }
BIN=${1:-$PWD/bin/moat}
N=${N:-20}
U=${USER_NAME:-moat-ci}
id "$U" >/dev/null 2>&1 || useradd -m "$U"
HOMEDIR=$(getent passwd "$U" | cut -d: -f6)
D=$(mktemp -d /var/tmp/moat-sc-XXXXXX)
chmod 755 "$D"
mkdir -p "$D/w" "$D/run"
chown "$U" "$D/w" "$D/run"
chmod 700 "$D/run"
cat > "$D/w/s.json" <<'J'
{"network":{"allowedDomains":["example.com","*.github.com","registry.npmjs.org"],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}
J
sh dist/install-binary.sh "$BIN" "$D/moat"
UENV=(env -i HOME="$HOMEDIR" PATH=/usr/bin:/bin MOAT_DAEMON=off)
AS=(setpriv --reuid="$U" --regid="$U" --init-groups)
SP=
ST=
trap 'kill "$ST" "$SP" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
(cd "$D/w" && exec "${AS[@]}" "${UENV[@]}" "$D/moat" serve --socket "$D/run/api.sock" 2>"$D/serve.log") &
SP=$!
for _ in $(seq 100); do [ -S "$D/run/api.sock" ] && break; sleep 0.05; done
SPID=$(pgrep -f "$D/moat serve" | head -1)
cd "$D/w"
run() { "${AS[@]}" "${UENV[@]}" MOAT_SERVER="$D/run/api.sock" "$D/moat" run --settings s.json -- /bin/true; }
run # warm: the state directory, the caches
strace -q -f -c -S calls -p "$SPID" -o "$D/sc.out" 2>/dev/null &
ST=$!
sleep 1
for _ in $(seq "$N"); do run; done
sleep 0.5
kill -INT "$ST"
wait "$ST" || true
ST=
awk -v n="$N" 'NR > 2 && $1 ~ /^[0-9.]+$/ {
	if ($NF == "total") { total = $4; next }
	line[++k] = sprintf("%8.1f  %s", $4 / n, $NF)
}
END {
	printf "%8.0f  all calls a run (%d runs)\n", total / n, n
	for (i = 1; i <= k && i <= 40; i++) print line[i]
}' "$D/sc.out"
