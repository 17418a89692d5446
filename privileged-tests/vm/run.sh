#!/usr/bin/env bash
# A pure cgroup v2 machine for moat's limit tests: Debian 12's own kernel
# (linux-image-cloud-amd64, 6.1) booted under qemu with a root filesystem
# made here from this machine's binaries, in RAM. This project's machine
# kind mounts the cgroup v1 controllers (its own processes are in them), so
# the cgroup v2 paths (as root: the run's cgroup holds memory.max, pids.max,
# cpu.max; as a user: a delegated subtree, as systemd's Delegate=yes gives)
# can only be proven on another kernel. KVM is used where it works; this
# machine kind's nested KVM does not, and TCG (software) boots in ~2 s.
#
#   bash privileged-tests/vm/run.sh [-run REGEXP]
#
# MOAT_VM_FULL=1 adds what the rest of the attack suite execs (for
# -run . : python3 and its standard library, curl, git's helpers in
# /usr/lib/git-core, GNU coreutils/findutils/grep/sed, gcc for
# TestInterruptedSetup), ~150 MB more in RAM, and gives the machine 4 GiB.
#
# Needs: qemu-system-x86, cpio, busybox-static (make test-vm installs
# them), the kernel (downloaded here with apt-get into $MOAT_VM_CACHE,
# default /var/cache/moat-vm as root, ~/.cache/moat-vm otherwise), Go to
# build the test binary, bin/moat (MOAT_VM_BIN: another moat binary).
set -euo pipefail
cd "$(dirname "$0")/../.."
# The limits and cgroups (as root and delegated), and the attacks whose
# outcome depends on the kernel (its /proc and /sys, Landlock ABI 2).
run_re='^(TestLimit|TestCgroupEscape|TestKernelKnobsAsRoot|TestNoWritableKernelFilesAsRoot|TestDeviceNodesReadOnly|TestDoctorReadOnlyCgroups|TestDoctorMaskedProc|TestHostProcesses|TestWriteOutside|TestReadDenied$)'
# Through sessions, the limits and cgroups only.
session_re='^(TestLimit|TestCgroupEscape)'
while [ $# -gt 0 ]; do
	case "$1" in
	-run) run_re=$2; session_re=$2; shift 2 ;;
	*) echo "usage: $0 [-run REGEXP]" >&2; exit 2 ;;
	esac
done
if [ "$(id -u)" = 0 ]; then
	cache=${MOAT_VM_CACHE:-/var/cache/moat-vm}
else
	cache=${MOAT_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/moat-vm}
fi
mkdir -p "$cache"

# The kernel: whatever linux-image-cloud-amd64 depends on today.
kpkg() { apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}'; }
kpkg=$(kpkg)
if [ -z "$kpkg" ]; then
	# apt's lists may never have been fetched on this machine.
	SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq || true
	kpkg=$(kpkg)
fi
[ -n "$kpkg" ] || { echo "vm: no linux-image-cloud-amd64 in apt's lists" >&2; exit 1; }
vmlinuz=$(ls "$cache/$kpkg"/boot/vmlinuz-* 2>/dev/null | head -1 || true)
if [ -z "$vmlinuz" ]; then
	echo "vm: downloading $kpkg"
	tmpd=$(mktemp -d)
	(cd "$tmpd" && apt-get download -q "$kpkg" >/dev/null 2>&1 || (cd "$tmpd" && chmod 777 . && apt-get download -q "$kpkg"))
	dpkg-deb -x "$tmpd"/"$kpkg"_*.deb "$cache/$kpkg"
	rm -rf "$tmpd"
	vmlinuz=$(ls "$cache/$kpkg"/boot/vmlinuz-* | head -1)
fi

