#!/usr/bin/env bash
# Where moat serve's CPU goes, by function: perf record -g on one rootless
# moat serve (and the processes it starts: stage 2, the commands) over N
# handed-over `moat run -- /bin/true`, then the top symbols. Give it a
# binary with its symbols (make build strips them):
#
#   CGO_ENABLED=1 go build -trimpath -tags 'netgo osusergo' \
#     -ldflags '-linkmode external -extldflags "-static"' -o /var/tmp/moat-sym ./cmd/moat
#   sudo N=200 bash bench/perf-server.sh /var/tmp/moat-sym
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 2; }
BIN=${1:?a moat binary with symbols}
N=${N:-200}
U=${USER_NAME:-moat-ci}
id "$U" >/dev/null 2>&1 || useradd -m "$U"
D=$(mktemp -d /var/tmp/moat-perfsrv-XXXXXX)
chmod 755 "$D"
mkdir -p "$D/w" "$D/run"
chown "$U" "$D/w" "$D/run"
chmod 700 "$D/run"
trap 'kill "$SP" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
cat > "$D/w/s.json" <<'J'
{"network":{"allowedDomains":["example.com","*.github.com","registry.npmjs.org"],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}
J
sh dist/install-binary.sh "$BIN" "$D/moat"
UENV=(env -i HOME="$(getent passwd "$U" | cut -d: -f6)" PATH=/usr/bin:/bin MOAT_DAEMON=off)
AS=(setpriv --reuid="$U" --regid="$U" --init-groups)
(cd "$D/w" && exec "${AS[@]}" "${UENV[@]}" "$D/moat" serve --socket "$D/run/api.sock" 2>"$D/serve.log") &
SP=$!
for _ in $(seq 100); do [ -S "$D/run/api.sock" ] && break; sleep 0.05; done
cd "$D/w"
run() { "${AS[@]}" "${UENV[@]}" MOAT_SERVER="$D/run/api.sock" "$D/moat" run --settings s.json -- /bin/true; }
for _ in $(seq 10); do run; done # warm: the first runs fill caches
server=$(pgrep -u "$U" -f "$D/moat serve" | head -1)
perf record -q -F 4000 -g -p "$server" -o "$D/perf.data" -- sleep 3600 &
PP=$!
sleep 1
for _ in $(seq "$N"); do run; done
kill -INT "$PP"
wait "$PP" || true
# 4000 samples a second: a sample is 0.25 ms of CPU.
perf report -i "$D/perf.data" --no-children --sort comm -n --stdio -g none 2>/dev/null |
	awk -v n="$N" '/^ +[0-9.]+%/ {printf "%-8s %6.2f ms of CPU a run\n", $3, $2 * 0.25 / n}'
echo "--- the top symbols (all processes of the server's tree)"
perf report -i "$D/perf.data" --no-children --sort comm,sym -n --stdio -g none 2>/dev/null | grep -E '^ +[0-9.]+%' | head -30
echo "--- inclusive (each function with what it calls): the Go runtime's monitor thread, the scheduler, GC, the plan"
perf report -i "$D/perf.data" --children --sort sym -n --stdio -g none 2>/dev/null |
	grep -E ' (runtime\.(sysmon|schedule|gcBgMarkWorker|mallocgc)|github\.com/moat-sandbox/moat/linux\.makeFSPlan|github\.com/moat-sandbox/moat/linux\.\(\*launcher\)\.[a-z]+)$' |
	awk -v n="$N" '{printf "%8.2f ms of CPU a run  %s\n", $3 * 0.25 / n, $NF}'
