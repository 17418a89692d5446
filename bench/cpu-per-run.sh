#!/usr/bin/env bash
# CPU per handed-over `moat run -- /bin/true` (issue #12's second target,
# CPU per run): a `moat serve` of the user is started in a working
# directory of its own, N runs are handed to it, and the CPU they cost is
# summed from the server's /proc/PID/stat (its own and its reaped
# children's: stage 2, init, the command) and from getrusage of the
# clients (GNU time over the loop, which adds the loop's shell).
#
#   sudo bash bench/cpu-per-run.sh             # as the user moat-ci (created if missing)
#   sudo USER_NAME=root bash bench/cpu-per-run.sh
#   N=200 MOAT=/path/to/moat ...
set -euo pipefail
cd "$(dirname "$0")/.."
MOAT=${MOAT:-$PWD/bin/moat}
[ -x "$MOAT" ] || make build
N=${N:-200}
U=${USER_NAME:-moat-ci}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (make bench-deps)" >&2; exit 2; }
id "$U" >/dev/null 2>&1 || useradd -m "$U"
D=$(mktemp -d /var/tmp/moat-cpu-XXXXXX)
trap 'kill "$SP" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
chmod 755 "$D"; mkdir -p "$D/w" "$D/run"; chown "$U" "$D/w" "$D/run"; chmod 700 "$D/run"
cat > "$D/w/s.json" <<JSON
{"network":{"allowedDomains":["example.com","*.github.com","registry.npmjs.org"],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}
JSON
sh dist/install-binary.sh "$MOAT" "$D/moat"
AS=(setpriv --reuid="$U" --regid="$U" --init-groups)
[ "$U" = root ] && AS=()
UENV=(env -i HOME="$(getent passwd "$U" | cut -d: -f6)" PATH=/usr/bin:/bin MOAT_DAEMON=off)
(cd "$D/w" && exec "${AS[@]}" "${UENV[@]}" "$D/moat" serve --socket "$D/run/api.sock" 2>"$D/serve.log") &
SP=$!
for _ in $(seq 100); do [ -S "$D/run/api.sock" ] && break; sleep 0.05; done
cat > "$D/loop.sh" <<LOOP
cd "$D/w"
for i in \$(seq 1 $N); do MOAT_SERVER=$D/run/api.sock $D/moat run --settings s.json -- /bin/true; done
LOOP
tck=$(getconf CLK_TCK)
a=$(awk '{print $14+$15+$16+$17}' /proc/$SP/stat)
ct=$({ /usr/bin/time -f "%U %S" "${AS[@]}" "${UENV[@]}" bash "$D/loop.sh"; } 2>&1 | tail -1)
b=$(awk '{print $14+$15+$16+$17}' /proc/$SP/stat)
python3 -c "
s=($b-$a)/$tck*1000/$N; u,sy=map(float,'$ct'.split()); c=(u+sy)*1000/$N
print('$U: server and its children %.1f ms, clients %.1f ms, total %.1f ms CPU per run (%d runs)'%(s,c,s+c,$N))"
