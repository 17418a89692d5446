#!/usr/bin/env bash
# The local users and the group cmd/moat's daemon tests use, made before
# the suites start (as root; nothing to do as another user). A test that
# made one while it ran rewrote /etc/shadow or /etc/gshadow, which root's
# sandboxes hide, and the sandboxes of other packages' tests running then
# were ended (exit 125: a hidden file replaced on the host while the
# command ran, docs/SECURITY.md), as any root sandbox is on a host where a
# user is added. Each is made only where it is missing.
set -euo pipefail
[ "$(id -u)" = 0 ] || exit 0
user() { # NAME [useradd options...]
	local n=$1
	shift
	id -u "$n" >/dev/null 2>&1 || useradd "$@" --shell /bin/bash "$n"
}
for u in moat-ci moatd-test2 moatd-attack moatd-attack1 moatd-attack2 moatd-attack3 \
	moatd-thr-0 moatd-thr-1 moatd-fds-0 moatd-fds-1 moatd-fds-2 moatd-fds-3 \
	moat-load-0 moat-load-1 moat-load-2 moat-load-3 moat-load-4 moat-load-5 moat-load-6 moat-load-7 moat-load-8 moat-load-9; do
	user "$u" --create-home
done
user moatd-home --no-create-home --home-dir /var/tmp/moatd-home-test
# The group TestDaemonAttackClearedGroupsRegained reads through (its only
# member moatd-attack).
if ! getent group moatd-atk-grp >/dev/null; then
	groupadd -U moatd-attack moatd-atk-grp
elif [ "$(getent group moatd-atk-grp | cut -d: -f4)" != moatd-attack ]; then
	gpasswd -M moatd-attack moatd-atk-grp >/dev/null
fi
