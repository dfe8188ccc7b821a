#!/usr/bin/env bash
# hardening.sh: what a hostile input or cache can do, and must not. One
# section per finding of the "Trust I" review, each named after the
# behaviour it protects; every command's exit code is exact and a crash
# always fails (lib.sh). The faults that need mounts, kills and load live
# in tests/fault.
. "$(dirname "$0")/lib.sh"
C="$CUBINCACHE"
make_kernel "$T/src"
cd "$T/src"

note "1. the cache never follows a symlink: clean, trim, verify and stats keep files outside it"
mkdir -p "$T/r/home/docs" "$T/r/c/v1"
echo thesis > "$T/r/home/docs/thesis.tex"
ln -s "$T/r/home" "$T/r/c/v1/objects"
"$C" cache --cache-dir "$T/r/c" clean > "$T/out1" 2>&1
[ -f "$T/r/home/docs/thesis.tex" ] || fail "clean deleted a file through v1/objects -> \$HOME"
for action in trim verify stats; do
    "$C" cache --cache-dir "$T/r/c" $action > "$T/out1" 2>&1
    [ $? -lt 128 ] || fail "cache $action crashed"
    [ -f "$T/r/home/docs/thesis.tex" ] || fail "cache $action deleted a file through a symlink"
done
rm "$T/r/c/v1/objects"
# a single symlinked shard, and a foreign file inside a real shard
mkdir -p "$T/r/c/v1/objects" "$T/r/victim"
echo precious > "$T/r/victim/0123456789abcdef0123456789abcd.cbc"
touch -d '3 hours ago' "$T/r/victim/0123456789abcdef0123456789abcd.cbc"
ln -s "$T/r/victim" "$T/r/c/v1/objects/zz"
ln -s "$T/r/victim" "$T/r/c/v1/objects/ab"
mkdir -p "$T/r/c/v1/objects/cd"
echo mine > "$T/r/c/v1/objects/cd/notes.txt"
echo old > "$T/r/c/v1/objects/cd/.hidden"
touch -d '3 hours ago' "$T/r/c/v1/objects/cd/.hidden"
for action in trim verify stats clean; do
    "$C" cache --cache-dir "$T/r/c" $action > "$T/out1" 2>&1
    [ -f "$T/r/victim/0123456789abcdef0123456789abcd.cbc" ] || fail "cache $action deleted through a symlinked shard"
    [ -f "$T/r/c/v1/objects/cd/notes.txt" ] || fail "cache $action deleted a foreign file in a shard"
    [ -f "$T/r/c/v1/objects/cd/.hidden" ] || fail "cache $action deleted a dotfile that is not its temporary"
done
expect_out 1 "not a cache entry" "$C" cache --cache-dir "$T/r/c" verify
expect_out 0 "left alone" "$C" cache --cache-dir "$T/r/c" clean
# v1 itself a symlink: the cache is refused, the build still works, nothing is written there
mkdir -p "$T/r2/c" "$T/r2/elsewhere"
ln -s "$T/r2/elsewhere" "$T/r2/c/v1"
expect_out 0 "compiling without the cache" env CUBINCACHE_DIR="$T/r2/c" "$C" build -a 90 -o "$T/o1" k.cu
[ -z "$(ls -A "$T/r2/elsewhere")" ] || fail "the cache wrote through v1 -> elsewhere: $(ls -A "$T/r2/elsewhere")"

note "2. v1/stats is never written through a symlink or a hard link"
expect_exit 0 "$C" build -a 90 -o "$T/o2" k.cu
echo "root only" > "$T/victim"
rm -f "$CUBINCACHE_DIR/v1/stats"
ln -s "$T/victim" "$CUBINCACHE_DIR/v1/stats"
expect_exit 0 "$C" cache trim
expect_exit 0 "$C" build -a 90 -o "$T/o2" k.cu
expect_exit 0 "$C" build -a 86 -o "$T/o2b" k.cu
[ "$(cat "$T/victim")" = "root only" ] || fail "stats were written through a symlink: $(cat "$T/victim")"
rm -f "$CUBINCACHE_DIR/v1/stats"
ln "$T/victim" "$CUBINCACHE_DIR/v1/stats"
expect_exit 0 "$C" build -a 89 -o "$T/o2c" k.cu
[ "$(cat "$T/victim")" = "root only" ] || fail "stats were written through a hard link"
echo "max_size = 1" > "$T/victim2"
ln -sf "$T/victim2" "$CUBINCACHE_DIR/v1/config"
expect_exit 0 "$C" cache trim --max-size 5G
[ "$(cat "$T/victim2")" = "max_size = 1" ] || fail "config was written through a symlink"

