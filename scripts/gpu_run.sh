#!/usr/bin/env bash
# scripts/gpu_run.sh OUTDIR: everything that needs a GPU, in one go, on the
# GPU machine (an H200 here): build the project there, run the GPU and unit
# test suites, then the loader, IG-engine and PyTorch benchmarks. Writes at
# at most eight files under OUTDIR (more with GPU_RUN_PROFILE=1): summary.txt
# (what matters, also printed), gpu-tests.log, unit-tests.log, bench.jsonl,
# tables.md (the GPU tables of BENCHMARKS.md, from bench/report.py),
# build.log, consumer.log, and truth-sm_XY.txt: what this GPU did with each
# member of the deploy-gate corpus (copy it to tests/corpus/ when the corpus
# changes).
# GPU_RUN_PART=tests stops before the benchmarks and GPU_RUN_PART=bench
# runs only them (on a build-gpu an earlier call left), so each part fits
# one call of the GPU machine's time limit. GPU_RUN_PART=cnn builds, runs
# the network tests (gpu_net) and bench/cnn_captum.py only: issue 31's run.
set -uo pipefail
out=${1:?usage: scripts/gpu_run.sh OUTDIR}
part=${GPU_RUN_PART:-all}
mkdir -p "$out"
cd "$(dirname "$0")/.."
S="$out/summary.txt"
: > "$S"
say() { echo "$*" | tee -a "$S"; }
step() { local t0=$SECONDS; "$@"; local rc=$?; say "  ($((SECONDS - t0)) s, exit $rc)"; return $rc; }

say "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee -a "$S"
nvcc --version | tail -1 | tee -a "$S"
# pure-Python packages carried in .device-py (scripts/fetch_device_py.sh:
# Captum and what it imports), for tests/gpu/torch_models.py's Captum script
[ -d .device-py ] && export PYTHONPATH="$PWD/.device-py${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import sys, torch; print("Python", sys.version.split()[0], "PyTorch", torch.__version__)' 2>&1 | tee -a "$S"
python3 -c 'import captum; print("Captum", captum.__version__)' 2>&1 | tail -1 | tee -a "$S"
say "== build (meson setup + ninja; -Dcuda-arch=auto decides at build time)"
if ! step bash -c "{ [ -f build-gpu/build.ninja ] || meson setup build-gpu; } > '$out/build.log' 2>&1 && ninja -C build-gpu >> '$out/build.log' 2>&1"; then
    tail -60 "$out/build.log"
    exit 1
fi
grep -E '"(rule|detail)":|"target":' build-gpu/kernels/ig_kernels.bundle/ig_kernels.manifest.json | tee -a "$S"
build-gpu/tools/cubincache devices build-gpu/kernels/ig_kernels.bundle/ig_kernels.manifest.json 2>&1 | tee -a "$S"

if [ "$part" = cnn ]; then
    say "== convolutional networks: gpu_net (GPU against the CPU reference and Captum float64)"
    step timeout 600 meson test -C build-gpu gpu_net igrun_cnn -v > "$out/gpu-tests.log" 2>&1
    grep -E '^(engine|gpu_net:|FAIL|  .*rel L2|  every operator|  central differences on|#)|^ *[0-9]+/[0-9]+ ' "$out/gpu-tests.log" | tee -a "$S"
    say "== image models: igrun against Captum 0.9 (bench/cnn_captum.py)"
    : > "$out/bench.jsonl"
    step timeout 1500 python3 bench/cnn_captum.py build-gpu/tools/igrun/igrun /tmp/cnn-bench >> "$out/bench.jsonl" 2>> "$S"
    { echo "### Image models against Captum (bench/cnn_captum.py)"; echo
      python3 bench/cnn_captum.py --table "$out/bench.jsonl"; } > "$out/tables.md"
    cat "$out/tables.md" | tee -a "$S"
    exit 0
