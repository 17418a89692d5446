#!/usr/bin/env bash
# Interleaved A/B of `moat run -- /bin/true` handed over to `moat serve`
# (MOAT_SERVER), rootless, each binary with a moat serve of its own, beside
# bwrap: issue #12's measure of one change against another.
#
#   sudo BASE=/path/to/old/moat NEW=/path/to/new/moat N=120 bash bench/ab-served.sh
#
# Write both binaries the same way (dist/install-binary.sh): how a binary was
# written changes its start-up (docs/PERFORMANCE.md). The settings are the peer
# comparison's (3 allowed domains, denyRead ~/.ssh, allowWrite .).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
BASE=${BASE:?BASE=/path/to/moat}
NEW=${NEW:-$PWD/bin/moat}
U=${USER_NAME:-moat-ci}
id "$U" >/dev/null 2>&1 || useradd -m "$U"
HOMEDIR=$(getent passwd "$U" | cut -d: -f6)
D=$(mktemp -d /var/tmp/moat-ab-XXXXXX)
chmod 755 "$D"
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
mkdir -p "$D/u" "$D/base" "$D/new"
cat > "$D/u/s.json" <<'J'
{"network":{"allowedDomains":["example.com","*.github.com","registry.npmjs.org"],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}
J
sh dist/install-binary.sh "$BASE" "$D/moat-base"
sh dist/install-binary.sh "$NEW" "$D/moat-new"
chown -R "$U" "$D"
UENV=(env -i HOME="$HOMEDIR" PATH=/usr/bin:/bin MOAT_DAEMON=off)
for v in base new; do
	(cd "$D/u" && exec setpriv --reuid="$U" --regid="$U" --init-groups "${UENV[@]}" "$D/moat-$v" serve --socket "$D/$v/api.sock" 2>"$D/$v.log") &
	PIDS+=($!)
done
sleep 1.5
cd "$D/u"
setpriv --reuid="$U" --regid="$U" --init-groups "${UENV[@]}" python3 "$OLDPWD/bench/interleave.py" -n "${N:-60}" \
	"env MOAT_SERVER=$D/base/api.sock $D/moat-base run --settings s.json -- /bin/true" \
	"env MOAT_SERVER=$D/new/api.sock $D/moat-new run --settings s.json -- /bin/true" \
	"bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind $D/u $D/u --unshare-all /bin/true"
