#!/usr/bin/env bash
# checkout.sh: two checkouts of one tree share the cache (base_dir, as
# ccache's): the second builder compiles nothing, yet every answer is the
# one plain nvcc gives in that checkout:
#  1. build: the other checkout's cubins are hits; its manifest and check
#     speak of the tree they are in;
#  2. the launcher: an object is a hit, its depfile names this tree;
#  3. outputs that name the tree (-lineinfo, __FILE__ of an absolute
#     path, nvcc's module id in an internal function's name) stay per tree
#     and equal nvcc's there; the split compile's per-arch device code is
#     shared when only cicc's host-side files name the tree;
#  4. base_dir none: no sharing; an edit in one checkout is a miss there only;
#  5. another working directory: absolute paths (CMake) hit without running
#     anything; relative ones (Meson, build -- -I ../inc) hit through one
#     preprocessing; a relative path that means another file there misses.
. "$(dirname "$0")/lib.sh"
C=$CUBINCACHE
cd "$T"
mkdir -p a/proj/.git a/proj/src a/proj/inc
printf '#define VAL 1.5f\n' > a/proj/inc/h.h
cat > a/proj/src/k.cu <<'CU'
#include "h.h"
extern "C" __global__ void k(float *o) { o[0] = VAL; }
CU
cat > a/proj/src/f.cu <<'CU'
#include <cstdio>
extern "C" __global__ void where() { printf("%s\n", __FILE__); }
CU
mkdir -p b && cp -a a/proj b/proj
touch -d '1 hour ago' {a,b}/proj/inc/h.h {a,b}/proj/src/*.cu
sleep 1.1
stat_of() { "$C" cache stats --json | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
same_object() {
    cmp -s <(sed 's/tmpxft_[0-9a-f]\{8\}_[0-9a-f]\{8\}-[0-9]*_/tmpxft_/g' "$1") \
           <(sed 's/tmpxft_[0-9a-f]\{8\}_[0-9a-f]\{8\}-[0-9]*_/tmpxft_/g' "$2")
}

note "1. build in a, then in b: b compiles nothing"
(cd a/proj && "$C" build -q -a 89,90 -o out src/k.cu -- -I inc) || fail "build in a"
m0=$(stat_of misses)
(cd b/proj && "$C" build -q -a 89,90 -o out src/k.cu -- -I inc) || fail "build in b"
[ "$(stat_of misses)" = "$m0" ] || fail "the second checkout compiled ($m0 -> $(stat_of misses) misses)"
(cd b/proj && "$NVCC_REAL" -cubin -gencode arch=compute_90,code=sm_90 -o ref.cubin -I inc src/k.cu)
cmp b/proj/out/k.sm_90.cubin b/proj/ref.cubin || fail "b's cubin is not nvcc's in b"
grep -Eq "\"base_dir\":[[:space:]]*\"$T/b/proj\"" b/proj/out/k.manifest.json || fail "b's manifest does not name b's base"
grep -q "$T/a/proj" b/proj/out/k.manifest.json && fail "b's manifest names a's tree"
"$C" check b/proj/out > /dev/null || fail "check of b's bundle"
note "   an edit in b is a miss in b, and a still hits"
printf '#define VAL 2.5f\n' > b/proj/inc/h.h
expect_out 0 "h.h' changed" "$C" build --explain -a 90 -o b/proj/out b/proj/src/k.cu -- -I b/proj/inc
m1=$(stat_of misses)
(cd a/proj && "$C" build -q -a 89,90 -o out src/k.cu -- -I inc) || fail "build in a"
[ "$(stat_of misses)" = "$m1" ] || fail "b's edit made a miss in a"
printf '#define VAL 1.5f\n' > b/proj/inc/h.h
touch -d '1 hour ago' b/proj/inc/h.h

note "2. the launcher: b's object is a hit and its depfile names b"
(cd a/proj && "$C" "$NVCC_REAL" -c src/k.cu -o k.o -arch=sm_90 -I inc -MD -MF k.d) || fail "launcher in a"
m0=$(stat_of misses)
(cd b/proj && "$C" "$NVCC_REAL" -c src/k.cu -o k.o -arch=sm_90 -I inc -MD -MF k.d) || fail "launcher in b"
[ "$(stat_of misses)" = "$m0" ] || fail "the launcher in b compiled"
(cd b/proj && "$NVCC_REAL" -c src/k.cu -o ref.o -arch=sm_90 -I inc -MD -MF ref.d)
same_object b/proj/k.o b/proj/ref.o || fail "b's object is not nvcc's in b"
cmp <(sed 's/ref\.o/k.o/' b/proj/ref.d) b/proj/k.d || fail "b's depfile is not nvcc's in b: $(cat b/proj/k.d)"
note "   ... and with absolute paths, as CMake gives them"
"$C" "$NVCC_REAL" -c "$T/a/proj/src/k.cu" -o a/proj/abs.o -arch=sm_90 "-I$T/a/proj/inc" || fail "launcher"
m0=$(stat_of misses)
"$C" "$NVCC_REAL" -c "$T/b/proj/src/k.cu" -o b/proj/abs.o -arch=sm_90 "-I$T/b/proj/inc" || fail "launcher"
"$NVCC_REAL" -c "$T/b/proj/src/k.cu" -o b/proj/absref.o -arch=sm_90 "-I$T/b/proj/inc"
[ "$(stat_of misses)" = "$m0" ] || fail "an absolute-path compile in b was not shared"
same_object b/proj/abs.o b/proj/absref.o || fail "b's absolute-path object is not nvcc's in b"

note "3. outputs that name the tree stay per tree"
(cd a/proj && "$C" "$NVCC_REAL" -cubin -lineinfo -arch=sm_90 -o li.cubin -I inc src/k.cu) || fail "launcher"
m0=$(stat_of misses)
(cd b/proj && "$C" "$NVCC_REAL" -cubin -lineinfo -arch=sm_90 -o li.cubin -I inc src/k.cu) || fail "launcher"
[ "$(stat_of misses)" -gt "$m0" ] || fail "b's -lineinfo cubin was a's"
(cd b/proj && "$NVCC_REAL" -cubin -lineinfo -arch=sm_90 -o liref.cubin -I inc src/k.cu)
cmp b/proj/li.cubin b/proj/liref.cubin || fail "b's -lineinfo cubin is not nvcc's in b"
note "   ... a second time in b is a hit"
m0=$(stat_of misses)
(cd b/proj && "$C" "$NVCC_REAL" -cubin -lineinfo -arch=sm_90 -o li2.cubin -I inc src/k.cu) || fail "launcher"
[ "$(stat_of misses)" = "$m0" ] || fail "b's own -lineinfo cubin was not kept"
cmp b/proj/li2.cubin b/proj/liref.cubin || fail "b's -lineinfo hit is not nvcc's in b"
note "   __FILE__ (build gives nvcc the absolute path)"
(cd a/proj && "$C" build -q -a 90 -o fo src/f.cu) || fail "build"
(cd b/proj && "$C" build -q -a 90 -o fo src/f.cu) || fail "build"
grep -q "$T/b/proj/src/f.cu" b/proj/fo/f.sm_90.cubin || fail "b's cubin does not carry b's __FILE__"
grep -q "$T/a/proj" b/proj/fo/f.sm_90.cubin && fail "b's cubin carries a's __FILE__"
"$C" check b/proj/fo > /dev/null || fail "check of b's per-tree bundle"
note "   __FILE__ in device code through the launcher's split compile (CMake's absolute paths)"
G=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90)
"$C" "$NVCC_REAL" "${G[@]}" -x cu -c "$T/a/proj/src/f.cu" -o a/proj/fs.o || fail "launcher in a"
m0=$(stat_of misses)
"$C" "$NVCC_REAL" "${G[@]}" -x cu -c "$T/b/proj/src/f.cu" -o b/proj/fs.o || fail "launcher in b"
"$NVCC_REAL" "${G[@]}" -x cu -c "$T/b/proj/src/f.cu" -o b/proj/fsref.o
grep -q "$T/a/proj" b/proj/fs.o && fail "b's object carries a's __FILE__ (a's device code served in b)"
same_object b/proj/fs.o b/proj/fsref.o || fail "b's split-compiled object is not nvcc's in b"
[ "$(stat_of misses)" -gt "$m0" ] || fail "b's object that names its tree was a's"
m0=$(stat_of misses)
"$C" "$NVCC_REAL" "${G[@]}" -x cu -c "$T/b/proj/src/f.cu" -o b/proj/fs2.o || fail "launcher in b"
[ "$(stat_of misses)" = "$m0" ] || fail "b's own object was not kept"
same_object b/proj/fs2.o b/proj/fsref.o || fail "b's hit is not nvcc's in b"

# in_a_then_b NOTE SRC FLAGS...: the launcher compiles src/SRC in a, then in
# b (saying NOTE there, when given); b's object must be nvcc's in b
in_a_then_b() {
    local needle=$1 src=$2 o=${2%.cu}.$RANDOM.o; shift 2
    "$C" "$NVCC_REAL" "$@" -c "$T/a/proj/src/$src" -o "a/proj/$o" || fail "launcher in a ($src)"
    expect_out 0 "$needle" env CUBINCACHE_DEBUG=1 \
        "$C" "$NVCC_REAL" "$@" -c "$T/b/proj/src/$src" -o "b/proj/$o"
    "$NVCC_REAL" "$@" -c "$T/b/proj/src/$src" -o "b/proj/ref.$o"
    same_object "b/proj/$o" "b/proj/ref.$o" || fail "b's object of $src ($*) is not nvcc's in b"
}
note "   __FILE__ copied byte by byte: stores of immediates, no string in the cubin"
cat > a/proj/src/fc.cu <<'CU'
extern "C" __global__ void where(char *o)
{
    const char *f = __FILE__;
    for (int i = 0; f[i]; i++)
        o[i] = f[i];
}
CU
cp a/proj/src/fc.cu b/proj/src/fc.cu
(cd a/proj && "$C" build -q -a 89,90 -o fc "$T/a/proj/src/fc.cu") || fail "build in a"
(cd b/proj && "$C" build -q -a 89,90 -o fc "$T/b/proj/src/fc.cu") || fail "build in b"
(cd b/proj && "$NVCC_REAL" -cubin -gencode arch=compute_90,code=sm_90 -o fcref.cubin "$T/b/proj/src/fc.cu")
cmp b/proj/fc/fc.sm_90.cubin b/proj/fcref.cubin || fail "b's cubin stores a's __FILE__"
in_a_then_b "" fc.cu "${G[@]}"
"$C" "$NVCC_REAL" -cubin -arch=sm_90 -o b/proj/fcl.cubin "$T/b/proj/src/fc.cu" || fail "launcher -cubin in b"
cmp b/proj/fcl.cubin b/proj/fcref.cubin || fail "the launcher's -cubin in b stores a's __FILE__"
note "   ... a device link of it (-rdc) is b's own too"
(cd a/proj && "$C" build -q -a 90 -n fcl -o fcl "$T/a/proj/src/fc.cu" "$T/a/proj/src/k.cu" -- -I inc) ||
    fail "link in a"
(cd b/proj && "$C" build -q -a 90 -n fcl -o fcl "$T/b/proj/src/fc.cu" "$T/b/proj/src/k.cu" -- -I inc) ||
    fail "link in b"
grep -q "$T/a/proj" b/proj/fcl/fcl.sm_90.cubin && fail "b's linked cubin names a"
(cd b/proj && "$C" build -q -a 90 -n fcl -o fcl2 "$T/b/proj/src/fc.cu" "$T/b/proj/src/k.cu" -- -I inc) ||
    fail "link in b again"
cmp b/proj/fcl/fcl.sm_90.cubin b/proj/fcl2/fcl.sm_90.cubin || fail "b's second link differs"

note "   nvcc's module id (a hash of the source's absolute path) in an internal device function"
cat > a/proj/src/anon.cu <<'CU'
namespace { __device__ __noinline__ float cube(float v) { return v * v * v; } }
extern "C" __global__ void k2(float *x) { x[0] = cube(x[2]); }
CU
cp a/proj/src/anon.cu b/proj/src/anon.cu
(cd a/proj && "$C" build -q -a 89,90 -o an src/anon.cu) || fail "build in a"
(cd b/proj && "$C" build -q -a 89,90 -o an src/anon.cu) || fail "build in b"
(cd b/proj && "$NVCC_REAL" -cubin -gencode arch=compute_90,code=sm_90 -o anref.cubin src/anon.cu)
cmp b/proj/an/anon.sm_90.cubin b/proj/anref.cubin || fail "b's cubin holds a's module id (a's cubin served in b)"
in_a_then_b "" anon.cu "${G[@]}"
note "   ... PTX only: the id is a mark in the PTX, so b is served a's PTX with b's id"
P1=(-gencode arch=compute_90,code=compute_90)
in_a_then_b "device code of 1 of 1 virtual archs from the cache" anon.cu "${P1[@]}"
note "   ... an assert's __FILE__ in PTX only (a byte array, in a compressed fatbin)"
in_a_then_b "" f.cu "${P1[@]}"
note "   host code's __FILE__ (llm.c's cudaCheck): the object is b's, its device code a's"
cat > a/proj/src/hf.cu <<'CU'
#include <cstdio>
extern "C" __global__ void k3(float *x) { x[0] = 1.0f; }
void report() { printf("%s\n", __FILE__); }
CU
cp a/proj/src/hf.cu b/proj/src/hf.cu
in_a_then_b "device code of 2 of 2 virtual archs from the cache" hf.cu "${G[@]}"

note "4. base_dir none: the checkouts share nothing"
rm -rf "$CUBINCACHE_DIR"
(cd a/proj && CUBINCACHE_BASEDIR=none "$C" build -q -a 90 -o out2 src/k.cu -- -I inc) || fail "build"
m0=$(stat_of misses)
(cd b/proj && CUBINCACHE_BASEDIR=none "$C" build -q -a 90 -o out2 src/k.cu -- -I inc) || fail "build"
[ "$(stat_of misses)" -gt "$m0" ] || fail "base_dir none still shared"
grep -Eq '"base_dir":[[:space:]]*null' b/proj/out2/k.manifest.json || fail "base_dir none is not recorded"
note "   a bad value is said, and keys stay absolute"
expect_out 0 "CUBINCACHE_BASEDIR" env CUBINCACHE_BASEDIR=relative/dir "$C" build -a 90 -o out3 b/proj/src/k.cu -- -I b/proj/inc
grep -Eq '"base_dir":[[:space:]]*null' out3/k.manifest.json || fail "a bad base_dir was used"
note "5. another working directory of one checkout"
rm -rf "$CUBINCACHE_DIR"
printf '#!/bin/sh\necho "$*" >> "%s/nvcc.log"\nexec "%s" "$@"\n' "$T" "$NVCC_REAL" > nvcc-logged
chmod +x nvcc-logged
touch -d "1 hour ago" nvcc-logged
sleep 1.1 # its ctime settles: its identity is trusted at once
runs() { cat "$T/nvcc.log" 2>/dev/null | wc -l; }
P=$T/a/proj
mkdir -p "$P/build/CMakeFiles" "$P/build-debug/CMakeFiles" "$P/x/y" "$P/x/inc"
note "   CMake's command (absolute paths) in a fresh build directory: no nvcc at all"
(cd "$P/build" && "$C" "$T/nvcc-logged" -x cu -c "$P/src/k.cu" -o CMakeFiles/k.o -I"$P/inc" \
    -arch=sm_90 -MD -MT CMakeFiles/k.o -MF CMakeFiles/k.o.d) || fail "launcher in build"
r0=$(runs)
(cd "$P/build-debug" && "$C" "$T/nvcc-logged" -x cu -c "$P/src/k.cu" -o CMakeFiles/k.o -I"$P/inc" \
    -arch=sm_90 -MD -MT CMakeFiles/k.o -MF CMakeFiles/k.o.d) || fail "launcher in build-debug"
[ "$(runs)" = "$r0" ] || fail "a fresh build directory ran nvcc for an absolute-path command"
cmp "$P/build/CMakeFiles/k.o.d" "$P/build-debug/CMakeFiles/k.o.d" || fail "depfiles differ"
note "   Meson's command (relative paths): one nvcc -M, no compile"
(cd "$P/build" && "$C" "$T/nvcc-logged" -c ../src/k.cu -o k.o -I../inc -arch=sm_90 -MD -MF k.d) ||
    fail "launcher in build"
r0=$(runs)
(cd "$P/build-debug" && "$C" "$T/nvcc-logged" -c ../src/k.cu -o k.o -I../inc -arch=sm_90 -MD \
    -MF k.d) || fail "launcher in build-debug"
[ "$(runs)" = "$((r0 + 1))" ] || fail "a relative command in another directory ran nvcc $(( $(runs) - r0 )) times, not once (-M)"
(cd "$P/build-debug" && "$NVCC_REAL" -c ../src/k.cu -o ref.o -I../inc -arch=sm_90 -MD -MF ref.d)
same_object "$P/build-debug/k.o" "$P/build-debug/ref.o" || fail "the object is not nvcc's there"
cmp <(sed 's/ref\.o/k.o/' "$P/build-debug/ref.d") "$P/build-debug/k.d" || fail "the depfile is not nvcc's there"
r0=$(runs)
(cd "$P/build-debug" && "$C" "$T/nvcc-logged" -c ../src/k.cu -o k.o -I../inc -arch=sm_90 -MD \
    -MF k.d) || fail "launcher in build-debug"
[ "$(runs)" = "$r0" ] || fail "the second compile there was not a direct hit"
note "   build -- -I ../inc from another directory: hits through the preprocessing"
(cd "$P/build" && "$C" build -q -a 89,90 -o out ../src/k.cu -- -I ../inc) || fail "build in build"
m0=$(stat_of misses)
expect_out 0 "sm_90: hit (compiled in another directory" \
    sh -c "cd '$P/build-debug' && '$C' build --explain -a 89,90 -o out ../src/k.cu -- -I ../inc"
[ "$(stat_of misses)" = "$m0" ] || fail "build in another directory compiled"
cmp "$P/build/out/k.sm_89.cubin" "$P/build-debug/out/k.sm_89.cubin" || fail "cubins differ"
note "   ... but where ../inc is another directory with another h.h, a miss equal to nvcc's"
mkdir -p "$P/q/y" "$P/q/inc"
printf '#define VAL 9.5f\n' > "$P/x/inc/h.h"
printf '#define VAL 7.5f\n' > "$P/q/inc/h.h"
for d in x q; do
    (cd "$P/$d/y" && "$C" "$NVCC_REAL" -cubin ../../src/k.cu -o k.cubin -I../inc -arch=sm_90) ||
        fail "launcher in $d/y"
    (cd "$P/$d/y" && "$NVCC_REAL" -cubin ../../src/k.cu -o ref.cubin -I../inc -arch=sm_90)
    cmp "$P/$d/y/k.cubin" "$P/$d/y/ref.cubin" || fail "$d/y's cubin is not nvcc's with $d/inc/h.h"
    (cd "$P/$d/y" && "$C" build -q -a 90 -o out ../../src/k.cu -- -I ../inc) || fail "build in $d/y"
    (cd "$P/$d/y" && "$NVCC_REAL" -cubin -gencode arch=compute_90,code=sm_90 -o bref.cubin \
        -I ../inc "$P/src/k.cu")
    cmp "$P/$d/y/out/k.sm_90.cubin" "$P/$d/y/bref.cubin" || fail "build's cubin in $d/y is not nvcc's"
done
echo "ok"