work=$(mktemp -d /var/tmp/moat-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT
r=$work/root
mkdir -p "$r"/{proc,sys,dev,tmp,run,var/tmp,etc,root,home/moat-vm,opt/moat,usr/local/bin,usr/bin,usr/sbin,usr/lib,usr/lib64}
ln -s usr/bin "$r/bin"; ln -s usr/sbin "$r/sbin"; ln -s usr/lib "$r/lib"; ln -s usr/lib64 "$r/lib64"
chmod 1777 "$r/tmp" "$r/var/tmp"

# Binaries from this machine, with the libraries they load.
libs() {
	{ ldd "$1" 2>/dev/null || true; } | { grep -oE '/[^ ]+' || true; } | while read -r lib; do
		[ -e "$r$lib" ] || { mkdir -p "$r$(dirname "$lib")"; cp -L "$lib" "$r$lib"; }
	done
}
copy() {
	local f
	for f in "$@"; do
		f=$(command -v "$f")
		cp -L "$f" "$r/usr/bin/$(basename "$f")"
		libs "$f"
	done
}
copy bash setpriv git mount umount unshare install
mkdir -p "$r/usr/share/git-core" && cp -a /usr/share/git-core/templates "$r/usr/share/git-core/"
# pkg PACKAGE [EXCLUDE-ERE]: the package's files and symlinks as installed
# here (dpkg -L), each ELF file with the libraries it loads.
pkg() {
	dpkg -L "$1" | { if [ -n "${2:-}" ]; then grep -vE "$2"; else cat; fi; } | while read -r f; do
		{ [ -f "$f" ] || [ -L "$f" ]; } || continue
		[ -e "$r$f" ] || [ -L "$r$f" ] && continue
		mkdir -p "$r$(dirname "$f")"
		cp -a "$f" "$r$f"
		[ -L "$f" ] || ! head -c4 "$f" | grep -q ELF || libs "$f"
	done
}
mem=3072 limit=1500
if [ "${MOAT_VM_FULL:-}" = 1 ]; then
	mem=4096 limit=3600
	# GNU tools before busybox's applets, as on Debian.
	for p in coreutils findutils grep sed diffutils util-linux procps; do pkg "$p" '/share/(man|doc|locale|info|bash-completion|lintian)/'; done
	copy curl
	# Debian's python3 (not a pyenv shim earlier in PATH), a symlink to
	# python3.11: the library directory is named for the version.
	py=$(readlink -f /usr/bin/python3); pyv=$(basename "$py")
	cp "$py" "$r/usr/bin/$pyv" && ln -sf "$pyv" "$r/usr/bin/python3"
	libs "$py"
	(cd "/usr/lib/$pyv" && find . \( -name test -o -name tests -o -name idlelib -o -name tkinter -o -name turtledemo \
		-o -name ensurepip -o -name lib2to3 -o -name 'config-*' -o -name site-packages -o -name dist-packages \) -prune -o -print |
		cpio -pdm --quiet "$r/usr/lib/$pyv")
	for f in "$r/usr/lib/$pyv"/lib-dynload/*.so; do libs "$f"; done
	# git's helpers (git-upload-pack, git-remote-http, ...) and what they load.
	cp -a /usr/lib/git-core "$r/usr/lib/"
	find /usr/lib/git-core -type f | while read -r f; do head -c4 "$f" | grep -q ELF && libs "$f"; done
	# cc: gcc, cc1, as, ld, crt files, headers, libc.a for -static.
	gccv=$(gcc -dumpversion)
	for p in "gcc-$gccv" "cpp-$gccv" "libgcc-$gccv-dev" binutils-x86-64-linux-gnu libc6-dev linux-libc-dev libcrypt-dev; do
		pkg "$p" '/share/|lto1|lto-dump|/lib(a|l|t|ub|hwa)san|libitm|libatomic|libgomp|libquadmath|libcc1|/plugin/'
	done
	for t in gcc cc as ld; do ln -sf "$(readlink -f "$(command -v $t)")" "$r/usr/bin/$t"; done
	[ -e "$r/usr/bin/cpp" ] || ln -sf "cpp-$gccv" "$r/usr/bin/cpp"
fi
cp /bin/busybox "$r/usr/bin/busybox"
for a in $(/bin/busybox --list); do
	[ -e "$r/usr/bin/$a" ] || ln -s busybox "$r/usr/bin/$a"
done
ln -sf bash "$r/usr/bin/sh"

cp "${MOAT_VM_BIN:-bin/moat}" "$r/usr/local/bin/moat"
go test -c -o "$r/opt/moat/privileged-tests.test" ./privileged-tests
libs "$r/opt/moat/privileged-tests.test"
cat > "$r/etc/passwd" <<P
root:x:0:0:root:/root:/bin/bash
moat-vm:x:1000:1000:moat-vm:/home/moat-vm:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
P
cat > "$r/etc/group" <<G
root:x:0:
moat-vm:x:1000:
nogroup:x:65534:
G
echo "127.0.0.1 localhost" > "$r/etc/hosts"
echo 'hosts: files' > "$r/etc/nsswitch.conf"
chown 1000:1000 "$r/home/moat-vm"
echo "$run_re" > "$r/opt/moat/run"
echo "$session_re" > "$r/opt/moat/session-run"
cp privileged-tests/vm/init.sh "$r/init"
chmod 755 "$r/init"

# The initramfs holds the root in /r: init copies it to a tmpfs and
# switches to it (pivot_root, which moat's stage 2 does, refuses rootfs).
mkdir -p "$work/ir/r"
mv "$r"/* "$r"/.[!.]* "$work/ir/r/" 2>/dev/null || true
cp /bin/busybox "$work/ir/busybox"
cat > "$work/ir/init" <<'I'
#!/busybox sh
/busybox mkdir -p /new /proc
/busybox mount -t proc proc /proc
/busybox mount -t tmpfs -o mode=0755,size=90% tmpfs /new
/busybox cp -a /r/. /new/
/busybox umount /proc
exec /busybox switch_root /new /init
I
chmod 755 "$work/ir/init"
(cd "$work/ir" && find . | cpio -o -H newc --quiet | gzip -1 > "$work/initrd.gz")

accel="-accel tcg,thread=multi -cpu max"
log=$work/console.log
# boot: one run of the machine; its console in $log.
boot() {
	echo "vm: booting $(basename "$vmlinuz") (pure cgroup v2, initramfs $(($(stat -c %s "$work/initrd.gz") >> 20)) MiB, root $(du -sm "$work/ir" | cut -f1) MiB), tests: $run_re"
	timeout ${MOAT_VM_TIMEOUT:-$limit} qemu-system-x86_64 $accel -m $mem -smp 2 -nographic -no-reboot \
		-kernel "$vmlinuz" -initrd "$work/initrd.gz" \
		-append "console=ttyS0 quiet panic=-1 cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1" </dev/null 2>&1 | tee "$log" | grep -v '^\s*$' || true
}
# The machine runs again once, and only, when its kernel failed (a panic,
# a soft lockup: init.sh makes one panic) before the tests gave a result:
# CI's one such failure was the guest kernel spinning for 20 minutes under
# software emulation, in no test's assertion. A test that fails, or a
# second kernel failure, fails the run; the first failure's report stays
# in the output.
for try in 1 2; do
	boot
	rc=$(grep -aoE 'MOAT-VM-RESULT [0-9]+' "$log" | tail -1 | awk '{print $2}')
	[ -n "$rc" ] && exit "$rc"
	echo "vm: the machine stopped without a result" >&2
	# What it was doing, and the kernel's report if it panicked or spun
	# (the end of a CI log is what its report shows).
	grep -aE '^=== (RUN|vm)' "$log" | tail -2 | sed 's/^/vm: last: /' >&2
	if ! grep -aqE 'soft lockup|Kernel panic|BUG:|Oops' "$log"; then
		exit 1
	fi
	awk '/watchdog: BUG: soft lockup|BUG:|Oops|Kernel panic/ && !n++ {p=1} p && c++ < 80' "$log" | tr -d '\r' | sed 's/^/vm: kernel: /' >&2
	[ "$try" = 1 ] && echo "vm: the guest kernel failed (above), not a test: running the machine again, once" >&2
done
echo "vm: the guest kernel failed twice" >&2
exit 1
