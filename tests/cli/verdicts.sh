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

note "8. the libraries a program needs are judged by the dispatch rule (program.h), and say so"
cat > la.cu <<'CU'
extern "C" __global__ void k_la(int *o) { o[threadIdx.x] = 1; }
extern "C" void run_la(int *d) { k_la<<<1, 32>>>(d); }
CU
cat > lb.cu <<'CU'
extern "C" __global__ void k_lb(int *o) { o[threadIdx.x] = 2; }
extern "C" void run_lb(int *d) { k_lb<<<1, 32>>>(d); }
CU
cat > use.cu <<'CU'
extern "C" void run_la(int *d);
extern "C" void run_lb(int *d);
int main() { run_la(0); run_lb(0); return 0; }
CU
mklib() { # mklib NAME "A gencode" "B gencode" [nvcc options]
    local n=$1 a=$2 b=$3; shift 3
    "$NVCC_REAL" -Xcompiler -fPIC -c $a "$@" -o "$T/$n.a.o" la.cu &&
        "$NVCC_REAL" -Xcompiler -fPIC -c $b "$@" -o "$T/$n.b.o" lb.cu &&
        "$NVCC_REAL" -shared "$T/$n.a.o" "$T/$n.b.o" -o "$T/lib$n.so" &&
        "$NVCC_REAL" use.cu -L"$T" -l"$n" -Xlinker -rpath -Xlinker "$T" -o "$T/use_$n" ||
        fail "building lib$n.so"
}
sm() { echo "-gencode arch=compute_$1,code=sm_$1"; }
mklib mix "$(sm 86)" "$(sm 90)" --compress-mode=none
expect_out 0 "PARTIAL      sm_90     use_mix: accepted: it has no GPU code of its own; 1 library it needs has modules only for other GPUs too (libmix.so 1 of 2 modules with code for 9.0)" "$C" check --arch 90 "$T/use_mix"
grep -q "libmix.so \[dispatch\]: PARTIAL (accepted)" "$T/last.out" || fail "no dispatch line: $(cat "$T/last.out")"
grep -q "^ *k_la$" "$T/last.out" || fail "the accepted PARTIAL does not name k_la: $(cat "$T/last.out")"
expect_out 1 "PARTIAL      sm_90     use_mix: libmix.so, needed by use_mix: 1 of 2 modules with kernels (1 kernel) cannot launch" "$C" check --arch 90 --libs per-module "$T/use_mix"
expect_out 1 "libmix.so [per-module]: PARTIAL" "$C" check --arch 90 --strict-lib libmix.so "$T/use_mix"
expect_out 0 "none: will not run on compute capability 9.0: has sm_86 and no PTX (accepted: libmix.so is judged by the dispatch rule)" "$C" select --cc 9.0 "$T/use_mix"
expect_out 1 "libmix.so [per-module]: partial" "$C" select --cc 9.0 --libs per-module "$T/use_mix"
expect_out 1 "PARTIAL      sm_90     libmix.so: 1 of 2 modules" "$C" check --arch 90 "$T/libmix.so"
expect_out 1 "WILL-NOT-RUN sm_80     use_mix: libmix.so, needed by use_mix: dispatch rule: none of its 2 modules with kernels has code for 8.0" "$C" check --arch 80 "$T/use_mix"
note "   ... a module the driver would pick that fails there is a failure of the library"
# the sm_90 image of k_lb's module, relabelled inside: its ELF says sm_80
python3 - "$T/libmix.so" "$T/libbad.so" <<'EOF_PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
n = 0
p = d.find(b'\x7fELF', 64)
while p >= 0:
    if struct.unpack_from('<H', d, p + 18)[0] == 190 and d[p + 49] == 90:
        d[p + 49] = 80
        n += 1
    p = d.find(b'\x7fELF', p + 4)
assert n == 1, n
open(sys.argv[2], 'wb').write(d)
EOF_PY
cp "$T/libbad.so" "$T/libmix.so"
expect_out 1 "dispatch rule: fatbin container 2 of .nv_fatbin has code for 9.0 but it fails there: its sm_90 image (at" "$C" check --arch 90 "$T/use_mix"
grep -q "holds sm_80 code: the driver picks it by its header and refuses it (CUDA_ERROR_INVALID_SOURCE)" "$T/last.out" || fail "broken: $(cat "$T/last.out")"
expect_out 1 "MISLABELED" "$C" check --arch 90 "$T/libbad.so"
expect_out 1 "holds sm_80 code" "$C" check "$T/libbad.so"
mklib ptx "$(sm 86)" "-gencode arch=compute_90,code=compute_90"
expect_out 0 "accepted" "$C" check --arch 90 "$T/use_ptx"
expect_out 1 "dispatch rule: fatbin container 2 of .nv_fatbin has code for 9.0 but it fails there" "$C" check --arch 90 --cuda-driver 12.8 "$T/use_ptx"
note "   ... and a library that loads its fatbins itself is judged by them"
"$NVCC_REAL" -fatbin $(sm 90) -o "$T/self.fatbin" lb.cu || fail "nvcc -fatbin"
python3 - "$T/self.fatbin" "$T/self.c" <<'EOF_PY'
import sys
b = open(sys.argv[1], 'rb').read()
with open(sys.argv[2], 'w') as f:
    f.write('__attribute__((aligned(8))) const unsigned char blob[%d] = {%s};\n' % (len(b), ','.join(str(x) for x in b)))
    f.write('const void *self_blob(void) { return blob; }\n')
EOF_PY
cc -shared -fPIC -o "$T/libself.so" "$T/self.c" || fail "cc libself.so"
printf 'const void *self_blob(void);\nint main(void) { return self_blob() == 0; }\n' > "$T/useself.c"
cc -o "$T/useself" "$T/useself.c" -L"$T" -lself -Wl,-rpath,"$T" || fail "cc useself"
expect_out 0 "RUNS         sm_90     useself: libself.so, needed by useself: runs: dispatch rule: no module the CUDA runtime registers has kernels; 1 of the 1 fatbins it loads itself has code for 9.0" "$C" check --arch 90 "$T/useself"
expect_out 1 "WILL-NOT-RUN sm_80     useself: libself.so, needed by useself: dispatch rule: no module the CUDA runtime registers has kernels; 0 of the 1 fatbins it loads itself have code for 8.0" "$C" check --arch 80 "$T/useself"
expect_out 0 '"self_loaded":1,"self_loaded_with_code":1' "$C" check --json --arch 90 "$T/useself"
note "   ... but only a library that registers no module with kernels: else those are its code"
cc -c -fPIC -o "$T/self.o" "$T/self.c" || fail "cc self.o"
"$NVCC_REAL" -Xcompiler -fPIC -c $(sm 86) -o "$T/both.b.o" lb.cu || fail "nvcc both.b.o"
"$NVCC_REAL" -shared "$T/both.b.o" "$T/self.o" -o "$T/libboth.so" || fail "nvcc libboth.so"
expect_out 1 "WILL-NOT-RUN sm_90     libboth.so: will not run on compute capability 9.0: has sm_86 and no PTX" "$C" check --arch 90 "$T/libboth.so"
grep -q "fatbins it loads itself" "$T/last.out" && fail "self-loaded fatbins judged beside registered ones: $(cat "$T/last.out")"
echo ok
