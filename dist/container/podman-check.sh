#!/usr/bin/env bash
# moat in a real container runtime: podman (with runc), on this machine.
#
# The registries that Containerfile pulls from are not reachable from CI's
# machines, so this builds the smallest image that runs moat instead: a
# static busybox and bin/moat, imported into podman. It then runs moat
# doctor and a sandboxed command as a non-root user in the tiers of
# docs/CONTAINERS.md and checks the tier each gets:
#
#   podman defaults (seccomp allows user namespaces, /proc masked)
#       -> moat run refuses; --best-effort gets host-proc
#   --security-opt unmask=ALL (the /proc masks off)
#       -> full
#   --security-opt seccomp=<Docker-like profile refusing user namespaces>
#       -> no-namespace with --best-effort
#
# Usage: bash dist/container/podman-check.sh   (as root; make build first)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x bin/moat ] || { echo "podman-check: build moat first (make build)"; exit 1; }
need=()
for p in podman runc busybox-static; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d /var/tmp/moat-podman-XXXXXX)
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root"/{bin,usr/local/bin,etc,tmp,home/agent,proc,sys,dev}
cp /bin/busybox "$root/bin/"
for c in sh true ls cat id echo env mkdir; do ln -s busybox "$root/bin/$c"; done
cp bin/moat "$root/usr/local/bin/moat"
printf 'root:x:0:0:root:/root:/bin/sh\nagent:x:10001:10001::/home/agent:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nagent:x:10001:\n' >"$root/etc/group"
chown 10001:10001 "$root/home/agent"
chmod 1777 "$root/tmp"
tar -C "$root" -cf "$work/rootfs.tar" .
image=localhost/moat-podman-check
podman import -q "$work/rootfs.tar" "$image" >/dev/null

# This machine kind: rlimits cannot be raised in its container, and its
# cgroups are hybrid (crun refuses them): runc, cgroupfs, no default ulimits.
printf '[containers]\ndefault_ulimits = []\n' >"$work/containers.conf"
export CONTAINERS_CONF="$work/containers.conf"

# A Docker-like seccomp profile: everything allowed but user namespaces.
cat >"$work/no-userns.json" <<'JSON'
{"defaultAction": "SCMP_ACT_ALLOW",
 "syscalls": [
  {"names": ["unshare", "clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
   "args": [{"index": 0, "value": 268435456, "valueTwo": 268435456, "op": "SCMP_CMP_MASKED_EQ"}]},
  {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}
 ]}
JSON

failed=0
run() { # podman options..., then -- command...
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	podman --runtime runc --cgroup-manager cgroupfs run --rm --user 10001:10001 \
		-e HOME=/home/agent -w /home/agent "${opts[@]}" "$image" "$@" 2>&1
}
expect() { # name, want tier, want best-effort tier, podman options...
	local name=$1 tier=$2 be=$3
	shift 3
	local out
	out=$(run "$@" -- /usr/local/bin/moat doctor --json || true)
	local got gotbe
	got=$(printf '%s' "$out" | sed -n 's/^  "tier": "\(.*\)",$/\1/p')
	gotbe=$(printf '%s' "$out" | sed -n 's/^  "bestEffortTier": "\(.*\)",$/\1/p')
	if [ "$got" = "$tier" ] && [ "$gotbe" = "$be" ]; then
		echo "ok   $name: tier $got, with --best-effort $gotbe"
	else
		echo "FAIL $name: tier '$got' (want $tier), with --best-effort '$gotbe' (want $be)"
		printf '%s\n' "$out" | sed 's/^/     /' | head -20
		failed=1
	fi
}
attack() { # name, podman options..., -- moat run options: a write outside the policy must fail
	local name=$1
	shift
	local out
	out=$(run "$@" -- /usr/local/bin/moat run --best-effort -- sh -c 'echo x > /home/agent/escaped && echo ESCAPED' || true)
	if printf '%s' "$out" | grep -q ESCAPED || ! printf '%s' "$out" | grep -q 'deny file-write /home/agent/escaped'; then
		echo "FAIL $name: a write outside the policy:"
		printf '%s\n' "$out" | sed 's/^/     /' | head -20
		failed=1
	else
		echo "ok   $name: a write outside the policy is refused and reported"
	fi
	# Without moat the same write succeeds: the attack can detect an escape.
	if ! run "$@" -- sh -c 'echo x > /home/agent/escaped && echo ESCAPED' | grep -q ESCAPED; then
		echo "FAIL $name: the write must succeed without moat"
		failed=1
	fi
}

expect "podman defaults" unavailable host-proc
attack "podman defaults"
expect "unmask=ALL" full full --security-opt unmask=ALL
attack "unmask=ALL" --security-opt unmask=ALL
expect "seccomp refusing user namespaces" unavailable no-namespace --security-opt "seccomp=$work/no-userns.json"
attack "seccomp refusing user namespaces" --security-opt "seccomp=$work/no-userns.json"
podman rmi -f "$image" >/dev/null 2>&1 || true
exit $failed