note "3. a manifest name cannot inject C into embed's output, and check calls it malformed"
expect_exit 0 "$C" build -a 90 -o "$T/o3" -n kern k.cu
python3 - "$T/o3/kern.manifest.json" <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
m["name"] = 'x */ __attribute__((constructor)) static void pwn(void){__builtin_puts("INJECTED");} /*'
json.dump(m, open(p, "w"), indent="\t")
PY
expect_out 2 "manifest '$T/o3/kern.manifest.json': name: expected a bundle name" "$C" embed -o "$T/emb.c" "$T/o3/kern.manifest.json"
[ ! -e "$T/emb.c" ] || fail "embed wrote C from a manifest with a hostile name"
expect_out 2 "name: expected a bundle name" "$C" check "$T/o3/kern.manifest.json"
# strings that do reach C are escaped: quotes, backslashes, newlines, trigraphs
expect_exit 0 "$C" build -a 90 -o "$T/o3" -n kern k.cu
python3 - "$T/o3/kern.manifest.json" <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
m["arch"]["detail"] = 'a"b\\c??/\n*/ int pwned = 1; /*'
json.dump(m, open(p, "w"), indent="\t")
PY
expect_exit 0 "$C" embed -o "$T/emb.c" "$T/o3/kern.manifest.json"
cat > "$T/embmain.c" <<'C'
#include <cubincache/loader.h>
#include <stdio.h>
extern const struct cbc_embedded_bundle cbc_bundle_kern;
int main(void) { fputs(cbc_bundle_kern.arch_detail, stdout); return 0; }
C
cc -std=c11 -trigraphs -Werror -I"$SRCDIR/include" -I"$BUILDDIR/include" -o "$T/embmain" "$T/embmain.c" "$T/emb.c" ||
    fail "embed output does not compile with -std=c11 -trigraphs"
printf 'a"b\\c??/\n*/ int pwned = 1; /*' > "$T/want"
"$T/embmain" > "$T/got"
cmp -s "$T/want" "$T/got" || fail "arch detail changed on its way through C: $(od -c "$T/got" | head)"

# an image that is not what its manifest records is refused at build time, never embedded
cp "$T/o3/kern.sm_90.cubin" "$T/kern.keep"
printf 'X' | dd of="$T/o3/kern.sm_90.cubin" bs=1 seek=1500 conv=notrunc 2>/dev/null
expect_out 1 "does not match the hash recorded for it" "$C" embed -o "$T/emb2.c" "$T/o3/kern.manifest.json"
[ ! -e "$T/emb2.c" ] || fail "embed wrote C for a corrupt image"
cp "$T/kern.keep" "$T/o3/kern.sm_90.cubin"

note "4. a tampered manifest cannot make build delete a source or a foreign file"
mkdir -p "$T/t4" && cp k.cu kh.cuh "$T/t4/" && cd "$T/t4"
expect_exit 0 "$C" build -a 80 k.cu
echo keep > other.txt
ln -s other.txt k.sm_86.cubin
python3 - k.manifest.json <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
e = m["entries"][0]
for target, f in (("sm_75", "k.cu"), ("sm_86", "k.sm_86.cubin"), ("sm_87", "other.txt"),
                  ("sm_89", "kh.cuh")):
    x = dict(e); x["target"] = target; x["file"] = f
    m["entries"].append(x)
json.dump(m, open(p, "w"), indent="\t")
PY
expect_exit 0 "$C" build -a 80 k.cu
[ -f k.cu ] && [ -f kh.cuh ] && [ -f other.txt ] && [ -L k.sm_86.cubin ] ||
    fail "a build deleted what a tampered manifest named: $(ls -la)"
cd "$T/src"

note "6. select on a missing file is a clean usage error, not a crash"
expect_out 2 "cannot open '/nonexistent'" "$C" select --cc 9.0 /nonexistent

