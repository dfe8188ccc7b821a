#!/usr/bin/env bash
# bench_fleet.sh: a fleet of builders sharing one Redis (issue 27). Eight
# kernels of karpathy/llm.c's dev/cuda x four archs (80, 86, 89, 90) = 32
# units, compiled by builder 1 in one checkout, then by builder 2 in another
# checkout path, from another working directory, with an empty local cache
# and the warm Redis; compiles are counted by wrappers around cicc and ptxas
# in a CUDA tree of links (nvcc finds its tools beside itself), so every tool
# is counted the same way. Rows (JSON lines, bench/report.py's fleet table):
#  - cubincache build (bundle mode), each kernel one build of four targets;
#  - CMake through the launcher (CMAKE_CUDA_COMPILER_LAUNCHER=cubincache),
#    builder 2 also in a fresh build directory of the other checkout;
#  - the same CMake project through ccache 4.14 (remote storage on the same
#    Redis), without and with base_dir, and through sccache 0.16 on Redis
#    (SCCACHE_BASEDIRS);
#  - eight cold builders at once (bundle mode, one Redis, 12 units): the
#    compiles they ran together against the units (target: 1.5x or less).
# layernorm_forward.cu asserts in a kernel (its cubins hold the source's
# path as nvcc was given it) and softmax_forward.cu's device code holds
# nvcc's module id (a hash of the source's absolute path, in CCCL's
# internal names), so builder 2 must compile those 8 units; the other 24
# are the same bytes anywhere.
# LLMC_DIR: a checkout of karpathy/llm.c (exit 77 without one).
. "$(dirname "$0")/bench_lib.sh"
LLMC_DIR=${LLMC_DIR:-}
[ -n "$LLMC_DIR" ] && [ -f "$LLMC_DIR/dev/cuda/common.h" ] ||
    { echo "set LLMC_DIR to a checkout of karpathy/llm.c" >&2; exit 77; }
command -v redis-server > /dev/null || { echo "redis-server is not installed" >&2; exit 77; }
command -v cmake > /dev/null || { echo "cmake is not installed" >&2; exit 77; }
KERNELS="adamw encoder_forward gelu_forward gelu_backward layernorm_forward residual_forward
         softmax_forward crossentropy_forward"
ARCHS=80,86,89,90
trap 'redis-cli -p "$PORT" shutdown nosave > /dev/null 2>&1 || true; "${SCCACHE:-true}" --stop-server > /dev/null 2>&1 || true; rm -rf "$B"' EXIT

