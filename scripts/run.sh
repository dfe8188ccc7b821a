#!/usr/bin/env bash
# scripts/run.sh demo|test: the README's two commands for a fresh Debian
# machine with the CUDA toolkit. Installs the Debian packages it lacks
# (apt-get, through sudo when not root), configures Meson once, then
#   demo: builds the project and its kernels, shows what was built for which
#         GPUs, and runs igrun's demo;
#   test: runs the whole test suite (meson test).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
case "$mode" in demo|test) ;; *) echo "usage: scripts/run.sh demo|test" >&2; exit 2 ;; esac

pkgs=(meson ninja-build pkg-config gcc libxxhash-dev libcjson-dev libzstd-dev liblz4-dev
      libcriterion-dev util-linux)
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
    ninja -C "$build"
    exec meson test -C "$build" --print-errorlogs
fi

ninja -C "$build"
cbc="$build/tools/cubincache"
echo
echo "== what was built, for which GPUs (arch rule and targets from the manifest)"
m="$build/kernels/ig_kernels.manifest.json"
grep -E '"(rule|detail)":' "$m" | sed 's/^[[:space:]]*/  /'
"$cbc" check "$build/kernels"
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