note "7. igrun survives a safetensors file whose only tensor is '00.weight'"
python3 - "$T/zz.safetensors" <<'PY'
import json, struct, sys
hdr = json.dumps({"00.weight": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]},
                  "__metadata__": {"activations": "identity"}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hdr)) + hdr + struct.pack("<2f", 1.0, -2.0))
PY
printf '1,2\n' > "$T/zz.csv"
IGRUN="$BUILDDIR/tools/igrun/igrun"
expect_out 0 "delta" "$IGRUN" --model "$T/zz.safetensors" --input "$T/zz.csv" --device cpu
python3 - "$T/zz2.safetensors" <<'PY'
import json, struct, sys
hdr = json.dumps({"00.weight": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]},
                  "0.weight": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]},
                  "__metadata__": {"activations": "identity"}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hdr)) + hdr + struct.pack("<2f", 1.0, -2.0))
PY
expect_out 2 "are both layer 0" "$IGRUN" --model "$T/zz2.safetensors" --input "$T/zz.csv" --device cpu

note "8. a dependency that is /dev/zero or a FIFO makes check and --explain answer, not hang"
expect_exit 0 "$C" build -a 90 -o "$T/o8" k.cu
mkfifo "$T/fifo"
for dep in /dev/zero "$T/fifo"; do
    python3 - "$T/o8/k.manifest.json" "$dep" <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
m["dependencies"][0]["path"] = sys.argv[2]
json.dump(m, open(p, "w"), indent="\t")
PY
    expect_out 1 "cannot be read: '$dep' is a" timeout 20 "$C" check "$T/o8"
    expect_out 0 "" timeout 20 "$C" build --explain -a 90 -o "$T/o8" k.cu
done

note "9. an entry whose file name names another target is MISLABELED"
expect_exit 0 "$C" build -a 80 -o "$T/o9" k.cu
mv "$T/o9/k.sm_80.cubin" "$T/o9/k.sm_90.cubin"
sed -i 's/"k.sm_80.cubin"/"k.sm_90.cubin"/' "$T/o9/k.manifest.json"
expect_out 1 "MISLABELED   sm_80     k.sm_90.cubin: 'k.sm_90.cubin' is named for sm_90 but the manifest files it as sm_80" "$C" check "$T/o9"

note "10. a shared cache honours the umask and a set-group-ID directory"
mkdir -p "$T/shared"
chgrp 100 "$T/shared" 2>/dev/null || chgrp "$(id -g)" "$T/shared"
grp=$(stat -c %g "$T/shared")
chmod 2775 "$T/shared"
(umask 002 && CUBINCACHE_DIR="$T/shared" "$C" build -a 90 -o "$T/o10" k.cu) || fail "shared cache build"
for d in $(find "$T/shared" -type d); do
    [ "$(stat -c %a "$d")" = 2775 ] || fail "directory $d is $(stat -c %a "$d"), expected 2775"
    [ "$(stat -c %g "$d")" = "$grp" ] || fail "directory $d lost the group"
done
for f in $(find "$T/shared" -type f); do
    [ "$(stat -c %a "$f")" = 664 ] || fail "file $f is $(stat -c %a "$f"), expected 664"
    [ "$(stat -c %g "$f")" = "$grp" ] || fail "file $f lost the group"
done
rm -rf "$T/shared2"
(umask 077 && CUBINCACHE_UMASK=002 CUBINCACHE_DIR="$T/shared2" "$C" build -a 90 -o "$T/o10b" k.cu) || fail "CUBINCACHE_UMASK build"
for f in $(find "$T/shared2/v1" -type f); do
    [ "$(stat -c %a "$f")" = 664 ] || fail "CUBINCACHE_UMASK=002: file $f is $(stat -c %a "$f")"
done

