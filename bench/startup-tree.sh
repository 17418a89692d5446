#!/usr/bin/env bash
# Start-up of `moat run -- /bin/true` with a writable working directory, in
# an empty tree and in a tree of 30,000 files (git repository, nested
# directories, node_modules): it must not grow with the size of the tree.
#
#   bash bench/startup-tree.sh [MOAT]      (default: bin/moat)
#
# Knobs: RUNS=40 WARMUP=5 FILES=30000 WORK=/var/tmp/moat-bench-tree
set -euo pipefail
MOAT=${1:-$(cd "$(dirname "$0")/.." && pwd)/bin/moat}
RUNS=${RUNS:-40}
WARMUP=${WARMUP:-5}
FILES=${FILES:-30000}
WORK=${WORK:-/var/tmp/moat-bench-tree}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }

rm -rf "$WORK"
mkdir -p "$WORK/empty" "$WORK/big"
(cd "$WORK/empty" && git init -q)
# 30,000 files: 10 top-level packages x 10 modules x 10 dirs x 30 files,
# plus a node_modules of the same shape that the search skips.
python3 - "$WORK/big" "$FILES" <<'PY'
import os, sys
root, total = sys.argv[1], int(sys.argv[2])
n = 0
for a in range(10):
    for b in range(10):
        for c in range(10):
            d = os.path.join(root, f"pkg{a}", f"mod{b}", f"dir{c}")
            os.makedirs(d, exist_ok=True)
            for f in range(total // 1000 // 2):
                open(os.path.join(d, f"file{f}.go"), "w").write("package x\n")
                n += 1
nm = os.path.join(root, "node_modules")
for a in range(100):
    d = os.path.join(nm, f"dep{a}", "lib")
    os.makedirs(d, exist_ok=True)
    for f in range((total - n) // 100):
        open(os.path.join(d, f"f{f}.js"), "w").write("x\n")
PY
(cd "$WORK/big" && git init -q)
echo "files in the big tree: $(find "$WORK/big" -type f -not -path '*/.git/*' | wc -l)"
S="$WORK/settings.json"
cat > "$S" <<JSON
{"network":{"allowedDomains":[],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}
JSON
# The placeholders moat creates for a run (.claude, .mcp.json, .vscode,
# .git/commondir, .git/modules) cost the same in both trees; create the
# directories once so that both measure only the search and the mounts.
for d in "$WORK/empty" "$WORK/big"; do mkdir -p "$d/.claude" "$d/.vscode" "$d/.git/modules"; echo '{}' > "$d/.mcp.json"; done
hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$WORK/startup-tree.json" \
  -n empty-tree "bash -c 'cd $WORK/empty && exec $MOAT run --settings $S -- /bin/true'" \
  -n 30k-files "bash -c 'cd $WORK/big && exec $MOAT run --settings $S -- /bin/true'" \
  -n bash-cd-only "bash -c 'cd $WORK/big && exec /bin/true'"
python3 - "$WORK/startup-tree.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for k, v in r.items():
    print(f"{k:14s} median {v['median']*1000:6.2f} ms  mean {v['mean']*1000:6.2f} ± {v['stddev']*1000:.2f} ms")
PY
