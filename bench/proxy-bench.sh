#!/usr/bin/env bash
# proxy-bench.sh: throughput, per-connection latency and memory of moat's
# proxy (netproxy), run standalone on loopback, against a direct download.
#
#   bench/proxy-bench.sh [SIZE_BYTES] [ROUNDS] [LATENCY_RUNS]
#
# Defaults: 1 GiB, 5 rounds (interleaved, so background load hits every
# path alike), 200 small requests per path for latency. Needs go and curl.
# Prints medians; docs/PERFORMANCE.md records what it printed.
set -euo pipefail

SIZE=${1:-1073741824}
ROUNDS=${2:-5}
LAT_RUNS=${3:-200}
cd "$(dirname "$0")/.."

command -v curl >/dev/null || { echo "proxy-bench: curl is required" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/moat-netproxy" ./netproxy/cmd/moat-netproxy

start() { # start NAME ARGS...: runs the helper, waits for its address
	local name=$1
	shift
	"$tmp/moat-netproxy" "$@" >"$tmp/$name.addr" 2>"$tmp/$name.err" &
	pids+=($!)
	eval "${name}_pid=$!"
	for _ in $(seq 100); do
		[ -s "$tmp/$name.addr" ] && break
		sleep 0.05
	done
	[ -s "$tmp/$name.addr" ] || { cat "$tmp/$name.err" >&2; exit 1; }
}

start origin origin -listen 127.0.0.1:0
ORIGIN=$(head -1 "$tmp/origin.addr")
start proxy proxy -listen 127.0.0.1:0 -allow "$ORIGIN"
PROXY=$(head -1 "$tmp/proxy.addr")

args() { # curl arguments for a path
	case $1 in
	direct) ;;
	connect) echo "-p -x http://$PROXY" ;;
	http) echo "-x http://$PROXY" ;;
	socks) echo "--socks5-hostname $PROXY" ;;
	esac
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

paths="direct connect http socks"
echo "origin $ORIGIN, proxy $PROXY, $SIZE bytes x $ROUNDS rounds, $(nproc) cores, $(uname -r)"

# Throughput: one new connection per download, rounds interleaved.
for r in $(seq "$ROUNDS"); do
	for p in $paths; do
		# shellcheck disable=SC2046
		curl -sS $(args $p) -o /dev/null -w '%{speed_download}\n' "http://$ORIGIN/?size=$SIZE" >>"$tmp/tp.$p"
	done
done
direct_tp=$(median <"$tmp/tp.direct")
echo
echo "throughput (median of $ROUNDS, GB/s; ratio to direct)"
for p in $paths; do
	m=$(median <"$tmp/tp.$p")
	awk -v p="$p" -v m="$m" -v d="$direct_tp" -v all="$(sort -g "$tmp/tp.$p" | awk '{printf "%.2f ", $1/1e9}')" \
		'BEGIN {printf "  %-8s %5.2f  x%.2f   (runs: %s)\n", p, m/1e9, m/d, all}'
done

# Latency: a new connection and a 100-byte answer per run; curl's own
# time_total (its process start is not counted).
for p in $paths; do
	for _ in $(seq "$LAT_RUNS"); do
		# shellcheck disable=SC2046
		curl -sS $(args $p) -o /dev/null -w '%{time_total}\n' "http://$ORIGIN/?size=100"
	done >"$tmp/lat.$p"
done
direct_lat=$(median <"$tmp/lat.direct")
echo
echo "new connection + 100-byte answer (median of $LAT_RUNS, ms; added over direct)"
for p in $paths; do
	m=$(median <"$tmp/lat.$p")
	awk -v p="$p" -v m="$m" -v d="$direct_lat" 'BEGIN {printf "  %-8s %6.3f  +%.3f\n", p, m*1000, (m-d)*1000}'
done

# The same with a Go client (no curl start-up or proxy handling in the
# figure): 500 sequential new connections per path.
echo
echo "new connection + 100-byte answer, Go client (median of 500, ms; added over direct)"
for p in $paths; do
	m=$("$tmp/moat-netproxy" latency -proxy "$PROXY" -origin "$ORIGIN" -method "$p" -n 500)
	[ "$p" = direct ] && gdirect=$m
	awk -v p="$p" -v m="$m" -v d="$gdirect" 'BEGIN {printf "  %-8s %6.3f  +%.3f\n", p, m, m-d}'
done

# Memory: the proxy's RSS before, while 1,000 tunnels are open, and after.
rss() { awk '/^VmRSS/ {print $2}' "/proc/$proxy_pid/status"; }
echo
echo "proxy memory with 1,000 concurrent CONNECT tunnels (RSS, KiB)"
before=$(rss)
"$tmp/moat-netproxy" load -proxy "$PROXY" -origin "$ORIGIN" -n 1000 -hold 3s >"$tmp/load.out" &
load_pid=$!
sleep 2
during=$(rss)
wait $load_pid
sleep 1
after=$(rss)
"$tmp/moat-netproxy" load -proxy "$PROXY" -origin "$ORIGIN" -n 1000 -hold 1s >>"$tmp/load.out"
sleep 1
again=$(rss)
echo "  before $before, during $during, after $after, after a second round $again"
echo "  ($(tr '\n' ';' <"$tmp/load.out"))"
