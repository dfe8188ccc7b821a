#!/usr/bin/env bash
# stale.sh: no hit is ever stale, and a hit writes what nvcc would have
# written (issue "Trust IV"), each case against plain nvcc:
#  1. a new header that shadows an old one: earlier on the -I path, beside
#     the source, through the launcher, `build` and `check`;
#  2. the variables nvcc's profile reads (PTXAS_FLAGS, INCLUDES);
#  3. -arch=native: keyed on the GPUs it means, uncacheable without one;
#  4. standard input '-' while a file named '-' exists;
#  5. outputs that are not regular files: a device, a FIFO, a symbolic
#     link, a --depfile or stamp that is a device;
#  6. __TIME__, a header with a future mtime, a side output of a host
#     compiler flag, the depfile of arches served by direct mode;
#  7. a one-arch compile's device code reused when an arch is added;
#  8. the input as spelled (__FILE__), relative or absolute.
. "$(dirname "$0")/lib.sh"
C=$CUBINCACHE
export NVCC_REAL
cd "$T"
mkdir inc1 inc2 src
printf '#ifndef VAL\n#define VAL 1.0f\n#endif\n' > inc1/h.h
cat > src/k.cu <<'CU'
#include "h.h"
extern "C" __global__ void k(float *o) { o[0] = VAL; }
CU
# objects name nvcc's temporary files (tmpxft_<pid>_...): masked, the rest byte for byte
same_object() {
    cmp -s <(sed 's/tmpxft_[0-9a-f]\{8\}_[0-9a-f]\{8\}-[0-9]*_/tmpxft_/g' "$1") \
           <(sed 's/tmpxft_[0-9a-f]\{8\}_[0-9a-f]\{8\}-[0-9]*_/tmpxft_/g' "$2")
}
stat_of() { "$C" cache stats --json | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
# the source and headers are old, so their stamps are trusted at once
age() { touch -d '1 hour ago' "$@"; }
age inc1/h.h src/k.cu
sleep 1.1

note "1. a new header earlier on the -I path: the launcher misses and equals nvcc"
"$C" "$NVCC_REAL" -c src/k.cu -o a.o -arch=sm_90 -I inc2 -I inc1 || fail "launcher"
"$C" "$NVCC_REAL" -c src/k.cu -o a.o -arch=sm_90 -I inc2 -I inc1 || fail "launcher"
h0=$(stat_of hits)
echo '#define VAL 2.0f' > inc2/h.h
"$C" "$NVCC_REAL" -c src/k.cu -o b.o -arch=sm_90 -I inc2 -I inc1 || fail "launcher"
[ "$(stat_of hits)" = "$h0" ] || fail "a header that shadows the one read was a hit"
"$NVCC_REAL" -c src/k.cu -o ref.o -arch=sm_90 -I inc2 -I inc1
same_object b.o ref.o || fail "the object is not what nvcc makes with inc2/h.h"
rm inc2/h.h
note "   ... and one beside the source (a quoted include looks there first)"
"$C" "$NVCC_REAL" -c src/k.cu -o a.o -arch=sm_90 -I inc1 || fail "launcher"
echo '#define VAL 3.0f' > src/h.h
"$C" "$NVCC_REAL" -c src/k.cu -o c.o -arch=sm_90 -I inc1 || fail "launcher"
"$NVCC_REAL" -c src/k.cu -o ref.o -arch=sm_90 -I inc1
same_object c.o ref.o || fail "a header beside the source was not seen"
rm src/h.h

note "   build: a miss naming the new file, equal to nvcc's cubin; check calls the old bundle STALE"
"$C" build -q -a 90 -o out src/k.cu -- -I inc2 -I inc1 || fail "build"
"$C" check out > /dev/null || fail "check of a fresh bundle"
echo '#define VAL 2.0f' > inc2/h.h
expect_out 1 "inc2/h.h' now exists" "$C" check out
expect_out 0 "sm_90: miss: '$T/inc2/h.h' now exists" "$C" build --explain -a 90 -o out src/k.cu -- -I inc2 -I inc1
"$NVCC_REAL" -cubin -gencode arch=compute_90,code=sm_90 -o ref.cubin -I inc2 -I inc1 src/k.cu
cmp out/k.sm_90.cubin ref.cubin || fail "build's cubin is not what nvcc makes with inc2/h.h"
rm inc2/h.h

note "2. the profile's variables: PTXAS_FLAGS and INCLUDES are keyed"
"$C" "$NVCC_REAL" -cubin -arch=sm_90 src/k.cu -o l.cubin -I inc1 || fail "launcher"
PTXAS_FLAGS=-O0 "$C" "$NVCC_REAL" -cubin -arch=sm_90 src/k.cu -o l0.cubin -I inc1 || fail "launcher"
PTXAS_FLAGS=-O0 "$NVCC_REAL" -cubin -arch=sm_90 src/k.cu -o r0.cubin -I inc1
cmp l0.cubin r0.cubin || fail "PTXAS_FLAGS=-O0 hit the -O3 cubin"
"$C" build -q -a 90 -o out3 src/k.cu -- -I inc1 || fail "build"
cp out3/k.sm_90.cubin old.cubin
expect_out 1 "INCLUDES changed" env INCLUDES=-DVAL=7.0f "$C" check out3
expect_out 0 "sm_90: miss: INCLUDES changed" env INCLUDES=-DVAL=7.0f "$C" build --explain -a 90 -o out3 src/k.cu -- -I inc1
cmp -s old.cubin out3/k.sm_90.cubin && fail "INCLUDES=-DVAL=7.0f hit the old cubin"
INCLUDES=-DVAL=7.0f "$NVCC_REAL" -cubin -gencode arch=compute_90,code=sm_90 -o r7.cubin -I inc1 src/k.cu
cmp out3/k.sm_90.cubin r7.cubin || fail "INCLUDES: not nvcc's cubin"
grep -q '"PTXAS_FLAGS"' out3/k.manifest.json || fail "the manifest does not record PTXAS_FLAGS"

note "3. -arch=native: keyed on the GPU it means (a fake driver; nvcc stands in for that GPU)"
cat > nvcc-native <<EOF
#!/bin/sh
# nvcc on a machine whose GPU is sm_\$FAKE_CUDA_CC: native means that
for a; do shift; case \$a in -arch=native) set -- "\$@" -arch=sm_\$FAKE_CUDA_CC ;; *) set -- "\$@" "\$a" ;; esac; done
exec "$NVCC_REAL" "\$@"
EOF
chmod +x nvcc-native
if [ -n "${CBC_FAKE_CUDA:-}" ]; then
    CUBINCACHE_LIBCUDA=$CBC_FAKE_CUDA FAKE_CUDA_CC=89 "$C" ./nvcc-native -cubin -arch=native src/k.cu -o n.cubin -I inc1 ||
        fail "native on 89"
    CUBINCACHE_LIBCUDA=$CBC_FAKE_CUDA FAKE_CUDA_CC=90 "$C" ./nvcc-native -cubin -arch=native src/k.cu -o n.cubin -I inc1 ||
        fail "native on 90"
    [ "$(sm_of n.cubin)" = 90 ] || fail "-arch=native on an sm_90 GPU was served the sm_89 cubin"
