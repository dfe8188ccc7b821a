#!/usr/bin/env bash
# check.sh: `cubincache check | inspect | select | devices` on real bundles
# and binaries: each verdict (ok, stale naming the header, missing,
# mislabeled, corrupt, orphan, the arch environment), the seed's mislabeled
# cubin and lying manifest, "will this run on sm_XY", and exit codes.
. "$(dirname "$0")/lib.sh"
make_kernel "$T/src"
cd "$T/src"
make_counting_nvcc
export NVCC="$T/nvcc-count"
B=(-q -o "$T/b" -n kern k.cu -- -O3)
C="$CUBINCACHE"

note "a fresh bundle is ok, and checking it runs no nvcc"
expect_exit 0 "$C" build -a 89,90 "${B[@]}"
reset_nvcc_log
expect_out 0 "OK           sm_90     kern.sm_90.cubin: current" "$C" check "$T/b"
[ "$(nvcc_runs)" = 0 ] || fail "check ran nvcc: $(cat "$T/nvcc.log")"
expect_out 0 "2 checked, 0 problems" "$C" check "$T/b/kern.manifest.json"

note "stale after editing a header the kernel includes, naming that header"
cp kh.cuh kh.cuh.orig
echo '// edited' >> kh.cuh
expect_out 1 "STALE        sm_89     kern.sm_89.cubin: dependency '$T/src/kh.cuh' changed" "$C" check "$T/b"
cp kh.cuh.orig kh.cuh
expect_out 1 "NVCC_APPEND_FLAGS changed" env NVCC_APPEND_FLAGS=-lineinfo "$C" check "$T/b"
expect_exit 0 "$C" check "$T/b"

note "one directory, two bundles sharing a header, built by two nvcc: each judged by its own"
mkdir -p "$T/two"
printf '#include "kh.cuh"\n__global__ void k2(float *x) { x[0] = sq(x[1]); }\n' > k2.cu
cp "$T/nvcc-count" "$T/nvcc-other"
sleep 1.1 # the toolchain's identity is recorded only once its files are older than a tick
expect_exit 0 "$C" build -q -a 90 -o "$T/two" -n one k.cu
expect_exit 0 env NVCC="$T/nvcc-other" "$C" build -q -a 90 -o "$T/two" -n other k2.cu
expect_out 0 "2 checked, 0 problems" "$C" check "$T/two"
echo '// edited' >> kh.cuh
expect_out 1 "STALE        sm_90     one.sm_90.cubin: dependency '$T/src/kh.cuh' changed" "$C" check "$T/two"
grep -q "^STALE        sm_90     other.sm_90.cubin: dependency '$T/src/kh.cuh' changed" "$T/last.out" ||
    fail "the second bundle sharing the header is not stale: $(cat "$T/last.out")"
cp kh.cuh.orig kh.cuh
expect_out 0 "2 checked, 0 problems" "$C" check "$T/two"
echo '# another nvcc now' >> "$T/nvcc-other"
expect_out 1 "STALE        sm_90     other.sm_90.cubin: nvcc" "$C" check "$T/two"
grep -q "^OK           sm_90     one.sm_90.cubin: current" "$T/last.out" ||
    fail "a change to one bundle's nvcc made the other stale: $(cat "$T/last.out")"
rm -rf "$T/two"

note "the seed's file: an sm_89 cubin under the sm_90 name"
cp "$T/b/kern.sm_90.cubin" "$T/sm90.keep"
cp "$T/b/kern.sm_89.cubin" "$T/b/kern.sm_90.cubin"
expect_out 1 "MISLABELED   sm_90     kern.sm_90.cubin: '$T/b/kern.sm_90.cubin' is labelled sm_90 but holds sm_89 code" "$C" check "$T/b"

