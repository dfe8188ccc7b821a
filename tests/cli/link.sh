#!/usr/bin/env bash
# link.sh: bundles of several sources (and one source with -rdc=true): each
# source compiled with -rdc for each target, the units device-linked (the
# device runtime included, for dynamic parallelism) into one executable
# cubin per target, byte-identical to nvcc -rdc + nvcc -dlink -cubin; the
# units and the links cached apart, so an edit recompiles only its source;
# the manifest names every source and check judges linked images like any
# other; a missing definition fails with nvlink's message and writes
# nothing; PTX targets, a source given twice and a tampered linked_sources
# are refused with the field named.
. "$(dirname "$0")/lib.sh"
C="$CUBINCACHE"
mkdir -p "$T/src" && cd "$T/src"
cat > a.cu <<'CU'
#include "ah.cuh"
__device__ float helper(float x);
extern "C" __global__ void child(float *x) { x[threadIdx.x] = helper(x[threadIdx.x]) + AH_BIAS; }
extern "C" __global__ void parent(float *x) { child<<<1, 32>>>(x); }
CU
printf '#define AH_BIAS 0.5f\n' > ah.cuh
printf '#include "bh.cuh"\n__device__ float helper(float x) { return BH_SCALE * x + 1.0f; }\n' > b.cu
printf '#define BH_SCALE 2.0f\n' > bh.cuh
make_counting_nvcc
export NVCC="$T/nvcc-count"
compiles() { grep -v cubincache-probe.cu "$T/nvcc.log" | grep -c -- ' -cubin .*-MD'; }
links() { grep -c -- ' -dlink ' "$T/nvcc.log"; }

note "two sources, two targets: four units, two links, each image executable"
reset_nvcc_log
expect_exit 0 "$C" build -a 80,90 -o "$T/out" -n dp --depfile "$T/dp.d" a.cu b.cu
[ "$(compiles)" = 4 ] && [ "$(links)" = 2 ] || fail "ran $(compiles) compiles, $(links) links"
for a in 80 90; do
    [ "$(sm_of "$T/out/dp.sm_$a.cubin")" = "$a" ] || fail "dp.sm_$a.cubin is not sm_$a"
    expect_out 0 "executable" "$C" inspect "$T/out/dp.sm_$a.cubin"
    grep -q "needs device link" "$T/last.out" && fail "dp.sm_$a.cubin still needs a link"
done
grep -q '"linked_sources"' "$T/out/dp.manifest.json" || fail "the manifest names no linked sources"
grep -qF "$T/src/b.cu" "$T/out/dp.manifest.json" || fail "the manifest lacks b.cu"
for f in a.cu b.cu ah.cuh bh.cuh; do grep -qF "$T/src/$f" "$T/dp.d" || fail "depfile lacks $f"; done
expect_out 0 "OK           sm_90     dp.sm_90.cubin: current" "$C" check "$T/out"
expect_out 0 "OK           sm_90" "$C" check --arch 80,90 "$T/out"

note "the image equals nvcc -rdc per source, then nvcc -dlink -cubin"
"$NVCC_REAL" -rdc=true -cubin -gencode arch=compute_90,code=sm_90 a.cu -o "$T/ra.cubin" &&
"$NVCC_REAL" -rdc=true -cubin -gencode arch=compute_90,code=sm_90 b.cu -o "$T/rb.cubin" &&
"$NVCC_REAL" -dlink -cubin -gencode arch=compute_90,code=sm_90 "$T/ra.cubin" "$T/rb.cubin" \
    -o "$T/ref.cubin" || fail "plain nvcc"
cmp "$T/ref.cubin" "$T/out/dp.sm_90.cubin" || fail "the linked image differs from nvcc's"

note "again: every unit and every link from the cache, nothing rewritten"
reset_nvcc_log
before=$(mtime_of "$T/out/dp.manifest.json")
expect_out 0 "2 hit, 0 miss; 0 images rewritten; manifest unchanged" "$C" build -v -a 80,90 -o "$T/out" -n dp a.cu b.cu
[ "$(compiles)" = 0 ] && [ "$(links)" = 0 ] || fail "a hit ran nvcc: $(cat "$T/nvcc.log")"
[ "$before" = "$(mtime_of "$T/out/dp.manifest.json")" ] || fail "a hit rewrote the manifest"

note "a header of b.cu only: check names it; the rebuild compiles b.cu alone, then links"
sed -i 's/2.0f/3.0f/' bh.cuh
expect_out 1 "dependency '$T/src/bh.cuh' changed" "$C" check "$T/out"
reset_nvcc_log
expect_exit 0 "$C" build -a 80,90 -o "$T/out" -n dp a.cu b.cu
[ "$(compiles)" = 2 ] && [ "$(links)" = 2 ] || fail "ran $(compiles) compiles, $(links) links"
grep -v cubincache-probe.cu "$T/nvcc.log" | grep -- ' -cubin ' | grep -q ' a.cu\| /[^ ]*/a.cu' &&
    fail "a.cu was recompiled: $(cat "$T/nvcc.log")"
expect_out 0 "current" "$C" check "$T/out"
"$NVCC_REAL" -rdc=true -cubin -gencode arch=compute_90,code=sm_90 b.cu -o "$T/rb.cubin" &&
"$NVCC_REAL" -dlink -cubin -gencode arch=compute_90,code=sm_90 "$T/ra.cubin" "$T/rb.cubin" \
    -o "$T/ref.cubin" || fail "plain nvcc"
cmp "$T/ref.cubin" "$T/out/dp.sm_90.cubin" || fail "after the edit the image differs from nvcc's"

note "a definition in no source: nvlink's message, exit 1, the bundle as it was"
cp "$T/out/dp.sm_90.cubin" "$T/keep.cubin"
printf '__device__ float nothing(float x);\n__device__ float helper(float x) { return nothing(x); }\n' > b.cu
expect_out 1 "Undefined reference" "$C" build -a 80,90 -o "$T/out" -n dp a.cu b.cu
grep -q "the device link for sm_" "$T/last.out" || fail "no cubincache error: $(cat "$T/last.out")"
cmp "$T/keep.cubin" "$T/out/dp.sm_90.cubin" || fail "a failed link changed the bundle"
expect_out 1 "STALE" "$C" check "$T/out"

note "one source with -rdc=true: dynamic parallelism, linked with the device runtime"
printf '__global__ void kid(int *o) { o[threadIdx.x] = 1; }\n__global__ void dad(int *o) { kid<<<1, 4>>>(o); }\n' > dp1.cu
expect_exit 0 "$C" build -a 90 -o "$T/one" dp1.cu -- -rdc=true
expect_out 0 "__cudaCDP2LaunchDeviceV2" "$C" inspect "$T/one/dp1.sm_90.cubin"
grep -q "needs device link" "$T/last.out" && fail "the one-source link left references"
expect_out 0 "current" "$C" check "$T/one"

note "refused: PTX targets of linked code, a source twice"
expect_out 2 "holds linked SASS only" "$C" build -a 90+PTX -o "$T/p" -n p a.cu b.cu
[ ! -e "$T/p" ] || fail "a refused build created its out dir"
expect_out 2 "is given twice" "$C" build -a 90 -o "$T/p" -n p a.cu ./a.cu

note "a tampered linked_sources is an error naming the field"
sed -i 's/"linked_sources":\t\[/"linked_sources":\t[7, /' "$T/one/dp1.manifest.json"
grep -q '"linked_sources":	\[7, ' "$T/one/dp1.manifest.json" || fail "the test did not tamper"
expect_out 2 "linked_sources" "$C" check "$T/one"
echo ok
