#!/usr/bin/env bash
# Start-up of `moat run -- /bin/true` with a writable working directory, in
# an empty tree and in two trees of 30,000 files (git repositories, nested
# directories, node_modules): it must not grow with the number of files.
# The search for nested repositories checks one directory entry per
# directory within its depth (3) on a warm start, so the wide tree, with
# 1,000 directories at depth 3, shows what that costs.
#
#   bash bench/startup-tree.sh [MOAT]      (default: bin/moat)
#
# Knobs: RUNS=40 WARMUP=5 FILES=30000 WORK=/var/tmp/moat-bench-tree
#        BASELINE=/path/to/an/older/moat   (measured in the same hyperfine run)
set -euo pipefail
MOAT=${1:-$(cd "$(dirname "$0")/.." && pwd)/bin/moat}
RUNS=${RUNS:-40}
WARMUP=${WARMUP:-5}
FILES=${FILES:-30000}
WORK=${WORK:-/var/tmp/moat-bench-tree}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }

rm -rf "$WORK"
mkdir -p "$WORK/empty" "$WORK/deep" "$WORK/wide"
(cd "$WORK/empty" && git init -q)
# Two trees of 30,000 files each (plus a node_modules the search skips):
#  deep: a usual repository shape, 5 top-level directories, files mostly
#        below the search depth (3);
#  wide: 1,000 directories exactly at depth 3 (the worst case for the
#        search, which checks every directory within its depth).
python3 - "$WORK" "$FILES" <<'PY'
import os, sys
work, total = sys.argv[1], int(sys.argv[2])
def files(d, n, ext):
    os.makedirs(d, exist_ok=True)
    for f in range(n):
        open(os.path.join(d, f"f{f}.{ext}"), "w").write("x\n")
# deep: src/{a..e}/pkg{0..9}/sub{0..9}/leaf{0..4}/ = 5*10*10*5 = 2500 dirs, 6 files each (15,000)
for a in "abcde":
    for p in range(10):
        for q in range(10):
            for r in range(5):
                files(os.path.join(work, "deep", "src", a, f"pkg{p}", f"sub{q}", f"leaf{r}"), (total // 2) // 2500, "go")
# wide: pkg{0..9}/mod{0..9}/dir{0..9} = 1000 dirs at depth 3, 15 files each (15,000)
for a in range(10):
    for b in range(10):
        for c in range(10):
            files(os.path.join(work, "wide", f"pkg{a}", f"mod{b}", f"dir{c}"), (total // 2) // 1000, "go")
for t in ("deep", "wide"):
    for a in range(100):
        files(os.path.join(work, t, "node_modules", f"dep{a}", "lib"), (total // 2) // 100, "js")
PY
for t in deep wide; do (cd "$WORK/$t" && git init -q); done
for t in deep wide; do echo "files in $t: $(find "$WORK/$t" -type f -not -path '*/.git/*' | wc -l), directories within depth 3: $(find "$WORK/$t" -mindepth 0 -maxdepth 3 -type d -not -path '*/.git*' -not -path '*/node_modules*' | wc -l)"; done
S="$WORK/settings.json"
cat > "$S" <<JSON
{"network":{"allowedDomains":[],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}
JSON
# The placeholders moat creates for a run (.claude, .mcp.json, .vscode,
# .git/commondir, .git/modules) cost the same in both trees; create the
# directories once so that both measure only the search and the mounts.
for d in "$WORK/empty" "$WORK/deep" "$WORK/wide"; do mkdir -p "$d/.claude" "$d/.vscode" "$d/.git/modules"; echo '{}' > "$d/.mcp.json"; printf '.\n' > "$d/.git/commondir"; done
base=()
if [ -n "${BASELINE:-}" ]; then
  base=(-n baseline-empty "bash -c 'cd $WORK/empty && exec $BASELINE run --settings $S -- /bin/true'"
        -n baseline-deep "bash -c 'cd $WORK/deep && exec $BASELINE run --settings $S -- /bin/true'"
        -n baseline-wide "bash -c 'cd $WORK/wide && exec $BASELINE run --settings $S -- /bin/true'")
fi
hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$WORK/startup-tree.json" \
  -n empty-tree "bash -c 'cd $WORK/empty && exec $MOAT run --settings $S -- /bin/true'" \
  -n 30k-deep "bash -c 'cd $WORK/deep && exec $MOAT run --settings $S -- /bin/true'" \
  -n 30k-wide "bash -c 'cd $WORK/wide && exec $MOAT run --settings $S -- /bin/true'" \
  "${base[@]}" \
  -n bash-cd-only "bash -c 'cd $WORK/deep && exec /bin/true'"
python3 - "$WORK/startup-tree.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for k, v in r.items():
    print(f"{k:14s} median {v['median']*1000:6.2f} ms  mean {v['mean']*1000:6.2f} ± {v['stddev']*1000:.2f} ms")
PY