fi
u0=$(stat_of uncacheable)
CUBINCACHE_LIBCUDA=/nonexistent/libcuda.so.1 "$C" ./nvcc-native -cubin -arch=native src/k.cu -o n.cubin -I inc1 2> /dev/null
[ "$(stat_of uncacheable)" = $((u0 + 1)) ] || fail "-arch=native without a GPU was not run as it is"

note "4. '-' is standard input, even when a file named '-' exists"
cp src/k.cu ./-
u0=$(stat_of uncacheable)
echo 'extern "C" __global__ void piped(float *o) { o[0] = 5.0f; }' |
    "$C" "$NVCC_REAL" -x cu -cubin -arch=sm_90 -o p.cubin - || fail "stdin compile"
[ "$(stat_of uncacheable)" = $((u0 + 1)) ] || fail "'-' was keyed"
grep -q piped p.cubin || fail "the cubin lacks the piped kernel"
rm ./-

note "5. outputs that are not regular files are written through, never replaced"
"$C" "$NVCC_REAL" -c src/k.cu -o d.o -arch=sm_90 -I inc1 || fail "launcher"
if [ "$(id -u)" = 0 ]; then
    mknod dev c 1 3 # a /dev/null of our own
    "$C" "$NVCC_REAL" -c src/k.cu -o dev -arch=sm_90 -I inc1 || fail "launcher hit into a device"
    [ -c dev ] || fail "a launcher hit replaced the device at -o"
    "$C" stamp -a 90 -o dev || fail "stamp into a device"
    [ -c dev ] || fail "stamp replaced the device"
    "$C" build -q -a 90 -o out4 --depfile dev src/k.cu -- -I inc1 || fail "build --depfile device"
    [ -c dev ] || fail "build replaced the --depfile device"
fi
mkfifo fifo
timeout 30 cat fifo > from-fifo & reader=$!
"$C" "$NVCC_REAL" -c src/k.cu -o fifo -arch=sm_90 -I inc1 || fail "launcher hit into a FIFO"
[ -p fifo ] || echo > fifo.unblock # a reader left waiting ends at its timeout
wait $reader
[ -p fifo ] || fail "a launcher hit replaced the FIFO"
same_object from-fifo d.o || fail "the FIFO did not get the object"
echo old > target.o
ln -s target.o link.o
"$C" "$NVCC_REAL" -c src/k.cu -o link.o -arch=sm_90 -I inc1 || fail "launcher hit through a link"
[ -L link.o ] || fail "a launcher hit replaced the symbolic link (nvcc writes through it)"
same_object target.o d.o || fail "the link's target did not get the object"