fi
if [ "$part" != bench ]; then
say "== GPU test suite"
step timeout 900 meson test -C build-gpu --suite gpu -v > "$out/gpu-tests.log" 2>&1
grep -E '^(engine|GPU 0|project kernels|sm_89|the driver|PTX-only|  warning|sm_90 \+|cubin patched|the loader|  [a-zA-Z0-9].*rel L2|  paper|  Captum|  x \+|  completeness|  naive|  device|  a NaN|  8 calls|FAIL|gpu_ig:|gpu_loader:|gpu_net:|  every operator|  central differences on|explanations|layered models|precision fp32|  --precision|  torch.save|torch_models:)' "$out/gpu-tests.log" | tee -a "$S"
grep -E '^ *[0-9]+/[0-9]+ ' "$out/gpu-tests.log" | tee -a "$S"
say "== deploy-gate corpus: each program run, its kernels' results read back"
step bash tests/corpus/run_truth.sh build-gpu/tests/corpus "$out/truth-sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .').txt" > /dev/null 2>&1
grep -c ' runs ' "$out"/truth-sm_*.txt | sed 's/^/  members that ran: /' | tee -a "$S"
say "== unit test suite on this machine (the fake driver and the real one side by side)"
step timeout 600 meson test -C build-gpu --suite unit > "$out/unit-tests.log" 2>&1
grep -E '^ *[0-9]+/[0-9]+ ' "$out/unit-tests.log" | tee -a "$S"

say "== IG accuracy against torch float64 autograd, --precision fast and fp32 (bench/ig_accuracy.py)"
step timeout 600 python3 bench/ig_accuracy.py build-gpu > "$out/accuracy.jsonl" 2>> "$S"
cat "$out/accuracy.jsonl" | tee -a "$S"

say "== examples/meson-consumer on this GPU: installed cubincache, embedded bundle, real driver"
stage=/tmp/cbc-stage
rm -rf "$stage" /tmp/cbc-consumer /tmp/cbc-pc
if meson install -C build-gpu --destdir "$stage" --quiet > "$out/consumer.log" 2>&1; then
    # the staged .pc, pointed at the staging prefix
    pc=$(find "$stage" -name cubincache.pc | head -1)
    mkdir -p /tmp/cbc-pc
    sed "s|^prefix=.*|prefix=$stage$(sed -n 's/^prefix=//p' "$pc")|" "$pc" > /tmp/cbc-pc/cubincache.pc
    lib=$(find "$stage" -name 'libcubincache.so*' | head -1)
    (
        export PATH="$(dirname "$(find "$stage" -path '*/bin/cubincache' | head -1)"):$PATH"
        export PKG_CONFIG_PATH="/tmp/cbc-pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
        export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        meson setup /tmp/cbc-consumer examples/meson-consumer >> "$out/consumer.log" 2>&1 &&
            ninja -C /tmp/cbc-consumer >> "$out/consumer.log" 2>&1
        say "  arch auto (the driver's GPU): $(/tmp/cbc-consumer/vecadd 2>&1; echo "exit $?")"
        say "  $(cubincache check --arch 90 /tmp/cbc-consumer/vecadd 2>/dev/null)"
        say "  the two-source, device-linked dp bundle: $(/tmp/cbc-consumer/dp 2>&1; echo "exit $?")"
        say "  $(cubincache check --arch 90 /tmp/cbc-consumer/dp 2>/dev/null)"
        CUDA_COMPUTE_CAP=89 ninja -C /tmp/cbc-consumer >> "$out/consumer.log" 2>&1
        say "  CUDA_COMPUTE_CAP=89 ninja: $(/tmp/cbc-consumer/vecadd 2>&1 | tr '\n' ' '; echo "exit ${PIPESTATUS[0]}")"
    )
else
    say "  meson install failed: $(tail -5 "$out/consumer.log")"
fi

say "== examples/cargo-consumer (a Rust binary built by cargo on the dev machine, scripts/build_cargo_consumer.sh)"
if [ -x .device-cargo/cargo-consumer-sm90 ]; then
    (
        export LD_LIBRARY_PATH="$PWD/build-gpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        say "  CUDA_COMPUTE_CAP=90 build: $(.device-cargo/cargo-consumer-sm90 2>&1 | tr '\n' ' '; echo "exit ${PIPESTATUS[0]}")"
        say "  CUDA_COMPUTE_CAP=89 build: $(.device-cargo/cargo-consumer-sm89 2>&1 | tr '\n' ' '; echo "exit ${PIPESTATUS[0]}")"
        say "  $(build-gpu/tools/cubincache check --arch 90 .device-cargo/cargo-consumer-sm89 2>/dev/null)"
    )
else
    say "  not carried (run scripts/build_cargo_consumer.sh and carry .device-cargo)"
fi

