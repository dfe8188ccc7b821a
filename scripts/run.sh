#!/usr/bin/env bash
# scripts/run.sh demo|test: the README's two commands for a fresh Debian
# machine with the CUDA toolkit. Installs the Debian packages it lacks
# (apt-get, through sudo when not root), configures Meson once, then
#   demo: builds the project and its kernels, shows what was built for which
#         GPUs, and runs igrun's demo;
#   test: runs the whole test suite (meson test: unit, cli, fault, gpu), then
#         the unit and command-line suites again built with AddressSanitizer
#         and UndefinedBehaviorSanitizer, and the multi-threaded loader test
#         with ThreadSanitizer (build dirs build-asan, build-tsan).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
case "$mode" in demo|test) ;; *) echo "usage: scripts/run.sh demo|test" >&2; exit 2 ;; esac

# libcurl4-openssl-dev: the HTTP remote cache; nginx-light and openssl: the
# tests' own WebDAV server, over http and https (tests/cli/remote_http.sh)
pkgs=(meson ninja-build pkg-config gcc libxxhash-dev libcjson-dev libzstd-dev liblz4-dev
      libcriterion-dev util-linux python3-venv cmake libhiredis-dev redis-server zstd xxhash
      libprotobuf-c-dev protobuf-c-compiler libonnx-dev
      libcurl4-openssl-dev nginx-light openssl curl)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "run.sh: installing ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "run.sh: nvcc not found: install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads)" >&2
    exit 4
fi
export PATH="$PATH:/usr/local/cuda/bin"

build=${BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null

if [ "$mode" = test ]; then
    # igrun's readers are tested on files the real safetensors and numpy
    # packages write: a private environment with them, from PyPI
    case "$build" in /*) py="$build-py" ;; *) py="$PWD/$build-py" ;; esac
    if ! "$py/bin/python" -c 'import numpy, safetensors' 2>/dev/null; then
        echo "run.sh: installing numpy and safetensors into $py" >&2
        python3 -m venv "$py"
        "$py/bin/python" -m pip install -q --disable-pip-version-check numpy safetensors
    fi
    export CBC_PYTHON="$py/bin/python"
    ninja -C "$build"
    meson test -C "$build" --print-errorlogs
    echo "== the unit and command-line suites under ASan and UBSan"
    [ -f "$build-asan/build.ninja" ] ||
        meson setup "$build-asan" -Db_sanitize=address,undefined -Db_lundef=false \
            -Dgpu_tests=disabled >/dev/null
    ninja -C "$build-asan"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C "$build-asan" --print-errorlogs --suite unit --suite cli
    echo "== the loader from many threads under TSan"
    [ -f "$build-tsan/build.ninja" ] ||
        meson setup "$build-tsan" -Db_sanitize=thread -Db_lundef=false -Dgpu_tests=disabled >/dev/null
    exec meson test -C "$build-tsan" --print-errorlogs loader_threads
fi

ninja -C "$build"
cbc="$build/tools/cubincache"
echo
echo "== what was built, for which GPUs (arch rule and targets from the manifest)"
m="$build/kernels/ig_kernels.bundle/ig_kernels.manifest.json"
grep -E '"(rule|detail)":' "$m" | sed 's/^[[:space:]]*/  /'
"$cbc" check "$build/kernels"  # finds ig_kernels.bundle
echo
echo "== will igrun (which carries those kernels) run on these GPUs?"
"$cbc" check --arch 75,80,86,89,90,100,120,121 "$build/tools/igrun/igrun" || true
echo
echo "== the GPUs of this machine"
"$cbc" devices "$m" || true
echo
echo "== igrun --demo"
"$build/tools/igrun/igrun" --demo --plot "$build/demo-attributions.svg"
echo "(bar chart of the attributions: $build/demo-attributions.svg)"
