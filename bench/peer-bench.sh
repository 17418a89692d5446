#!/usr/bin/env bash
# peer-bench.sh — measure the sandbox-runtime peer (srt) and raw namespace tools,
# optionally side by side with our own wrapper.
# (A copy of the reference script the project was given; kept here so that
# the repository needs nothing outside it.)
#
# Usage:
#   bench/peer-bench.sh                      # install peers if missing, run everything
#   OURS="path/to/ours run --" bench/peer-bench.sh
#       adds "$OURS /bin/true" to the startup hyperfine run and to the RSS probe
#   OURS_NET="path/to/moat run --settings {SETTINGS} --" bench/peer-bench.sh
#       adds our wrapper to the loopback throughput test; {SETTINGS} is replaced by an
#       srt-format settings file allowing 127.0.0.1:{PORT}; {PORT} is replaced by the
#       port of the local HTTP server. The command inside must reach
#       http://127.0.0.1:{PORT}/ (through our proxy or however ours routes it).
#
# Knobs (environment):
#   RUNS=20 WARMUP=3      hyperfine runs / warmup (startup rows)
#   SRT_VERSION=0.0.78    npm version of @anthropic-ai/sandbox-runtime (0.0.83+ needs node >= 22.12)
#   PEER_DIR=/tmp/peers   where npm installs srt
#   WORK=/tmp/peer-bench  scratch dir for configs, blobs, JSON exports
#   BLOB_MB=100           size of the file served for the throughput test
#   TP_RUNS=7             downloads per throughput row (median reported)
#   SKIP_INSTALL=1        do not touch apt/npm (fail if tools are missing)
#   SKIP_NET=1            skip the proxy throughput/latency section
#   SKIP_WARM=1           skip the warm library-mode per-command measurement
#
# All network traffic of the measurements stays on 127.0.0.1. Only the install
# step talks to the Debian and npm registries, and only when something is missing.
set -euo pipefail

RUNS=${RUNS:-20}
WARMUP=${WARMUP:-3}
SRT_VERSION=${SRT_VERSION:-0.0.78}
PEER_DIR=${PEER_DIR:-/tmp/peers}
WORK=${WORK:-/tmp/peer-bench}
BLOB_MB=${BLOB_MB:-100}
TP_RUNS=${TP_RUNS:-7}
OURS=${OURS:-}
OURS_NET=${OURS_NET:-}

log() { printf '[peer-bench] %s\n' "$*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if have sudo; then SUDO="sudo"; fi
fi

# ---------------------------------------------------------------- install
install_peers() {
  local missing=()
  for t in bwrap:bubblewrap socat:socat hyperfine:hyperfine rg:ripgrep curl:curl \
           python3:python3 node:nodejs npm:npm unshare:util-linux; do
    have "${t%%:*}" || missing+=("${t#*:}")
  done
  [ -x /usr/bin/time ] || missing+=("time")
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "${SKIP_INSTALL:-0}" = 1 ]; then
      log "missing tools (${missing[*]}) and SKIP_INSTALL=1"; exit 1
    fi
    log "apt-get install ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi

  local want="$SRT_VERSION" have_ver=""
  if [ -f "$PEER_DIR/node_modules/@anthropic-ai/sandbox-runtime/package.json" ]; then
    have_ver=$(node -p "require('$PEER_DIR/node_modules/@anthropic-ai/sandbox-runtime/package.json').version")
  fi
  if [ "$want" = "latest" ] || [ "$have_ver" != "$want" ]; then
    if [ "${SKIP_INSTALL:-0}" = 1 ]; then
      [ -n "$have_ver" ] || { log "srt not installed in $PEER_DIR and SKIP_INSTALL=1"; exit 1; }
      log "srt $have_ver installed (wanted $want); SKIP_INSTALL=1 so keeping it"
    else
      log "npm install @anthropic-ai/sandbox-runtime@$want into $PEER_DIR"
      mkdir -p "$PEER_DIR"
      [ -f "$PEER_DIR/package.json" ] || echo '{"name":"peers","private":true}' > "$PEER_DIR/package.json"
      (cd "$PEER_DIR" && npm install --no-audit --no-fund --loglevel=error \
        "@anthropic-ai/sandbox-runtime@$want" >/dev/null 2>&1)
    fi
  fi
}
install_peers