say "== the compiler launcher on this GPU: tests/launcher/project built with Meson through cubincache nvcc"
(
    rm -rf /tmp/cbc-lp /tmp/cbc-lp-cache
    export CUBINCACHE_DIR=/tmp/cbc-lp-cache
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
    printf "[binaries]\ncuda = ['%s', 'nvcc']\n" "$PWD/build-gpu/tools/cubincache" > /tmp/cbc-lp-native.ini
    if meson setup --native-file /tmp/cbc-lp-native.ini -Darchs="$cc" /tmp/cbc-lp tests/launcher/project \
            > /tmp/cbc-lp.log 2>&1 && ninja -C /tmp/cbc-lp >> /tmp/cbc-lp.log 2>&1; then
        r=$(/tmp/cbc-lp/app 2>&1); rc=$?
        say "  archs $cc: $r (exit $rc)"
        meson configure /tmp/cbc-lp -Darchs=80 > /dev/null && ninja -C /tmp/cbc-lp >> /tmp/cbc-lp.log 2>&1
        r=$(/tmp/cbc-lp/app 2>&1); rc=$?
        say "  archs 80 (SASS only, no PTX): $r (exit $rc); $(build-gpu/tools/cubincache check --arch "$cc" /tmp/cbc-lp/app 2>/dev/null | head -1)"
        meson configure /tmp/cbc-lp -Darchs="$cc" > /dev/null && ninja -C /tmp/cbc-lp >> /tmp/cbc-lp.log 2>&1
        r=$(/tmp/cbc-lp/app 2>&1); rc=$?
        say "  archs $cc again, from the launcher's cache: $r (exit $rc); $(build-gpu/tools/cubincache cache stats | grep -E '^hits')"
    else
        say "  launcher project failed: $(tail -5 /tmp/cbc-lp.log)"
    fi
)

fi
[ "$part" = tests ] && { tail -40 "$S"; exit 0; }

say "== benchmarks"
: > "$out/bench.jsonl"
step timeout 300 build-gpu/bench/loader_bench >> "$out/bench.jsonl" 2>> "$S"
step timeout 300 build-gpu/bench/first_load_floor >> "$out/bench.jsonl" 2>> "$S"
step timeout 900 build-gpu/bench/ig_bench /tmp/ig-bench-data >> "$out/bench.jsonl" 2>> "$S"
step timeout 900 python3 bench/torch_ig.py /tmp/ig-bench-data build-gpu/tools/igrun/igrun >> "$out/bench.jsonl" 2>> "$S"
say "== image models: igrun against Captum 0.9 (bench/cnn_captum.py: time, accuracy, memory)"
step timeout 1500 python3 bench/cnn_captum.py build-gpu/tools/igrun/igrun /tmp/cnn-bench >> "$out/bench.jsonl" 2>> "$S"
say "== the GPU tables of BENCHMARKS.md (bench/report.py), in tables.md"
machine="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nvcc --version | tail -1), $(nproc) CPU cores, $(python3 -c 'import torch; print("PyTorch", torch.__version__)' 2>/dev/null)"
[ -s "$out/accuracy.jsonl" ] && cat "$out/accuracy.jsonl" >> "$out/bench.jsonl"
python3 bench/report.py --commit "${GPU_RUN_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" \
    --machine "$machine" --command "scripts/gpu_run.sh OUT" "$out/bench.jsonl" > "$out/tables.md"
{ echo; echo "### Image models against Captum (bench/cnn_captum.py)"; echo
  python3 bench/cnn_captum.py --table "$out/bench.jsonl"; } >> "$out/tables.md"
if [ -n "${GPU_RUN_PROFILE:-}" ] && command -v ncu >/dev/null; then
    say "== ncu: per-kernel time of 784 features, one input and 1024"
    IG_BENCH_QUICK=1 step timeout 300 ncu --clock-control none --print-summary per-kernel \
        build-gpu/bench/ig_bench /tmp/ig-prof > "$out/ncu.txt" 2>&1
    grep -E 'Duration|^  [a-zA-Z_0-9]+ \(' "$out/ncu.txt" | head -80 >> "$S"
    say "== ncu: where the batch's tensor-core GEMM (layer 2 backward) waits"
    IG_BENCH_QUICK=1 step timeout 200 ncu --clock-control none -k regex:gemm_tc_nn --launch-skip 5 -c 1 \
        --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --section InstructionStats --section SchedulerStats \
        build-gpu/bench/ig_bench /tmp/ig-prof > "$out/ncu-tc.txt" 2>&1
    grep -E 'gemm_tc|Stall|stall|Issue|Eligible|Active Warps|Executed Ipc|Bank|Pipe|Warp Cycles|Shared' "$out/ncu-tc.txt" | head -60 >> "$S"
fi
cat "$S" | tail -40