note "6. __TIME__ is never served from a record"
cat > src/t.cu <<'CU'
extern "C" __global__ void t(char *o) { const char *s = __TIME__; o[0] = s[7]; }
CU
age src/t.cu
"$C" "$NVCC_REAL" -cubin -arch=sm_90 src/t.cu -o t1.cubin || fail "launcher"
h0=$(stat_of hits)
"$C" "$NVCC_REAL" -cubin -arch=sm_90 src/t.cu -o t2.cubin || fail "launcher"
[ "$(stat_of hits)" = "$h0" ] || fail "a source using __TIME__ was a hit"
note "   a header with a future mtime: cached, and said once"
echo '#define VAL 4.0f' > inc1/h.h
touch -d '+1 hour' inc1/h.h
sleep 1.1
expect_out 0 "modification time in the future" "$C" build -a 90 -o out5 src/k.cu -- -I inc1
expect_out 0 "1 hit, 0 miss" "$C" build -v -a 90 -o out5 src/k.cu -- -I inc1
note "   a side output of the host compiler is written by a hit too"
"$C" "$NVCC_REAL" -c src/k.cu -o s.o -arch=sm_90 -I inc1 -Xcompiler -MD,-MF,side.d || fail "launcher"
cp side.d side.miss && rm side.d
"$C" "$NVCC_REAL" -c src/k.cu -o s.o -arch=sm_90 -I inc1 -Xcompiler -MD,-MF,side.d || fail "launcher"
[ -f side.d ] || fail "a hit did not write the host compiler's -MF file"
cmp side.d side.miss || fail "the hit's side.d differs from the miss's"

note "7. a one-arch compile's device code is reused when an arch is added (89 -> 89;90)"
g89='--generate-code=arch=compute_89,code=[compute_89,sm_89]'
g90='--generate-code=arch=compute_90,code=[compute_90,sm_90]'
echo 'extern "C" __global__ void r(float *o) { o[0] = 8.0f; }' > src/r.cu
age src/r.cu
"$C" "$NVCC_REAL" -c src/r.cu -o r1.o "$g89" || fail "launcher"
expect_out 0 "device code of 1 of 2 virtual archs from the cache" env CUBINCACHE_LAUNCH_DEBUG=1 \
    "$C" "$NVCC_REAL" -c src/r.cu -o r2.o "$g89" "$g90" -MD -MF r2.d
"$NVCC_REAL" -c src/r.cu -o rr.o "$g89" "$g90" -MD -MF rr.d
same_object r2.o rr.o || fail "the object with a reused arch is not nvcc's"
note "   the depfile of archs served from their records is nvcc's, spelled and ordered as nvcc does"
sed 's/^r2\.o/rr.o/' r2.d | cmp - rr.d || fail "depfile: $(diff <(sed 's/^r2\.o/rr.o/' r2.d) rr.d)"
"$C" "$NVCC_REAL" -c src/k.cu -o m.o "$g89" "$g90" -I inc1 || fail "launcher"
expect_out 0 "device code of 2 of 2 virtual archs from the cache (2 not preprocessed)" env \
    CUBINCACHE_LAUNCH_DEBUG=1 "$C" "$NVCC_REAL" -c src/k.cu -o m.o "$g89" "$g90" -I inc1 -MD -MF m.d
"$NVCC_REAL" -c src/k.cu -o m.o "$g89" "$g90" -I inc1 -MD -MF mr.d
cmp m.d mr.d || fail "depfile of served archs: $(diff m.d mr.d | head -5)"

note "8. the input as spelled: __FILE__ of 'src/f.cu' and of its absolute path differ"
printf '#include <cstdio>\nextern "C" __global__ void f() { printf("%%s\\n", __FILE__); }\n' > src/f.cu
age src/f.cu
"$C" "$NVCC_REAL" -cubin -arch=sm_90 src/f.cu -o f1.cubin || fail "launcher"
"$C" "$NVCC_REAL" -cubin -arch=sm_90 "$T/src/f.cu" -o f2.cubin || fail "launcher"
"$NVCC_REAL" -cubin -arch=sm_90 "$T/src/f.cu" -o fr.cubin
cmp f2.cubin fr.cubin || fail "the absolute spelling hit the relative one's __FILE__"
grep -q "$T/src/f.cu" f2.cubin || fail "the cubin lacks the absolute __FILE__"
