#!/bin/bash
# pid 1 of the cgroup v2 machine (privileged-tests/vm/run.sh): mounts what a
# Debian system mounts, the cgroup2 hierarchy alone with its controllers,
# then runs the tests as root and as a user with a delegated subtree.
set -u
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
ln -sf pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
ip link set lo up
# A kernel that spins (a soft lockup) panics at once, with its backtrace on
# the console, rather than holding the machine until run.sh's timeout (CI
# once lost 1,300 s to one, with no backtrace left in its report).
# (Console level 5: the backtrace is printed at the default level, which
# quiet hides; so is an OOM kill's, a few lines each.)
echo 1 > /proc/sys/kernel/softlockup_panic
echo 5 > /proc/sys/kernel/printk
export PATH=/usr/local/bin:/usr/bin LANG=C.UTF-8 CI=true MOAT_REQUIRE_PRIVILEGED=1 MOAT_BIN=/usr/local/bin/moat MOAT_TEST_DIR=/var/tmp HOME=/root
echo "vm: kernel $(uname -r), cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers), lsm: $(cat /sys/kernel/security/lsm 2>/dev/null)"
run=$(cat /opt/moat/run)
fail=0

# As root: the run's cgroup under /sys/fs/cgroup/moat holds the limits.
echo "=== vm: as root"
(cd /opt/moat && ./privileged-tests.test -test.run "$run" -test.count=1 -test.timeout=20m -test.v 2>&1) || fail=1

# As a user whose cgroup is delegated to it, as systemd's Delegate=yes
# leaves a user service's: the directory and its cgroup.procs,
# cgroup.subtree_control and cgroup.threads are the user's, the
# controllers enabled down to it; the user's shell is in it.
d=/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/moat-test.scope
mkdir -p "$d"
p=/sys/fs/cgroup
for part in user.slice user-1000.slice user@1000.service app.slice; do
	echo "+memory +pids +cpu" > "$p/cgroup.subtree_control"
	p=$p/$part
done
echo "+memory +pids +cpu" > "$p/cgroup.subtree_control"
chown 1000:1000 "$d" "$d/cgroup.procs" "$d/cgroup.subtree_control" "$d/cgroup.threads"
echo "=== vm: as moat-vm (uid 1000) in a delegated cgroup ($d)"
(echo $BASHPID > "$d/cgroup.procs" && cd /opt/moat && exec setpriv --reuid=1000 --regid=1000 --init-groups \
	env -i HOME=/home/moat-vm USER=moat-vm PATH=$PATH LANG=C.UTF-8 CI=true MOAT_REQUIRE_PRIVILEGED=1 \
	MOAT_BIN=$MOAT_BIN MOAT_TEST_DIR=/var/tmp MOAT_EXPECT_CGROUP=delegated \
	./privileged-tests.test -test.run "$run" -test.count=1 -test.timeout=20m -test.v 2>&1) || fail=1
# The same user, each attack a command of a session sandbox.
echo "=== vm: as moat-vm, through sessions"
# (The runs above made the delegated cgroup's processes a leaf, moat-leaf.)
(echo $BASHPID > "$d/moat-leaf/cgroup.procs" && cd /opt/moat && exec setpriv --reuid=1000 --regid=1000 --init-groups \
	env -i HOME=/home/moat-vm USER=moat-vm PATH=$PATH LANG=C.UTF-8 CI=true MOAT_REQUIRE_PRIVILEGED=1 \
	MOAT_BIN=$MOAT_BIN MOAT_TEST_DIR=/var/tmp MOAT_EXPECT_CGROUP=delegated MOAT_VIA=session \
	./privileged-tests.test -test.run "$(cat /opt/moat/session-run)" -test.count=1 -test.timeout=20m -test.v 2>&1) || fail=1

# moat doctor names the delegated cgroup; moat policy says it holds the limits.
echo "=== vm: moat doctor and moat policy as moat-vm"
out=$(echo $BASHPID > "$d/moat-leaf/cgroup.procs" && setpriv --reuid=1000 --regid=1000 --init-groups \
	env -i HOME=/home/moat-vm USER=moat-vm PATH=$PATH sh -c "cd /home/moat-vm && moat doctor; moat policy" 2>&1)
echo "$out" | grep -iE 'cgroup|limit'
echo "$out" | grep -q 'cgroup v2 delegated to this user' || { echo "FAIL: moat doctor does not name the delegated cgroup"; fail=1; }
echo "$out" | grep -q 'delegated to this user)' || { echo "FAIL: moat policy does not say the delegated cgroup holds the limits"; fail=1; }
echo "MOAT-VM-RESULT $fail"
poweroff -f
