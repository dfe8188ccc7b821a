#!/usr/bin/env bash
# explain.sh: --explain names the input whose change missed the cache, and
# nothing that is not an input (a touch, an unrelated variable) misses.
. "$(dirname "$0")/lib.sh"
make_kernel "$T/src"
cd "$T/src"
make_counting_nvcc
export NVCC="$T/nvcc-count"
b() { "$CUBINCACHE" build --explain -o "$T/out" k.cu -- -O3 "$@"; }

expect_out 0 "sm_89: miss: no previous build" env CUDA_COMPUTE_CAP=89 "$CUBINCACHE" build --explain -o "$T/out" k.cu -- -O3
grep -q "rule: CUDA_COMPUTE_CAP; CUDA_COMPUTE_CAP=89" "$T/last.out" || fail "arch rule not explained: $(cat "$T/last.out")"
export CUDA_COMPUTE_CAP=89

note "touching a header or setting an unrelated variable still hits, and runs no nvcc"
touch kh.cuh k.cu
reset_nvcc_log
expect_out 0 "sm_89: hit" env SOME_OTHER_VARIABLE=1 CUDA_VISIBLE_DEVICES=3 "$CUBINCACHE" build --explain -o "$T/out" k.cu -- -O3
[ "$(nvcc_runs)" = 0 ] || fail "a hit ran nvcc: $(cat "$T/nvcc.log")"

note "each input is named when it changes"
expect_out 0 "CUDA_COMPUTE_CAP 89 -> 90" env CUDA_COMPUTE_CAP=90 "$CUBINCACHE" build --explain -o "$T/out" k.cu -- -O3
reset_nvcc_log
expect_out 0 "sm_89: hit" b
[ "$(nvcc_runs)" = 0 ] || fail "going back to 89 is a pure cache hit, but nvcc ran"
echo '// edit' >> kh.cuh
expect_out 0 "dependency '$T/src/kh.cuh' changed" b
echo '// edit' >> k.cu
expect_out 0 "source '$T/src/k.cu' changed" b
expect_out 0 "flags changed: '-O3' -> '-O3 -lineinfo'" b -lineinfo
expect_out 0 "NVCC_APPEND_FLAGS changed: unset -> '-DX=1'" env NVCC_APPEND_FLAGS=-DX=1 "$CUBINCACHE" build --explain -o "$T/out" k.cu -- -O3 -lineinfo
expect_out 0 "NVCC_PREPEND_FLAGS changed" env NVCC_APPEND_FLAGS=-DX=1 NVCC_PREPEND_FLAGS=-DY=2 "$CUBINCACHE" build --explain -o "$T/out" k.cu -- -O3 -lineinfo

note "an nvcc replaced in place (same path, same version): said so, not 'X -> X'"
echo '# reinstalled' >> "$T/nvcc-count"
touch -d '1 hour ago' "$T/nvcc-count"
expect_out 0 "is another toolkit now (same path and version" env NVCC_APPEND_FLAGS=-DX=1 NVCC_PREPEND_FLAGS=-DY=2 "$CUBINCACHE" build --explain -o "$T/out" k.cu -- -O3 -lineinfo

note "cleared cache: inputs unchanged, entry gone"
"$CUBINCACHE" cache clean > /dev/null
expect_out 0 "not in this cache" env NVCC_APPEND_FLAGS=-DX=1 NVCC_PREPEND_FLAGS=-DY=2 "$CUBINCACHE" build --explain -o "$T/out" k.cu -- -O3 -lineinfo
echo ok