SRT="$PEER_DIR/node_modules/.bin/srt"
SRT_DIST="$PEER_DIR/node_modules/@anthropic-ai/sandbox-runtime/dist/index.js"
[ -x "$SRT" ] || { log "srt not found at $SRT"; exit 1; }
SRT_VER=$("$SRT" --version 2>/dev/null || echo '?')

mkdir -p "$WORK/cwd" "$WORK/www"
cd "$WORK/cwd"
# srt's CLI leaves its mux backend socket (/tmp/srt-mux-<pid>-0.sock) behind on
# every run; remember what was there so only this bench's leftovers are tidied.
ls /tmp/srt-mux-*.sock 2>/dev/null | sort > "$WORK/mux-before.txt" || true

# ---------------------------------------------------------------- configs
cat > "$WORK/srt-none.json" <<'EOF'
{"network":{"allowedDomains":[],"deniedDomains":[]},
 "filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}
EOF
cat > "$WORK/srt-3dom.json" <<'EOF'
{"network":{"allowedDomains":["example.com","*.github.com","registry.npmjs.org"],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}
EOF

# ---------------------------------------------------------------- helpers
RESULTS="$WORK/results.tsv"
: > "$RESULTS"
row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$RESULTS"; }

hf_medians() {  # $1 = hyperfine JSON export; prints "name<TAB>median_ms" lines
  python3 - "$1" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['command']}\t{r['median']*1000:.2f}")
EOF
}

median() { sort -n | awk '{a[NR]=$1} END{if(NR==0){print "NA"} else {print a[int((NR+1)/2)]}}'; }

# ---------------------------------------------------------------- 1. startup
log "startup latency: hyperfine runs=$RUNS warmup=$WARMUP"
HF_ARGS=(-N --warmup "$WARMUP" --runs "$RUNS" --export-json "$WORK/startup.json"
  -n bare '/bin/true'
  -n bwrap 'bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all /bin/true'
  -n unshare 'unshare --user --map-root-user --mount --net --pid --fork /bin/true'
  -n srt-none "$SRT --settings $WORK/srt-none.json /bin/true"
  -n srt-3dom-denyssh "$SRT --settings $WORK/srt-3dom.json /bin/true")
if [ -n "$OURS" ]; then HF_ARGS+=(-n ours "$OURS /bin/true"); fi
hyperfine "${HF_ARGS[@]}" >/dev/null 2>"$WORK/hyperfine.err" || { cat "$WORK/hyperfine.err" >&2; exit 1; }
while IFS=$'\t' read -r name ms; do
  row "startup/$name" "$ms" "ms (median)" "end-to-end /bin/true, cold CLI"
done < <(hf_medians "$WORK/startup.json")

# ---------------------------------------------------------------- 2. memory
log "peak RSS (/usr/bin/time -v, largest process of the tree)"
peak_rss() {  # args: command...; prints median max-RSS in kB over 5 runs
  for _ in 1 2 3 4 5; do
    /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1
  done | median
}
row "rss/srt-none" "$(peak_rss "$SRT" --settings "$WORK/srt-none.json" /bin/true)" "kB maxrss" "node CLI dominates"
row "rss/srt-3dom-denyssh" "$(peak_rss "$SRT" --settings "$WORK/srt-3dom.json" /bin/true)" "kB maxrss" ""
row "rss/bwrap" "$(peak_rss bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all /bin/true)" "kB maxrss" ""
if [ -n "$OURS" ]; then
  # shellcheck disable=SC2086
  row "rss/ours" "$(peak_rss $OURS /bin/true)" "kB maxrss" ""
fi

cat > "$WORK/treerss.py" <<'EOF'
# Sum RSS/PSS over the process tree rooted at argv[1].
import os, sys
root = int(sys.argv[1]); kids = {}
for p in os.listdir('/proc'):
    if not p.isdigit(): continue
    try:
        ppid = int(open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(p))
    except Exception: pass
tree, st = [], [root]
while st:
    x = st.pop(); tree.append(x); st += kids.get(x, [])
rss = pss = 0
for p in tree:
    try:
        for l in open(f'/proc/{p}/smaps_rollup'):
            if l.startswith('Rss:'): rss += int(l.split()[1])
            if l.startswith('Pss:'): pss += int(l.split()[1])
    except Exception: pass
print(f"{len(tree)} {rss} {pss}")
EOF
tree_rss() {  # args: command... (must accept a trailing "sleep 3")
  "$@" sleep 3 & local pid=$!
  sleep 1.5
  python3 "$WORK/treerss.py" "$pid"
  wait "$pid" || true
}
read -r n r p < <(tree_rss "$SRT" --settings "$WORK/srt-3dom.json" --)
row "tree/srt-3dom-denyssh" "$p" "kB PSS (sum)" "$n processes, RSS sum ${r} kB, during 'sleep 3'"
if [ -n "$OURS" ]; then
  # shellcheck disable=SC2086
  read -r n r p < <(tree_rss $OURS)
  row "tree/ours" "$p" "kB PSS (sum)" "$n processes, RSS sum ${r} kB"
fi

# ---------------------------------------------------------------- 3. warm library mode
if [ "${SKIP_WARM:-0}" != 1 ]; then
  log "warm library mode (proxy up; per command = wrap + spawn + cleanup)"
  cat > "$WORK/warm.mjs" <<'EOF'
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
const { SandboxManager } = await import(process.env.SRT_DIST);
const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const runs = Number(process.argv[3] || 30);
await SandboxManager.initialize(cfg);
const med = a => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const w = [], e = [], t = [];
for (let i = 0; i < runs + 3; i++) {
  const t0 = process.hrtime.bigint();
  const cmd = await SandboxManager.wrapWithSandbox('/bin/true');
  const t1 = process.hrtime.bigint();
  const r = spawnSync(cmd, { shell: true, stdio: 'ignore' });
  const t2 = process.hrtime.bigint();
  SandboxManager.cleanupAfterCommand();
  if (r.status !== 0) { console.error('wrapped command failed', r.status); process.exit(2); }
  if (i >= 3) { w.push(Number(t1 - t0) / 1e6); e.push(Number(t2 - t1) / 1e6); t.push(Number(t2 - t0) / 1e6); }
}
console.log(`${med(w).toFixed(2)} ${med(e).toFixed(2)} ${med(t).toFixed(2)}`);
await SandboxManager.reset();
process.exit(0);
EOF
  for cfg in none 3dom; do
    read -r w e t < <(SRT_DIST="$SRT_DIST" node "$WORK/warm.mjs" "$WORK/srt-$cfg.json" "$RUNS")
    row "warm/srt-$cfg" "$t" "ms (median)" "library: wrap ${w} ms + exec ${e} ms"
  done
fi

# ---------------------------------------------------------------- 4. proxy throughput
HTTPD_PID=""
cleanup() {
  if [ -n "$HTTPD_PID" ]; then kill "$HTTPD_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

if [ "${SKIP_NET:-0}" != 1 ]; then
  log "loopback throughput: ${BLOB_MB} MB via python3 http.server"
  BLOB="$WORK/www/blob${BLOB_MB}m"
  [ -f "$BLOB" ] && [ "$(stat -c %s "$BLOB")" -eq $((BLOB_MB * 1048576)) ] \
    || head -c $((BLOB_MB * 1048576)) /dev/urandom > "$BLOB"
  head -c 1024 /dev/urandom > "$WORK/www/blob1k"
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  (cd "$WORK/www" && exec python3 -m http.server "$PORT" --bind 127.0.0.1 >"$WORK/httpd.log" 2>&1) &
  HTTPD_PID=$!
  for _ in $(seq 50); do curl -s --noproxy '*' -o /dev/null "http://127.0.0.1:$PORT/blob1k" && break; sleep 0.1; done

  cat > "$WORK/srt-loop.json" <<EOF
{"network":{"allowedDomains":["127.0.0.1:$PORT","localhost"],"deniedDomains":[]},
 "filesystem":{"denyRead":[],"allowWrite":["."],"denyWrite":[]}}
EOF
  # tp.sh MODE N: one number per run (bytes/s for downloads, seconds for small-*)
  cat > "$WORK/tp.sh" <<EOF
#!/bin/bash
mode=\$1; n=\${2:-5}; url=http://127.0.0.1:$PORT/blob${BLOB_MB}m; small=http://127.0.0.1:$PORT/blob1k
np() { env -u NO_PROXY -u no_proxy "\$@"; }
for i in \$(seq \$n); do
 case \$mode in
  direct)  curl -sS --noproxy '*' -o /dev/null -w '%{speed_download}\n' \$url;;
  plain)   curl -sS -o /dev/null -w '%{speed_download}\n' \$url;;
  http)    np curl -sS -o /dev/null -w '%{speed_download}\n' \$url;;
  connect) np curl -sS -p -o /dev/null -w '%{speed_download}\n' \$url;;
  socks)   np curl -sS -x "\$FTP_PROXY" -o /dev/null -w '%{speed_download}\n' \$url;;
  small-direct)  curl -sS --noproxy '*' -o /dev/null -w '%{time_total}\n' \$small;;
  small-plain)   curl -sS -o /dev/null -w '%{time_total}\n' \$small;;
  small-http)    np curl -sS -o /dev/null -w '%{time_total}\n' \$small;;
  small-connect) np curl -sS -p -o /dev/null -w '%{time_total}\n' \$small;;
 esac
