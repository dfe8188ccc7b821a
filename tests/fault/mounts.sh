#!/usr/bin/env bash
# mounts.sh: a full disk and read-only directories, in a private mount
# namespace (root only: skipped with 77 elsewhere). A build that cannot
# finish changes nothing in its bundle, says why (no space: exit 4, naming
# the file system), and leaves nothing behind; a read-only cache keeps
# serving hits; cache commands that must write say they cannot.
. "$(dirname "$0")/../cli/lib.sh"
C="$CUBINCACHE"
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
    echo "needs root and unshare -m to mount a small tmpfs and read-only binds" >&2
    exit 77
fi
make_kernel "$T/src"
cd "$T/src"
# the mounts live in a private namespace: the body runs there, with the
# helpers and variables of lib.sh exported to it
export T C CUBINCACHE_DIR
export -f fail note expect_exit expect_out sm_of
cat > "$T/inner.sh" <<'INNER'
set -u
cd "$T/src"
mkdir -p "$T/full"
mount -t tmpfs -o size=256k tmpfs "$T/full" || fail "mount tmpfs"
OUT="$T/full/out"
hashes() { (cd "$OUT" && sha256sum $(ls) 2>/dev/null); }

note "a full out directory: a rebuild after a header edit exits 4, names the disk, changes nothing"
expect_exit 0 "$C" build -q -a 86,90 -o "$OUT" -n k k.cu
before=$(hashes)
dd if=/dev/zero of="$T/full/filler" bs=1k 2>/dev/null
echo '// edited' >> kh.cuh
expect_out 4 "no space left" "$C" build -a 86,90 -o "$OUT" -n k k.cu
grep -q "$T/full" "$T/last.out" || fail "the message does not name the full file system: $(cat "$T/last.out")"
[ "$(hashes)" = "$before" ] || fail "a failed build changed the bundle"
ls -A "$OUT" | grep -q cubincache && fail "a failed build left its staging directory: $(ls -A "$OUT")"
expect_out 1 "STALE" "$C" check "$OUT"
grep -qE '^(CORRUPT|MISSING|INCOMPLETE)' "$T/last.out" && fail "check after ENOSPC: $(cat "$T/last.out")"

note "fewer targets on a full disk: the retired cubin is still there, the manifest unchanged"
cp kh.cuh.orig kh.cuh 2>/dev/null || sed -i '$d' kh.cuh
rm -f "$T/full/filler"
expect_exit 0 "$C" build -q -a 86,90 -o "$OUT" -n k k.cu
before=$(hashes)
dd if=/dev/zero of="$T/full/filler" bs=1k 2>/dev/null
expect_out 4 "no space left" "$C" build -a 90 -o "$OUT" -n k k.cu
[ "$(hashes)" = "$before" ] || fail "a failed build with fewer targets changed the bundle"
[ -f "$OUT/k.sm_86.cubin" ] || fail "the retired cubin was deleted before the manifest was written"
rm -f "$T/full/filler"
expect_exit 0 "$C" build -q -a 90 -o "$OUT" -n k k.cu
[ ! -e "$OUT/k.sm_86.cubin" ] || fail "with space again, the build should retire sm_86"
expect_exit 0 "$C" check "$OUT"

note "a full cache: warning, correct build"
mkdir -p "$T/small" && mount -t tmpfs -o size=16k tmpfs "$T/small"
CUBINCACHE_DIR="$T/small/c" "$C" build -a 75,80 -o "$T/o5" k.cu > "$T/full.log" 2>&1 || fail "full cache: $(cat "$T/full.log")"
grep -q "cannot write to the cache" "$T/full.log" || fail "no warning: $(cat "$T/full.log")"
[ "$(sm_of "$T/o5/k.sm_80.cubin")" = 80 ] || fail "full cache output"

note "a read-only cache: hits served, clean and trim refuse with the reason, exit 4"
expect_exit 0 "$C" build -q -a 89 -o "$T/o6" k.cu
mount --bind "$CUBINCACHE_DIR" "$CUBINCACHE_DIR" && mount -o remount,bind,ro "$CUBINCACHE_DIR" || fail "ro bind"
expect_out 0 "1 hit" "$C" build -v -a 89 -o "$T/o7" k.cu
expect_out 0 "cannot write to the cache" "$C" build -a 120 -o "$T/o7b" k.cu
[ "$(sm_of "$T/o7b/k.sm_120.cubin")" = 120 ] || fail "read-only cache miss output"
expect_out 4 "Read-only file system" "$C" cache clean
expect_out 4 "Read-only file system" "$C" cache trim --max-size 1
expect_out 0 "hits" "$C" cache stats
umount "$CUBINCACHE_DIR"

note "a read-only out directory: exit 4, nothing changed"
expect_exit 0 "$C" build -q -a 89 -o "$T/o8" k.cu
echo '// edited again' >> kh.cuh
before=$(cd "$T/o8" && sha256sum *)
mount --bind "$T/o8" "$T/o8" && mount -o remount,bind,ro "$T/o8" || fail "ro bind out"
expect_out 4 "Read-only file system" "$C" build -a 89 -o "$T/o8" k.cu
[ "$(cd "$T/o8" && sha256sum *)" = "$before" ] || fail "read-only out dir changed"
umount "$T/o8"
echo ok
INNER
cp kh.cuh kh.cuh.orig
unshare -m bash "$T/inner.sh"
