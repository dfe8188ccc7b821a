#!/usr/bin/env bash
# meson_consumers.sh: the two ways a Meson project uses cubincache without
# installing it. (1) Through the uninstalled pkg-config files
# (BUILDDIR/meson-uninstalled): dependency('cubincache') and
# dependency('cubincache-ig') give Cflags under which <cubincache/loader.h>,
# the generated <cubincache/version.h> and <cubincache/ig.h> compile, and the
# program links and runs. (2) As a subproject: dependency('cubincache') and
# find_program('cubincache') come from the subproject (override_dependency,
# override_find_program), its own tests and benchmarks are not configured,
# and a kernel built by the subproject's cubincache, embedded, is read back
# by the program through the subproject's library.
. "$(dirname "$0")/lib.sh"
: "${BUILDDIR:?}" "${SRCDIR:?}"
if [ -n "${CBC_SANITIZED:-}" ]; then
    echo "a sanitizer build's library cannot be loaded by the uninstrumented consumer" >&2
    exit 77
fi
cat > "$T/p.c" <<'C'
#include <cubincache/loader.h>
#include <cubincache/version.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_bundle_open_path(argc > 1 ? argv[1] : "/nonexistent/k.manifest.json",
                                              NULL, &b, &err);
    printf("cubincache %s: %s\n", CUBINCACHE_VERSION_STRING, st == CBC_OK ? "opened" : err.msg);
    if (st == CBC_OK)
        cbc_bundle_close(b);
    return 0;
}
C

note "through the uninstalled .pc files: the public headers compile, the program links and runs"
mkdir -p "$T/pc"
cp "$T/p.c" "$T/pc/p.c"
printf '#include <cubincache/ig.h>\nint main(void) { struct cbc_ig_request r; cbc_ig_request_defaults(&r); return 0; }\n' \
    > "$T/pc/ig.c"
cat > "$T/pc/meson.build" <<'M'
project('pc-consumer', 'c', default_options: ['c_std=c11'])
executable('p', 'p.c', dependencies: dependency('cubincache'))
executable('q', 'ig.c', dependencies: dependency('cubincache-ig'))
M
PKG_CONFIG_PATH="$BUILDDIR/meson-uninstalled" meson setup "$T/pcb" "$T/pc" > "$T/pc.log" 2>&1 ||
    fail "meson setup through the uninstalled .pc: $(tail -20 "$T/pc.log")"
ninja -C "$T/pcb" > "$T/pc.log" 2>&1 || fail "build through the uninstalled .pc: $(cat "$T/pc.log")"
expect_out 0 "cubincache 0.1.0: " "$T/pcb/p"
grep -q "nonexistent" "$T/last.out" || fail "the library's error: $(cat "$T/last.out")"
expect_exit 0 "$T/pcb/q"

note "as a subproject: its dependency and its cubincache, nothing of its tests"
mkdir -p "$T/sub/subprojects"
ln -s "$SRCDIR" "$T/sub/subprojects/cubincache"
cp "$T/p.c" "$T/sub/p.c"
printf 'extern "C" __global__ void k(float *x) { x[0] = 1.0f; }\n' > "$T/sub/k.cu"
cat > "$T/sub/meson.build" <<'M'
project('sub-consumer', 'c', default_options: ['c_std=c11'])
cbc_dep = dependency('cubincache', fallback: ['cubincache', 'libcubincache_dep'])
cubincache = find_program('cubincache')
stamp = custom_target('stamp', output: 'cuda-arch.stamp', build_always_stale: true,
  command: [cubincache, 'stamp', '--arch', '80', '-o', '@OUTPUT@'])
k = custom_target('k', input: 'k.cu', output: 'k.manifest.json', depfile: 'k.d', depends: stamp,
  command: [cubincache, 'build', '--arch', '80', '-o', '@OUTDIR@', '-n', 'k', '--depfile',
            '@DEPFILE@', '@INPUT@'])
executable('p', 'p.c', dependencies: cbc_dep)
alias_target('consumer', k)
M
meson setup "$T/sb" "$T/sub" > "$T/sub.log" 2>&1 || fail "meson setup with the subproject: $(tail -20 "$T/sub.log")"
grep -q "Criterion\|criterion" "$T/sub.log" && fail "the subproject configured its tests: $(grep -i criterion "$T/sub.log")"
# only what the consumer needs: not the IG kernels
ninja -C "$T/sb" p consumer > "$T/sub.log" 2>&1 || fail "build with the subproject: $(cat "$T/sub.log")"
grep -q "ig_kernels" "$T/sub.log" && fail "building the consumer built the IG kernels"
expect_out 0 "cubincache 0.1.0: opened" env LD_LIBRARY_PATH="$T/sb/subprojects/cubincache" \
    "$T/sb/p" "$T/sb/k.manifest.json"
[ "$(sm_of "$T/sb/k.sm_80.cubin")" = 80 ] || fail "the subproject's cubincache built no sm_80 cubin"
echo ok