note "...and a manifest lying the same way"
h90=$(grep -A3 '"file":	"kern.sm_90.cubin"' "$T/b/kern.manifest.json" | sed -n 's/.*"xxh3":	"\([0-9a-f]*\)".*/\1/p')
h89=$(grep -A3 '"file":	"kern.sm_89.cubin"' "$T/b/kern.manifest.json" | sed -n 's/.*"xxh3":	"\([0-9a-f]*\)".*/\1/p')
[ -n "$h90" ] && [ -n "$h89" ] || fail "could not read hashes from the manifest"
sed -i "0,/\"xxh3\":	\"$h90\"/s//\"xxh3\":	\"$h89\"/" "$T/b/kern.manifest.json"
expect_out 1 "MISLABELED" "$C" check "$T/b"
grep -q "holds sm_89 code" "$T/last.out" || fail "lying manifest not reported: $(cat "$T/last.out")"

note "a standalone cubin whose name lies"
cp "$T/b/kern.sm_89.cubin" "$T/loose.sm_90.cubin"
expect_out 1 "MISLABELED   sm_90     loose.sm_90.cubin" "$C" check "$T/loose.sm_90.cubin"

note "missing, corrupt and orphan"
expect_exit 0 "$C" build -a 89,90 "${B[@]}"
cp "$T/b/kern.sm_89.cubin" "$T/b/kern.sm_75.cubin"
rm "$T/b/kern.sm_90.cubin"
head -c 300 "$T/sm90.keep" > "$T/b/kern.sm_89.cubin"
expect_out 1 "MISSING      sm_90     kern.sm_90.cubin: the manifest names kern.sm_90.cubin, which does not exist" "$C" check "$T/b"
grep -q "^CORRUPT      sm_89     kern.sm_89.cubin: unparseable" "$T/last.out" || fail "corrupt: $(cat "$T/last.out")"
grep -q "^ORPHAN       -         kern.sm_75.cubin: no manifest" "$T/last.out" || fail "orphan: $(cat "$T/last.out")"
grep -q "labelled sm_75 but holds sm_89" "$T/last.out" || fail "orphan label: $(cat "$T/last.out")"
rm "$T/b/kern.sm_75.cubin"
expect_exit 0 "$C" build -a 89,90 "${B[@]}"
expect_out 1 "MISSING      sm_100    kern.manifest.json: asked for by --arch 89,100: kern has no sm_100" "$C" check --arch 89,100 "$T/b"

note "the arch environment: a bundle built for CUDA_COMPUTE_CAP=89, checked with 90"
rm -rf "$T/b"
expect_exit 0 env CUDA_COMPUTE_CAP=89 "$C" build "${B[@]}"
expect_exit 0 env CUDA_COMPUTE_CAP=89 "$C" check "$T/b"
expect_out 1 "STALE        sm_89     kern.sm_89.cubin: arch environment changed: CUDA_COMPUTE_CAP 89 -> 90" env CUDA_COMPUTE_CAP=90 "$C" check "$T/b"
grep -q "^MISSING      sm_90" "$T/last.out" || fail "sm_90 not missing: $(cat "$T/last.out")"

note "--json: one object per entry and a summary"
expect_out 1 '"status":"stale"' env CUDA_COMPUTE_CAP=90 "$C" check --json "$T/b"
grep -q '^{"summary":{"ok":0,"stale":1,"missing":1' "$T/last.out" || fail "summary: $(cat "$T/last.out")"
[ "$(grep -c '^{' "$T/last.out")" = 3 ] || fail "expected 3 JSON lines: $(cat "$T/last.out")"

note "will this binary run on sm_XY?"
printf '__global__ void k(float *x) { x[0] = 1; }\nint main() { k<<<1, 1>>>(0); return 0; }\n' > host.cu
"$NVCC_REAL" -arch=sm_90 -o "$T/host.exe" host.cu || fail "nvcc host build"
"$NVCC_REAL" -fatbin -gencode arch=compute_86,code=sm_86 -gencode arch=compute_89,code=sm_89 -o "$T/f.fatbin" k.cu || fail "nvcc fatbin"
expect_out 0 "RUNS         sm_90     host.exe: runs (sm_90 SASS)" "$C" check --arch 90 "$T/host.exe"
expect_out 0 "RUNS-JIT     sm_100    host.exe: runs through PTX JIT from compute_90 (needs a driver for PTX ISA 9.0 or newer)" "$C" check --arch 100 "$T/host.exe"
expect_out 1 "WILL-NOT-RUN sm_90     f.fatbin: will not run on compute capability 9.0: has sm_86, sm_89 and no PTX" "$C" check --arch 86,90 "$T/f.fatbin"
grep -q "^RUNS         sm_86" "$T/last.out" || fail "sm_86 should run"
expect_out 1 "newer than the driver's 8.7" "$C" check --arch 100 --cuda-driver 12.8 "$T/host.exe"

