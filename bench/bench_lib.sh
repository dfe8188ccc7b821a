# bench_lib.sh: shared by the shell benchmarks. hyperfine times whole
# processes; results are printed as JSON lines (median, mean, stddev in ms).
set -eu
: "${CUBINCACHE:?run through meson test --benchmark}"
NVCC_REAL=${NVCC_REAL:-/usr/local/cuda/bin/nvcc}
B=$(mktemp -d /tmp/cbc-bench.XXXXXX)
trap 'rm -rf "$B"' EXIT
export CUBINCACHE_DIR="$B/cache" NO_COLOR=1
unset CUDA_COMPUTE_CAP NVCC_PREPEND_FLAGS NVCC_APPEND_FLAGS
command -v hyperfine >/dev/null || { echo "hyperfine is not installed (apt-get install hyperfine)" >&2; exit 77; }

# measure NAME RUNS WARMUP COMMAND: one JSON line (wall time; CPU is
# user + system, means). HF_IGNORE_EXIT=1: a non-zero exit is the answer
# measured (lint with findings), not a failure.
measure() {
    local name=$1 runs=$2 warm=$3; shift 3
    local ign=()
    [ "${HF_IGNORE_EXIT:-}" = 1 ] && ign=(-i)
    hyperfine -N -s none "${ign[@]}" --runs "$runs" --warmup "$warm" --export-json "$B/h.json" "$*" > /dev/null 2>&1 ||
        hyperfine --shell=none "${ign[@]}" --runs "$runs" --warmup "$warm" --export-json "$B/h.json" "$*" > /dev/null
    emit "$name"
}

# measure_prep NAME RUNS PREPARE COMMAND: as measure, PREPARE before each run
measure_prep() {
    local name=$1 runs=$2 prep=$3; shift 3
    hyperfine -N -s none --runs "$runs" --prepare "$prep" --export-json "$B/h.json" "$*" > /dev/null 2>&1 ||
        hyperfine --shell=none --runs "$runs" --prepare "$prep" --export-json "$B/h.json" "$*" > /dev/null
    emit "$name"
}

emit() {
    python3 - "$1" "$B/h.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))["results"][0]
print(json.dumps({"bench": sys.argv[1], "median_ms": r["median"] * 1e3, "mean_ms": r["mean"] * 1e3,
                  "stddev_ms": (r["stddev"] or 0) * 1e3, "runs": len(r["times"]),
                  "cpu_ms": ((r.get("user") or 0) + (r.get("system") or 0)) * 1e3,
                  "command": r["command"]}))
PY
}

kernel() { # kernel DIR NAME: a two-kernel source with a header
    mkdir -p "$1"
    printf '__device__ inline float sq(float v) { return v * v; }\n' > "$1/kh.cuh"
    cat > "$1/$2.cu" <<CU
#include "kh.cuh"
extern "C" __global__ void ${2}_scale(float *x, float a, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = sq(x[i]) * a; }
extern "C" __global__ void ${2}_axpy(float *y, const float *x, float a, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }
CU
}
