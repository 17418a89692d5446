#!/bin/sh
# install-binary.sh SRC DEST: install moat's binary at DEST (mode 0755) with
# one write of the whole file, then rename it into place.
#
# Why one write: on Linux 6.x ext4 keeps a file written in large writes in
# large page-cache folios, and a program whose text sits in large folios
# starts faster (fewer page faults when it is mapped). Measured on this
# project's VM (docs/PERFORMANCE.md): `moat version` 14.9 ms from a binary
# written in one go against 19.0 ms from one copied by install(1), and a
# cold `moat run -- /bin/true` 10-13 % faster. The layout lasts as long as
# the pages stay cached (a reboot or memory pressure reads the file back in
# small folios). The rename replaces a binary that is running without
# ETXTBSY; running processes keep the old file.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 SRC DEST" >&2; exit 2; }
src=$1 dest=$2
size=$(stat -c %s "$src")
tmp="$dest.new.$$"
trap 'rm -f "$tmp"' EXIT
# bs larger than the file and fullblock: dd reads it whole, writes it once.
dd if="$src" of="$tmp" bs=$((size + 1048576)) count=1 iflag=fullblock status=none
chmod 0755 "$tmp"
[ "$(stat -c %s "$tmp")" = "$size" ] || { echo "$0: short copy of $src" >&2; exit 1; }
mv -f "$tmp" "$dest"
trap - EXIT
