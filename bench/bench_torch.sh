#!/usr/bin/env bash
# bench_torch.sh: bench/bench_torch.py (the deploy gate on the PyPI torch
# wheel's libraries, against cuobjdump), as bench/run_cpu.sh runs each bench,
# with the baseline row: the cubincache of BENCH_TORCH_BASELINE_REV (default
# 6ef78fd, where issue 25 measured the gate before this work), built once
# from `git archive` into $CBC_BENCH_DATA/baseline-REV (only the
# `cubincache` target). BENCH_TORCH_BASELINE=PATH takes a cubincache already
# built; BENCH_TORCH_BASELINE_REV=none leaves the row out.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rev=${BENCH_TORCH_BASELINE_REV:-6ef78fd}
if [ "$rev" != none ] && [ -z "${BENCH_TORCH_BASELINE:-}" ]; then
    short=$(git -C "$here/.." rev-parse --short=7 "$rev^{commit}")
    data=$(mkdir -p "${CBC_BENCH_DATA:-build-bench-data}" && cd "${CBC_BENCH_DATA:-build-bench-data}" && pwd)
    b="$data/baseline-$short"
    if [ ! -x "$b/build/tools/cubincache" ]; then
        echo "bench_torch: building cubincache at $short for the baseline row ($b)" >&2
        rm -rf "$b"
        mkdir -p "$b/src"
        git -C "$here/.." archive "$short" | tar -x -C "$b/src"
        { meson setup "$b/build" "$b/src" -Dgpu_tests=disabled &&
            ninja -C "$b/build" tools/cubincache; } > "$b/build.log" 2>&1 ||
            { tail -20 "$b/build.log" >&2; echo "bench_torch: the baseline did not build" >&2; exit 1; }
    fi
    export BENCH_TORCH_BASELINE="$b/build/tools/cubincache" BENCH_TORCH_BASELINE_REV=$short
fi
exec python3 "$here/bench_torch.py"
