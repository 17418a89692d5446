#!/usr/bin/env bash
# All of moat's benchmarks, in one run:
#  1. bench/peer-bench.sh: moat next to bubblewrap and the npm
#     sandbox runtime (cold /bin/true with a full filesystem policy, memory,
#     loopback download through each proxy);
#  2. bench/startup-tree.sh: start-up in an empty tree and in 30,000 files;
#  3. bench/proxy-bench.sh: moat's proxy against a direct download;
#  4. the Go benchmarks of the decision pipeline.
# Figures and commands go to docs/PERFORMANCE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
MOAT=$PWD/bin/moat
[ -x "$MOAT" ] || make build
PEER=${PEER_BENCH:-$PWD/bench/peer-bench.sh}
WORK=${PEER_WORK:-/tmp/peer-bench}
mkdir -p "$WORK"
cat > "$WORK/moat-3dom.json" <<JSON
{"network":{"allowedDomains":["example.com","*.github.com","registry.npmjs.org"],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}
JSON
if [ -f "$PEER" ]; then
  echo "== 1. peers ($PEER)"
  OURS="$MOAT run --settings $WORK/moat-3dom.json --" OURS_NET="$MOAT run --settings {SETTINGS} --" WORK=$WORK bash "$PEER"
else
  echo "== 1. peers: $PEER not found (set PEER_BENCH); skipped"
fi
echo "== 2. start-up and tree size"
WORK=/var/tmp/moat-bench-tree bash bench/startup-tree.sh "$MOAT"
echo "== 3. proxy"
bash bench/proxy-bench.sh
echo "== 4. decision pipeline"
go test -run '^$' -bench 'BenchmarkDecide$|BenchmarkHostile' -benchtime 3s -cpu 1 ./permissions/
go test -run '^$' -bench . -benchtime 2s -cpu 1 ./validators/
