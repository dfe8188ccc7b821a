#!/usr/bin/env bash
# verdicts.sh: what the deploy gate says of -rdc output, relocatable
# cubins and debug builds ("Trust II" findings 5 to 7; findings 1 to 4 are
# members of the corpus, tests/cli/corpus.sh).
. "$(dirname "$0")/lib.sh"
C="$CUBINCACHE"
mkdir -p "$T/src" && cd "$T/src"
cat > shm.cu <<'CU'
__device__ int g_dev[256];
extern "C" __global__ void k(int *out)
{
    __shared__ int s[512];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % 512] + g_dev[threadIdx.x % 256];
}
CU
cat > calls.cu <<'CU'
__device__ int elsewhere(int i);
extern "C" __global__ void k(int *out) { out[threadIdx.x] = elsewhere(threadIdx.x); }
CU

note "5. valid -rdc output is not corrupt: CUDA sections that occupy no file space"
"$NVCC_REAL" -cubin -rdc=true -arch=sm_86 -o "$T/shm_rdc.cubin" shm.cu || fail "nvcc -rdc"
"$NVCC_REAL" -cubin -rdc=true -G -arch=sm_90 -o "$T/shm_rdc_g.cubin" shm.cu || fail "nvcc -rdc -G"
expect_out 0 "OK" "$C" check "$T/shm_rdc.cubin"
expect_out 0 "OK" "$C" check "$T/shm_rdc_g.cubin"
expect_out 0 "RUNS         sm_86     shm_rdc.cubin: runs (sm_86 SASS)" "$C" check --arch 86 "$T/shm_rdc.cubin"
expect_out 0 "relocatable (-rdc), but it references nothing it does not define" "$C" inspect "$T/shm_rdc.cubin"
note "   ... and build accepts it"
expect_exit 0 "$C" build -q -a 86,90 -o "$T/rdc" shm.cu -- -rdc=true
expect_out 0 "2 checked, 0 problems" "$C" check "$T/rdc"
[ "$(sm_of "$T/rdc/shm.sm_90.cubin")" = 90 ] || fail "rdc build output"

note "6. a relocatable cubin that needs a device link: NEEDS-DLINK, never picked"
"$NVCC_REAL" -cubin -rdc=true -arch=sm_90 -o "$T/calls.cubin" calls.cu || fail "nvcc calls"
expect_out 1 "NEEDS-DLINK  sm_90     calls.cubin: relocatable code (-rdc) referencing 1 symbol it does not define (_Z9elsewherei)" "$C" check "$T/calls.cubin"
expect_out 1 "NEEDS-DLINK" "$C" check --arch 90 "$T/calls.cubin"
expect_out 1 "needs a device link" "$C" select --cc 9.0 "$T/calls.cubin"
expect_out 0 "relocatable: needs device link (undefined: _Z9elsewherei)" "$C" inspect "$T/calls.cubin"
expect_out 0 '"needs_dlink":true' "$C" inspect --json "$T/calls.cubin"
# with -rdc=true build device-links; the definition is in no source of the bundle
expect_out 1 "the device link for sm_90 of 'calls' failed" "$C" build -a 90 -o "$T/calls" calls.cu -- -rdc=true
[ ! -e "$T/calls/calls.sm_90.cubin" ] || fail "build published a cubin that needs a device link"

note "7. inspect tells -G, -lineinfo and neither apart"
for a in 86 90 120; do
    "$NVCC_REAL" -cubin -arch=sm_$a -o "$T/p$a.cubin" shm.cu
    "$NVCC_REAL" -cubin -arch=sm_$a -lineinfo -o "$T/l$a.cubin" shm.cu
    "$NVCC_REAL" -cubin -arch=sm_$a -G -o "$T/g$a.cubin" shm.cu
    expect_out 0 "debug (-G)" "$C" inspect "$T/g$a.cubin"
    expect_out 0 "line info (-lineinfo)" "$C" inspect "$T/l$a.cubin"
    grep -q "debug (-G)" "$T/last.out" && fail "sm_$a -lineinfo called -G"
    expect_out 0 "cubin sm_$a" "$C" inspect "$T/p$a.cubin"
    grep -qE "debug|line info" "$T/last.out" && fail "sm_$a plain build called debug: $(cat "$T/last.out")"
done
expect_out 0 '"lineinfo":true' "$C" inspect --json "$T/l90.cubin"
expect_out 0 '"debug":false' "$C" inspect --json "$T/l90.cubin"
echo ok