done
EOF
  chmod +x "$WORK/tp.sh"
  mbps() { awk '{printf "%.1f", $1/1e6}'; }
  d=$("$WORK/tp.sh" direct "$TP_RUNS" | median)
  row "net/direct" "$(echo "$d" | mbps)" "MB/s (median)" "curl on host, no sandbox"
  for m in http connect socks; do
    v=$("$SRT" --settings "$WORK/srt-loop.json" -- "$WORK/tp.sh" "$m" "$TP_RUNS" 2>/dev/null | median || true)
    note=$(awk -v a="$d" -v b="$v" 'BEGIN{ if (b>0) printf "%.1fx slower than direct", a/b; else print "failed" }')
    row "net/srt-$m" "$(echo "${v:-0}" | mbps)" "MB/s (median)" "$note"
  done
  # default srt env keeps 127.0.0.1 in NO_PROXY, so a plain curl fails inside:
  if "$SRT" --settings "$WORK/srt-loop.json" -- curl -sS -m 5 -o /dev/null "http://127.0.0.1:$PORT/blob1k" 2>/dev/null; then
    row "net/srt-default-env" "ok" "-" "loopback reachable with inherited NO_PROXY"
  else
    row "net/srt-default-env" "fail" "-" "NO_PROXY has 127.0.0.1 -> direct connect in empty netns fails"
  fi
  usec() { awk '{ if ($1 == "NA") print "NA"; else printf "%.0f", $1 * 1e6 }'; }
  row "lat/direct" "$("$WORK/tp.sh" small-direct 30 | median | usec)" "us/request" "curl time_total, 1 KiB GET, new connection each"
  for m in http connect; do
    row "lat/srt-$m" "$("$SRT" --settings "$WORK/srt-loop.json" -- "$WORK/tp.sh" "small-$m" 30 2>/dev/null | median | usec)" "us/request" "same, via srt proxy chain"
  done
  if [ -n "$OURS_NET" ]; then
    ON=${OURS_NET//\{PORT\}/$PORT}; ON=${ON//\{SETTINGS\}/$WORK/srt-loop.json}
    # shellcheck disable=SC2086
    v=$($ON "$WORK/tp.sh" plain "$TP_RUNS" 2>/dev/null | median || true)
    note=$(awk -v a="$d" -v b="$v" 'BEGIN{ if (b>0) printf "%.1fx slower than direct", a/b; else print "failed" }')
    row "net/ours" "$(echo "${v:-0}" | mbps)" "MB/s (median)" "$note"
    # shellcheck disable=SC2086
    row "lat/ours" "$($ON "$WORK/tp.sh" small-plain 30 2>/dev/null | median | usec)" "us/request" "same, via ours"
  fi
fi

# ---------------------------------------------------------------- report
printf '\npeer-bench  srt %s  bwrap %s  kernel %s  cpus %s\n' \
  "$SRT_VER" "$(bwrap --version | awk '{print $2}')" "$(uname -r)" "$(nproc)"
printf '%-26s %14s  %-16s %s\n' metric value unit notes
printf '%-26s %14s  %-16s %s\n' ------ ----- ---- -----
while IFS=$'\t' read -r m v u n; do
  printf '%-26s %14s  %-16s %s\n' "$m" "$v" "$u" "$n"
done < "$RESULTS"
printf '\nraw: %s (tsv), %s (hyperfine json)\n' "$RESULTS" "$WORK/startup.json"

# Tidy the mux sockets this bench's srt runs left behind (owner process gone).
leaked=0
while read -r s; do
  [ -e "$s" ] || continue
  pid=${s#/tmp/srt-mux-}; pid=${pid%%-*}
  if ! kill -0 "$pid" 2>/dev/null; then rm -f "$s"; leaked=$((leaked + 1)); fi
done < <(ls /tmp/srt-mux-*.sock 2>/dev/null | sort | comm -13 "$WORK/mux-before.txt" -)
printf 'srt left %s stale /tmp/srt-mux-*.sock files during this bench (removed)\n' "$leaked"