note "11. messages and exit codes say the real cause"
expect_out 4 "cache directory '/dev/null/cache' is unusable" "$C" cache --cache-dir /dev/null/cache stats
[ "$(grep -c "unusable" "$T/last.out")" = 1 ] || fail "garbled message: $(cat "$T/last.out")"
grep -q "unusable: .*unusable" "$T/last.out" && fail "doubled message: $(cat "$T/last.out")"
expect_out 2 "is a character device, not a regular file" "$C" inspect /dev/zero
expect_out 0 "sm_90" "$C" select --cc 9.0 --cuda-driver 13.2 "$T/o2/k.sm_90.cubin"
expect_out 0 "sm_90" "$C" check --arch 90 --cuda-driver 14.0 "$T/o2/k.sm_90.cubin"
expect_out 2 "11.0 or later" "$C" check --arch 90 --cuda-driver 10.2 "$T/o2/k.sm_90.cubin"
expect_out 2 "--name '.hidden' is not a bundle name" "$C" build -a 90 -n .hidden -o "$T/o11" k.cu
expect_out 2 "--name '..' is not a bundle name" "$C" build -a 90 -n .. -o "$T/o11" k.cu
expect_out 2 "--name 'a/b' is not a bundle name" "$C" build -a 90 -n a/b -o "$T/o11" k.cu
expect_exit 0 "$C" build -a 90 -o "$T/o11" -n kern k.cu
cp "$T/o11/kern.manifest.json" "$T/m.keep"
expect_out 2 "is the bundle's manifest" "$C" build -a 90 -o "$T/o11" -n kern --depfile "$T/o11/kern.manifest.json" k.cu
expect_out 2 "is a source" "$C" build -a 90 -o "$T/o11" -n kern --depfile k.cu k.cu
expect_out 2 "is one of the bundle's images" "$C" build -a 90 -o "$T/o11" -n kern --depfile "$T/o11/kern.sm_90.cubin" k.cu
cmp -s "$T/m.keep" "$T/o11/kern.manifest.json" || fail "a refused --depfile changed the manifest"
expect_out 2 "--steps '4294967297'" "$IGRUN" --demo --steps 4294967297
expect_out 2 "--target '4294967296'" "$IGRUN" --demo --target 4294967296
expect_out 2 "--tolerance 'nan'" "$IGRUN" --demo --tolerance nan
for bad in nan inf -1 0x10 1e3 ""; do
    expect_out 2 "expected a size" "$C" cache trim --max-size "$bad"
done
expect_out 1 "NVCC_APPEND_FLAGS changed" env NVCC_APPEND_FLAGS=$'-lineinfo\nOK           sm_90     forged' "$C" check "$T/o11"
grep -q '^OK .*forged' "$T/last.out" && fail "an environment value split a verdict line: $(cat "$T/last.out")"
grep -q 'forged' "$T/last.out" || fail "the value is not shown escaped: $(cat "$T/last.out")"
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
    printf 'x' > "$T/secret" && chmod 600 "$T/secret"
    chmod 755 "$T"
    expect_out 2 "Permission denied" setpriv --reuid=65534 --regid=65534 --clear-groups "$C" check "$T/secret"
fi

note "12. a manifest or a safetensors header too large is refused before it is parsed"
head -c $((9 << 20)) /dev/zero | tr '\0' ' ' > "$T/big.manifest.json"
expect_out 2 "the most this file may hold" "$C" check "$T/big.manifest.json"
python3 - "$T/hdr.safetensors" <<'PY'
import struct, sys
open(sys.argv[1], "wb").write(struct.pack("<Q", 200_000_000) + b"{}")
PY
expect_out 2 "over safetensors' limit" "$IGRUN" --model "$T/hdr.safetensors" --input "$T/zz.csv" --device cpu
# finite differences over 12000 features work in blocks: under 1 GB of address space
python3 - "$T/wide.safetensors" "$T/wide.csv" <<'PY'
import json, struct, sys
F = 12000
hdr = json.dumps({"0.weight": {"dtype": "F32", "shape": [1, F], "data_offsets": [0, 4 * F]},
                  "__metadata__": {"activations": "tanh"}}).encode()
w = struct.pack("<%df" % F, *[((i % 7) - 3) / 1000.0 for i in range(F)])
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hdr)) + hdr + w)
open(sys.argv[2], "w").write(",".join("%g" % ((i % 5) / 5.0) for i in range(F)) + "\n")
PY
# (a sanitizer's shadow memory needs the address space: no limit there)
( [ -n "${CBC_SANITIZED:-}" ] || ulimit -v 1000000; "$IGRUN" --model "$T/wide.safetensors" --input "$T/wide.csv" --device cpu \
    --gradient fd --steps 2 -q > "$T/wide.out" 2>&1 ) || fail "FD over 12000 features under 1 GB: $(cat "$T/wide.out")"
