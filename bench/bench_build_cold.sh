#!/usr/bin/env bash
# bench_build_cold.sh: the CPU a cold `cubincache build` costs against plain
# nvcc making the same cubins: bench/data/launcher_kernels.cu (18 templated
# kernels) for sm_75, 80, 86 and 90, -O3. Plain: the four `nvcc -cubin`
# one after the other, no dependency file. Ours: the entries, records and
# the bundle removed before each run (the toolchain's identity kept, as on
# any machine that has built once), so every target compiles; its
# dependencies come from the preprocessing nvcc runs anyway. CPU (user +
# system) is what compares; ours compiles the targets in parallel, and with
# -j 1 one after another as plain nvcc does, which shows our own work apart
# from what running compiles side by side costs on the machine. The three
# run alternately (bench/alternate.py), 11 rounds.
. "$(dirname "$0")/bench_lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$B/src"
cp "$here/data/launcher_kernels.cu" "$B/src/lk.cu"
cd "$B/src"
cat > "$B/plain.sh" <<SH
for a in 75 80 86 90; do "$NVCC_REAL" -cubin -gencode arch=compute_\$a,code=sm_\$a -O3 lk.cu -o "$B/p\$a.cubin"; done
SH
"$CUBINCACHE" build -q -a 75 -o "$B/warm" lk.cu -- -O3 # the toolchain's identity, cached
keep_tools="rm -rf $B/cache/v1/objects $B/cache/v1/direct $B/cache/v1/deps $B/out"
python3 "$here/alternate.py" 11 \
    "nvcc_cold_4_cubins=bash $B/plain.sh" \
    "cubincache_build_cold_4_targets=$CUBINCACHE build -q -a 75,80,86,90 -o $B/out lk.cu -- -O3" \
    --prep "cubincache_build_cold_4_targets=$keep_tools" \
    "cubincache_build_cold_4_targets_j1=$CUBINCACHE build -q -j 1 -a 75,80,86,90 -o $B/out lk.cu -- -O3" \
    --prep "cubincache_build_cold_4_targets_j1=$keep_tools"
