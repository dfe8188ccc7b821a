#!/usr/bin/env bash
# bench_noop_ninja.sh: a no-op `ninja` over a Meson project of 20 kernels x
# 4 targets, each built through `cubincache build` as a build_always_stale
# custom target: every ninja run starts 20 driver processes, all hits.
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
