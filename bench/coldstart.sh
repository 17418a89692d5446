#!/usr/bin/env bash
# Cold start of `moat run -- /bin/true` beside bubblewrap, in one hyperfine
# run per user (issue #12's measure): as root (moat with its eBPF layer and
# cgroup limits), and as an unprivileged user: moat rootless, moat through a
# moatd this script starts (the same binary as root), and bwrap; for both
# users also moat run handed to a moat serve of that user (MOAT_SERVER).
#
#   sudo bash bench/coldstart.sh            # RUNS=40 USER_NAME=moat-ci by default
#   sudo BASELINE=/path/to/older/moat bash bench/coldstart.sh
#                                           # adds that binary's cold start (root,
#                                           # rootless, and through a moatd of its own)
#                                           # to the same hyperfine runs
#
# Needs root (it starts moatd and switches to the user with setpriv), hyperfine
# and bwrap (make bench-deps installs them). The user is created if missing. The
# settings are the peer comparison's: 3 allowed domains, denyRead ~/.ssh,
# allowWrite . (a writable working directory).
set -euo pipefail
cd "$(dirname "$0")/.."
MOAT=$PWD/bin/moat
[ -x "$MOAT" ] || make build
RUNS=${RUNS:-40}
U=${USER_NAME:-moat-ci}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
for t in hyperfine bwrap setpriv; do command -v "$t" >/dev/null || { echo "needs $t (make bench-deps)" >&2; exit 2; }; done
id "$U" >/dev/null 2>&1 || useradd -m "$U"
B=$(mktemp -d /var/tmp/moat-coldstart-XXXXXX)
SPIDS=()
DPIDS=()
trap 'kill "${DPIDS[@]}" "${SPIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$B"' EXIT
chmod 755 "$B"
# Both binaries are written the same way (one write, dist/install-binary.sh):
# how a binary's file was written changes its start by 5-10 ms here (its
# page-cache folios, docs/PERFORMANCE.md), which would decide an A/B alone.
sh dist/install-binary.sh "$MOAT" "$B/moat"
ROOTBASE=() USERBASE=() DAEMONBASE=()
if [ -n "${BASELINE:-}" ]; then
  sh dist/install-binary.sh "$BASELINE" "$B/moat-baseline"
  ROOTBASE=(-n "baseline moat (root)" "$B/moat-baseline run --settings $B/s.json -- /bin/true")
  USERBASE=(-n "baseline moat rootless" "env MOAT_DAEMON=off $B/moat-baseline run --settings $B/s.json -- /bin/true")
fi
cat > "$B/s.json" <<JSON
{"network":{"allowedDomains":["example.com","*.github.com","registry.npmjs.org"],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}
JSON
chmod 644 "$B/s.json"
mkdir -p "$B/root" "$B/user" "$B/run"
chown "$U" "$B/user"
"$B/moat" daemon --socket "$B/run/moatd.sock" --group "" --gate off --state-dir "$B/state" --users-dir "$B/users.d" 2>"$B/moatd.log" &
DPIDS+=($!)
if [ -n "${BASELINE:-}" ]; then
  "$B/moat-baseline" daemon --socket "$B/run/moatd-baseline.sock" --group "" --gate off --state-dir "$B/state-baseline" \
    --users-dir "$B/users.d" 2>"$B/moatd-baseline.log" &
  DPIDS+=($!)
  DAEMONBASE=(-n "baseline moat through its moatd" "env MOAT_DAEMON=required MOAT_DAEMON_SOCKET=$B/run/moatd-baseline.sock $B/moat-baseline run --write . -- /bin/true")
fi
for _ in $(seq 100); do [ -S "$B/run/moatd.sock" ] && { [ -z "${BASELINE:-}" ] || [ -S "$B/run/moatd-baseline.sock" ]; } && break; sleep 0.05; done
chmod 666 "$B/run/moatd.sock"
[ -z "${BASELINE:-}" ] || chmod 666 "$B/run/moatd-baseline.sock"
BWRAP='bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind DIR DIR --unshare-all /bin/true'
# moat run handed to a moat serve of the same user (MOAT_SERVER), started
# in the same environment as the runs (the server takes only runs whose
# process state is its own: docs/API.md).
UENV=(env -i HOME="$(getent passwd "$U" | cut -d: -f6)" PATH=/usr/bin:/bin MOAT_DAEMON_SOCKET="$B/run/moatd.sock")
(cd "$B/root" && exec env MOAT_DAEMON=off "$B/moat" serve --socket "$B/run/root-api.sock" 2>"$B/serve-root.log") &
SPIDS+=($!)
mkdir -p "$B/urun" && chown "$U" "$B/urun" && chmod 700 "$B/urun"
(cd "$B/user" && exec setpriv --reuid="$U" --regid="$U" --init-groups "${UENV[@]}" MOAT_DAEMON=off \
  "$B/moat" serve --socket "$B/urun/user-api.sock" 2>"$B/serve-user.log") &
SPIDS+=($!)
for _ in $(seq 200); do [ -S "$B/run/root-api.sock" ] && [ -S "$B/urun/user-api.sock" ] && break; sleep 0.05; done
# A run that is not handed over says so on stderr: then the figure would be
# the in-process run's, under the wrong name.
for who in root user; do
  if [ $who = root ]; then
    out=$(cd "$B/root" && env MOAT_DAEMON=off MOAT_SERVER="$B/run/root-api.sock" "$B/moat" run --settings "$B/s.json" -- /bin/true 2>&1 </dev/null)
  else
    out=$(cd "$B/user" && setpriv --reuid="$U" --regid="$U" --init-groups "${UENV[@]}" MOAT_DAEMON=off MOAT_SERVER="$B/urun/user-api.sock" \
      "$B/moat" run --settings "$B/s.json" -- /bin/true 2>&1 </dev/null)
  fi
  if [ -n "$out" ]; then
    echo "moat run was not handed to the $who's moat serve: $out" >&2
    cat "$B/serve-$who.log" >&2
    exit 1
  fi
done

echo "== as root ($(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
(cd "$B/root" && hyperfine -N --warmup 5 --runs "$RUNS" \
  -n "moat (root: eBPF layer, cgroup limits)" "$B/moat run --settings $B/s.json -- /bin/true" \
  -n "moat handed to moat serve (MOAT_SERVER)" "env MOAT_DAEMON=off MOAT_SERVER=$B/run/root-api.sock $B/moat run --settings $B/s.json -- /bin/true" \
  "${ROOTBASE[@]}" -n "bwrap" "${BWRAP//DIR/$B/root}")

echo "== as $U"
(cd "$B/user" && setpriv --reuid="$U" --regid="$U" --init-groups "${UENV[@]}" hyperfine -N --warmup 5 --runs "$RUNS" \
  -n "moat rootless" "env MOAT_DAEMON=off $B/moat run --settings $B/s.json -- /bin/true" "${USERBASE[@]}" \
  -n "moat rootless handed to moat serve (MOAT_SERVER)" "env MOAT_DAEMON=off MOAT_SERVER=$B/urun/user-api.sock $B/moat run --settings $B/s.json -- /bin/true" \
  -n "moat through moatd (eBPF layer, cgroup limits)" "env MOAT_DAEMON=required $B/moat run --write . -- /bin/true" \
  "${DAEMONBASE[@]}" -n "bwrap" "${BWRAP//DIR/$B/user}")
