#!/usr/bin/env bash
# perf record -a over N handed-over `moat run -- /bin/true` (rootless, the
# peer settings), then the samples by process kind: the server (its pid),
# the clients (moat, another pid), stage 2 (exe), the command (true), the
# loop's shell (bash: its forks and the clients' execs). Where a change
# moves CPU between them (docs/PERFORMANCE.md, the spare stage 2).
#
#   sudo N=150 bash bench/perf-served.sh [/path/to/moat]
#
# SYMBOLS=1: instead, perf record -g on the server alone (and what it
# starts: stage 2, the commands), after 10 warm runs, then the CPU a run
# by process and the top functions. Give it a binary with its symbols
# (make build strips them):
#
#   CGO_ENABLED=1 go build -trimpath -tags 'netgo osusergo' \
#     -ldflags '-linkmode external -extldflags "-static"' -o /var/tmp/moat-sym ./cmd/moat
#   sudo SYMBOLS=1 N=200 bash bench/perf-served.sh /var/tmp/moat-sym
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 2; }
BIN=${1:-$PWD/bin/moat}
N=${N:-150}
U=${USER_NAME:-moat-ci}
id "$U" >/dev/null 2>&1 || useradd -m "$U"
D=$(mktemp -d /var/tmp/moat-perf-XXXXXX)
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
if [ "${SYMBOLS:-}" = 1 ]; then
	cd "$D/w"
	run() { "${AS[@]}" "${UENV[@]}" MOAT_SERVER="$D/run/api.sock" "$D/moat" run --settings s.json -- /bin/true; }
	for _ in $(seq 10); do run; done # the first runs fill caches
	server=$(pgrep -u "$U" -f "$D/moat serve" | head -1)
	perf record -q -F 4000 -g -p "$server" -o "$D/perf.data" -- sleep 3600 &
	PP=$!
	sleep 1
	for _ in $(seq "$N"); do run; done
	kill -INT "$PP"
	wait "$PP" || true
	# 4000 samples a second: a sample is 0.25 ms of CPU.
	perf report -i "$D/perf.data" --no-children --sort comm -n --stdio -g none 2>/dev/null |
		awk -v n="$N" '/^ +[0-9.]+%/ {printf "%8.2f ms of CPU a run  %s\n", $2 * 0.25 / n, $3}'
	echo "--- the top functions (self)"
	perf report -i "$D/perf.data" --no-children --sort comm,sym -n --stdio -g none 2>/dev/null | grep -E '^ +[0-9.]+%' | head -30 || true
	echo "--- inclusive: the Go runtime's monitor thread and scheduler, the plan"
	total=$(perf report -i "$D/perf.data" --no-children --sort comm -n --stdio -g none 2>/dev/null | awk '/^ +[0-9.]+%/ {t += $2} END {print t}')
	perf report -i "$D/perf.data" --children --sort sym --stdio -g none 2>/dev/null |
		grep -E ' (runtime\.(sysmon|schedule|gcBgMarkWorker)|github\.com/moat-sandbox/moat/linux\.makeFSPlan)$' |
		awk -v n="$N" -v t="$total" '{sub("%", "", $1); printf "%8.2f ms of CPU a run  %s\n", $1 / 100 * t * 0.25 / n, $NF}' || true
	exit 0
fi
cat > "$D/loop.sh" <<LOOP
cd "$D/w"
for i in \$(seq $N); do MOAT_SERVER=$D/run/api.sock $D/moat run --settings s.json -- /bin/true; done
LOOP
chmod 644 "$D/loop.sh"
perf record -q -a -F 4000 -o "$D/perf.data" -- "${AS[@]}" "${UENV[@]}" bash "$D/loop.sh"
server=$(pgrep -u "$U" -f "$D/moat serve" | head -1)
# 4000 samples a second on each CPU: a sample is 0.25 ms of CPU.
perf script -i "$D/perf.data" -F comm,pid 2>/dev/null | awk -v s="$server" -v n="$N" '
	$1 == "swapper" { next }
	{ k = ($1 == "moat" && $2 == s) ? "server" : ($1 == "moat" ? "clients" : $1); c[k]++ }
	END { for (k in c) printf "%8.2f ms a run  %s\n", c[k] * 0.25 / n, k }' | sort -rn | head -12
