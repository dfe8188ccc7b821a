#!/usr/bin/env bash
# scripts/build_cargo_consumer.sh [BUILD_DIR]: builds examples/cargo-consumer
# with cargo (offline, no crates) on this machine, once for
# CUDA_COMPUTE_CAP=90 and once for 89, into .device-cargo/ (git-ignored),
# for scripts/gpu_run.sh to run on the GPU machine, which has no Rust
# toolchain. Carry it with carry: [".device-debs", ".device-cargo"].
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
PATH="$PATH:$HOME/.cargo/bin"
dest=.device-cargo
grep -qxF "/$dest/" .git/info/exclude 2>/dev/null || echo "/$dest/" >> .git/info/exclude
rm -rf "$dest"
mkdir -p "$dest"
for cap in 90 89; do
    rm -rf /tmp/cbc-cargo-src
    cp -r examples/cargo-consumer /tmp/cbc-cargo-src
    root=$PWD
    (cd /tmp/cbc-cargo-src &&
        CUBINCACHE="$root/$build/tools/cubincache" PKG_CONFIG_PATH="$root/$build/meson-uninstalled" \
        CARGO_TARGET_DIR=/tmp/cbc-cargo-target CUDA_COMPUTE_CAP=$cap cargo build --offline -q)
    cp /tmp/cbc-cargo-target/debug/cargo-consumer "$dest/cargo-consumer-sm$cap"
done
ls -l "$dest"