cd "$T/src"
note "stamp -o through a planted symlink replaces the link, never writes its target"
echo victim > "$T/stamp-victim"
ln -s "$T/stamp-victim" "$T/planted.stamp"
expect_exit 0 "$C" stamp -a 90 -o "$T/planted.stamp"
[ "$(cat "$T/stamp-victim")" = victim ] || fail "stamp wrote through the symlink"
[ -f "$T/planted.stamp" ] && [ ! -L "$T/planted.stamp" ] || fail "the stamp is not a file of its own"
grep -q '^arch 90 -> sm_90$' "$T/planted.stamp" || fail "stamp: $(cat "$T/planted.stamp")"
mkdir "$T/stamp-dir"
expect_exit 4 "$C" stamp -a 90 -o "$T/stamp-dir"
[ -d "$T/stamp-dir" ] || fail "stamp removed a directory in its way"

note "compile slots: a planted symlink or a directory others can write is never used"
mkdir -m 700 "$T/rt1" "$T/rt2" "$T/elsewhere"
ln -s "$T/elsewhere" "$T/rt1/cubincache-jobs"           # the slot directory a link
mkdir -m 700 "$T/rt2/cubincache-jobs"
echo victim > "$T/slot-victim"
for i in $(seq 0 $(($(nproc) - 1))); do ln -s "$T/slot-victim" "$T/rt2/cubincache-jobs/slot.$i"; done
mkdir -m 700 "$T/rt3" && mkdir -m 777 "$T/rt3/cubincache-jobs"   # writable by others
for rt in rt1 rt2 rt3; do
    # slots that cannot be had are no reason to wait: well inside the minute a waiter gives
    XDG_RUNTIME_DIR="$T/$rt" expect_exit 0 timeout 40 "$C" build -q -a 75,86 -o "$T/slots-$rt" k.cu
    rm -rf "$CUBINCACHE_DIR"
done
[ -z "$(ls -A "$T/elsewhere")" ] || fail "slots were made through a symlinked directory: $(ls "$T/elsewhere")"
[ "$(cat "$T/slot-victim")" = victim ] || fail "a slot was opened through a planted symlink"
[ -z "$(ls -A "$T/rt3/cubincache-jobs")" ] || fail "slots were made in a directory others can write"
note "13. what a message or a listing quotes is printed escaped: no file name, file byte or value reaches the terminal raw"
# ESC ] 0 (retitle), BEL, and U+009B (CSI as a C1 control in UTF-8) then '2J' (clear)
evil=$'k\e]0;owned\a\xc2\x9b2J'
shown='k\x1b]0;owned\x07\xc2\x9b2J'
# inert WHAT: $T/last.out holds no control byte but newline and tab, no C1, and shows the name escaped
inert() {
    LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$T/last.out" &&
        fail "$1 printed a raw control: $(od -c "$T/last.out" | head -20)"
    grep -qF "$shown" "$T/last.out" || fail "$1 does not show the name escaped: $(cat -v "$T/last.out")"
}
printf 'not a cubin at all' > "$T/$evil.cubin"
expect_out 2 "not a cubin, fatbin, PTX file or ELF file" "$C" inspect "$T/$evil.cubin"; inert "inspect's error"
expect_out 2 "" "$C" check "$T/$evil.cubin"; inert "check's error"
expect_out 2 "" "$C" select --cc 9.0 "$T/$evil.cubin"; inert "select's error"
cp "$T/o2/k.sm_90.cubin" "$T/$evil.sm_90.cubin"
expect_out 0 "cubin sm_90" "$C" inspect "$T/$evil.sm_90.cubin"; inert "inspect's listing"
expect_out 0 "sm_90" "$C" select --cc 9.0 "$T/$evil.sm_90.cubin"; inert "select's answer"
expect_out 2 "" "$C" stamp --check --arch "90,$evil"; inert "stamp's error"
expect_out 2 "" "$C" build -a 90 -n "$evil" -o "$T/o13" k.cu; inert "build's usage error"
echo ok