# a CUDA tree whose cicc and ptxas count their runs into $B/count
real=$(cd "$(dirname "$(readlink -f "$NVCC_REAL")")/.." && pwd)
FC=$B/cuda
mkdir -p "$FC/bin" "$FC/nvvm/bin"
for f in "$real"/bin/*; do ln -s "$f" "$FC/bin/"; done
for d in "$real"/*; do [ -e "$FC/$(basename "$d")" ] || ln -s "$d" "$FC/"; done
for f in "$real"/nvvm/*; do [ "$(basename "$f")" = bin ] || ln -s "$f" "$FC/nvvm/"; done
for f in "$real"/nvvm/bin/*; do ln -s "$f" "$FC/nvvm/bin/"; done
for t in bin/ptxas nvvm/bin/cicc; do
    rm "$FC/$t"
    printf '#!/bin/sh\necho %s >> "%s/count"\nexec "%s" "$@"\n' "$(basename "$t")" "$B" "$real/$t" > "$FC/$t"
    chmod +x "$FC/$t"
done
touch -d '1 hour ago' "$FC/bin/ptxas" "$FC/nvvm/bin/cicc"
NVCC=$FC/bin/nvcc
count() { if [ -f "$B/count" ]; then grep -c "^$1\$" "$B/count" || true; else echo 0; fi; }
reset_count() { : > "$B/count"; }

PORT=$((20000 + RANDOM % 40000))
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$B" --daemonize yes \
    --logfile "$B/redis.log" > /dev/null
for i in $(seq 50); do redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
URL="redis://127.0.0.1:$PORT"

# two checkouts of the kernels, at different paths, each a git checkout
tree() {
    mkdir -p "$1/dev/cuda" "$1/.git"
    for k in $KERNELS; do cp "$LLMC_DIR/dev/cuda/$k.cu" "$1/dev/cuda/"; done
    cp "$LLMC_DIR/dev/cuda/common.h" "$1/dev/cuda/"
    cat > "$1/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.24)
project(llmc_kernels LANGUAGES CUDA)
set(CMAKE_CUDA_STANDARD 17)
add_library(kernels OBJECT $(for k in $KERNELS; do printf 'dev/cuda/%s.cu ' "$k"; done))
target_compile_options(kernels PRIVATE -O3 --use_fast_math)
CM
    touch -d '1 hour ago' "$1"/dev/cuda/* "$1/CMakeLists.txt"
}
A=$B/runner-1/work/llm.c
O=$B/elsewhere/ci/job-7/llm.c
tree "$A"
tree "$O"
sleep 1.1

# row NAME SECONDS_1 SECONDS_2 CICC_2 PTXAS_2 [EXTRA_JSON]
row() {
    python3 -c 'import json, sys; a = sys.argv
print(json.dumps(dict({"bench": a[1], "builder1_s": float(a[2]), "builder2_s": float(a[3]),
      "cicc": int(a[4]), "ptxas": int(a[5]), "units": 32}, **json.loads(a[6]))))' "$@" "${6:-{\}}"
}
now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))" "$@"; }

# ---- bundle mode -------------------------------------------------------------
bundle_builder() { # DIR CACHE: every kernel, one build of four targets, from DIR
    (cd "$1" && for k in $KERNELS; do
        CUBINCACHE_DIR="$2" "$CUBINCACHE" build -q -a "$ARCHS" --remote "$URL" --nvcc "$NVCC" \
            -o "out/$k.bundle" "dev/cuda/$k.cu" -- -O3 --use_fast_math || exit 1
    done)
}
t0=$(now); bundle_builder "$A" "$B/c1"; t1=$(now)
reset_count
# builder 2: the other checkout, from a directory above it (the source spelled through it)
t2=$(now); (cd "$O/.." && for k in $KERNELS; do
    CUBINCACHE_DIR="$B/c2" "$CUBINCACHE" build -q -a "$ARCHS" --remote "$URL" --nvcc "$NVCC" \
        -o "llm.c/out/$k.bundle" "llm.c/dev/cuda/$k.cu" -- -O3 --use_fast_math || exit 1
done); t3=$(now)
row fleet_bundle "$(elapsed "$t0" "$t1")" "$(elapsed "$t2" "$t3")" "$(count cicc)" "$(count ptxas)"
redis-cli -p "$PORT" flushall > /dev/null

# ---- CMake: the launcher and the peers -----------------------------------------
cmake_builder() { # SRC BUILD LAUNCHER [ENV...]: configure and build; prints the build's seconds
    local src=$1 bld=$2 launcher=$3; shift 3
    env "$@" cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_CUDA_COMPILER="$NVCC" \
        -DCMAKE_CUDA_ARCHITECTURES="${ARCHS//,/;}" -DCMAKE_CUDA_COMPILER_LAUNCHER="$launcher" \
        > "$bld.configure.log" 2>&1 || { cat "$bld.configure.log" >&2; exit 1; }
    reset_count # CMake's compiler checks compile too: only the build's compiles count
    local s=$(now)
    env "$@" ninja -C "$bld" > "$bld.build.log" 2>&1 || { cat "$bld.build.log" >&2; exit 1; }
    elapsed "$s" "$(now)"
}
cmake_pair() { # NAME LAUNCHER ENV1 ENV2: builder 1 in A/build, builder 2 in O/build-fresh
    local name=$1 launcher=$2 e1=$3 e2=$4
    rm -rf "$A/build" "$O/build-fresh"
    local s1 s2
    s1=$(cmake_builder "$A" "$A/build" "$launcher" $e1)
    s2=$(cmake_builder "$O" "$O/build-fresh" "$launcher" $e2)
    row "$name" "$s1" "$s2" "$(count cicc)" "$(count ptxas)"
    redis-cli -p "$PORT" flushall > /dev/null
}
cmake_pair fleet_cmake_launcher "$CUBINCACHE" \
    "CUBINCACHE_DIR=$B/l1 CUBINCACHE_REMOTE=$URL" "CUBINCACHE_DIR=$B/l2 CUBINCACHE_REMOTE=$URL"
if [ -n "${CCACHE:-}" ]; then
    cmake_pair fleet_ccache "$CCACHE" "CCACHE_DIR=$B/cc1 CCACHE_REMOTE_STORAGE=$URL" \
        "CCACHE_DIR=$B/cc2 CCACHE_REMOTE_STORAGE=$URL"
    cmake_pair fleet_ccache_basedir "$CCACHE" \
        "CCACHE_DIR=$B/cb1 CCACHE_REMOTE_STORAGE=$URL CCACHE_BASEDIR=$A" \
        "CCACHE_DIR=$B/cb2 CCACHE_REMOTE_STORAGE=$URL CCACHE_BASEDIR=$O"
fi
if [ -n "${SCCACHE:-}" ]; then
    "$SCCACHE" --stop-server > /dev/null 2>&1 || true
    cmake_pair fleet_sccache "$SCCACHE" \
        "SCCACHE_REDIS_ENDPOINT=$URL SCCACHE_BASEDIRS=$A SCCACHE_DIR=$B/sc1" \
        "SCCACHE_REDIS_ENDPOINT=$URL SCCACHE_BASEDIRS=$O SCCACHE_DIR=$B/sc2"
    "$SCCACHE" --stop-server > /dev/null 2>&1 || true
fi

# ---- eight cold builders at once ------------------------------------------------
# 3 kernels x 4 archs = 12 units, eight bundle-mode builders started together,
# each with its own empty local cache and checkout, one Redis
reset_count
three="adamw gelu_forward residual_forward"
for n in 1 2 3 4 5 6 7 8; do
    tree "$B/fleet/r$n/llm.c" > /dev/null
done
sleep 1.1
s=$(now)
for n in 1 2 3 4 5 6 7 8; do
    (cd "$B/fleet/r$n/llm.c" && for k in $three; do
        CUBINCACHE_DIR="$B/fleet/c$n" "$CUBINCACHE" build -q -a "$ARCHS" --remote "$URL" \
            --nvcc "$NVCC" -o "out/$k.bundle" "dev/cuda/$k.cu" -- -O3 --use_fast_math || exit 1
    done) &
done
wait
python3 -c 'import json, sys; a = sys.argv
print(json.dumps({"bench": "fleet_eight_cold", "seconds": float(a[1]), "ptxas": int(a[2]),
                  "cicc": int(a[3]), "units": 12, "builders": 8}))' \
    "$(elapsed "$s" "$(now)")" "$(count ptxas)" "$(count cicc)"