note "a program with two modules runs only where both have an image"
printf '__global__ void ka(float *x) { x[0] = 1; }\nvoid run_a() { ka<<<1, 1>>>(0); }\n' > ma.cu
printf '__global__ void kb(float *x) { x[0] = 2; }\nvoid run_a();\nint main() { run_a(); kb<<<1, 1>>>(0); return 0; }\n' > mb.cu
"$NVCC_REAL" -c -gencode arch=compute_90,code=sm_90 -o "$T/ma.o" ma.cu || fail "nvcc ma"
"$NVCC_REAL" -c -gencode arch=compute_86,code=sm_86 -o "$T/mb.o" mb.cu || fail "nvcc mb"
"$NVCC_REAL" -o "$T/two.exe" "$T/ma.o" "$T/mb.o" || fail "nvcc link"
expect_out 1 "WILL-NOT-RUN sm_90     two.exe: fatbin container 2 of .nv_fatbin: will not run on compute capability 9.0: has sm_86 and no PTX" "$C" check --arch 90 "$T/two.exe"
expect_out 1 "WILL-NOT-RUN sm_86     two.exe: fatbin container 1 of .nv_fatbin" "$C" check --arch 86 "$T/two.exe"

note "a program carrying embedded bundles: check, inspect and select read .cbc_bundle"
expect_exit 0 "$C" build -q -a 86,90 -o "$T/e1" -n emb k.cu
expect_exit 0 "$C" build -q -a 86 -o "$T/e2" -n old k.cu
expect_exit 0 "$C" embed -o "$T/emb.c" "$T/e1/emb.manifest.json"
expect_exit 0 "$C" embed -o "$T/old.c" "$T/e2/old.manifest.json"
cat > "$T/emain.c" <<'EOF_C'
#include <cubincache/loader.h>
extern const struct cbc_embedded_bundle cbc_bundle_emb;
int main(void) { return cbc_bundle_emb.n == 2 ? 0 : 1; }
EOF_C
cc -I"$SRCDIR/include" -o "$T/emb.exe" "$T/emain.c" "$T/emb.c" || fail "cc emb.exe"
cc -I"$SRCDIR/include" -o "$T/both.exe" "$T/emain.c" "$T/emb.c" "$T/old.c" || fail "cc both.exe"
expect_out 0 "RUNS         sm_90     emb.exe: runs (sm_90 SASS)" "$C" check --arch 86,90 "$T/emb.exe"
expect_out 1 "WILL-NOT-RUN sm_80     emb.exe: will not run on compute capability 8.0: has sm_86, sm_90 and no PTX" "$C" check --arch 80 "$T/emb.exe"
expect_out 0 "bundle emb            SASS   sm_90" "$C" inspect "$T/emb.exe"
grep -q "kernels: scale" "$T/last.out" || fail "inspect lists no kernels: $(cat "$T/last.out")"
expect_out 0 '"bundle":"emb"' "$C" inspect --json "$T/emb.exe"
expect_out 0 "sm_90 (image 1 at" "$C" select --cc 9.0 "$T/emb.exe"
expect_out 1 "WILL-NOT-RUN sm_90     both.exe: embedded bundle 'old': will not run on compute capability 9.0: has sm_86 and no PTX" "$C" check --arch 90 "$T/both.exe"
expect_out 0 "RUNS         sm_86     both.exe: runs: all 2 modules with kernels have SASS for it" "$C" check --arch 86 "$T/both.exe"
# linked by nvcc, the program also gets fatbin modules without kernels (a
# host-only .cu and the device-link one, both sm_75): they do not count
printf 'int host_only(int v) { return v + 1; }\n' > hostonly.cu
"$NVCC_REAL" -I"$SRCDIR/include" -o "$T/mixed.exe" hostonly.cu "$T/emain.c" "$T/emb.c" || fail "nvcc mixed.exe"
expect_out 0 "RUNS         sm_90     mixed.exe: runs (sm_90 SASS)" "$C" check --arch 90 "$T/mixed.exe"
# corrupt one byte of the sm_90 image; relabel the sm_86 one as sm_89
python3 - "$T/emb.exe" "$T/corrupt.exe" "$T/relabel.exe" <<'EOF_PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
r = d.find(b'CBCBNDL\x01')
n, ns = struct.unpack_from('<II', d, r + 16)
descs = [r + 24 + ns + 64 * i for i in range(n)]
tg = {bytes(d[x:x + 16]).rstrip(b'\0'): x for x in descs}
c = bytearray(d)
off, size = struct.unpack_from('<QQ', c, tg[b'sm_90'] + 16)
c[r + off + size // 2] ^= 0xff
open(sys.argv[2], 'wb').write(c)
m = bytearray(d)
m[tg[b'sm_86']:tg[b'sm_86'] + 5] = b'sm_89'
open(sys.argv[3], 'wb').write(m)
EOF_PY
expect_out 1 "CORRUPT" "$C" check --arch 90 "$T/corrupt.exe"
grep -q "image sm_90 of embedded bundle 'emb' is corrupt: its content hash" "$T/last.out" || fail "corrupt: $(cat "$T/last.out")"
expect_out 1 "MISLABELED" "$C" check "$T/relabel.exe"
grep -q "image sm_89 of embedded bundle 'emb' is mislabeled: .*holds sm_86 code" "$T/last.out" || fail "relabel: $(cat "$T/last.out")"
expect_out 1 "PROBLEM: '$T/corrupt.exe': offset" "$C" inspect "$T/corrupt.exe"

note "select answers with the loader's policy"
expect_exit 0 "$C" build -a 86,90,compute_80 "${B[@]}"
expect_out 0 "kern.manifest.json: sm_90 (kern.sm_90.cubin): sm_90 SASS" "$C" select --cc 9.0 "$T/b"
expect_out 0 "compute_80 (kern.compute_80.ptx): PTX JIT" "$C" select --cc 8.9 "$T/b"
expect_out 0 "sm_86 (kern.sm_86.cubin)" "$C" select --cc 8.9 --prefer-binary "$T/b"
expect_out 1 "none: will not run on compute capability 9.0" "$C" select --cc 90 "$T/f.fatbin"
expect_out 2 "--cc is required" "$C" select "$T/b"

note "inspect"
expect_out 0 "kernels: scale" "$C" inspect "$T/b/kern.sm_90.cubin"
expect_out 0 "PTX    compute_90" "$C" inspect "$T/host.exe"
expect_out 2 "offset" "$C" inspect "$SRCDIR/tests/data/lying_entry.fatbin"
expect_out 2 "cannot open" "$C" inspect "$T/nonexistent"

note "usage and unreadable input exit 2; no driver exits 4"
expect_out 2 "no PATH" "$C" check
expect_out 2 "cannot open" "$C" check "$T/nonexistent.cubin"
echo '{"format": "cubincache-manifest", "version": 1' > "$T/bad.manifest.json"
expect_out 2 "not valid JSON" "$C" check "$T/bad.manifest.json"
expect_out 2 "--cuda-driver" "$C" check --cuda-driver banana "$T/b"
# a libcuda.so.1 that is no library, found first on LD_LIBRARY_PATH: no driver, even on a GPU machine
mkdir -p "$T/nodriver" && echo "not a library" > "$T/nodriver/libcuda.so.1"
expect_out 4 "cannot load the CUDA driver (libcuda.so.1)" env LD_LIBRARY_PATH="$T/nodriver" "$C" devices
echo ok
