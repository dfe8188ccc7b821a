#!/usr/bin/env bash
# trust.sh: where a program linked with libcubincache looks for its driver
# and its kernels, and whom it believes (issue 32). tests/trust/probe.c is
# such a program; setuid.sh runs it setuid. Each section is one finding.
. "$(dirname "$0")/lib.sh"
: "${BUILDDIR:?}"
probe="$BUILDDIR/tests/trust_probe"
probe_test="$BUILDDIR/tests/trust_probe_test"
marker="$BUILDDIR/tests/libtrustmarker.so"
lib="$BUILDDIR/libcubincache.so"
for f in "$probe" "$probe_test" "$marker" "$lib"; do [ -f "$f" ] || fail "not built: $f"; done

note "1. the installed library and the commands have no driver hook: CUBINCACHE_LIBCUDA runs nothing"
LC_ALL=C grep -q CUBINCACHE_LIBCUDA "$lib" && fail "libcubincache.so still reads CUBINCACHE_LIBCUDA"
# (the commands name the variable in their settings table, for the test builds: what they do with
# it is checked below)
expect_out 0 "driver:" env CUBINCACHE_LIBCUDA="$marker" CBC_MARKER="$T/m1" "$probe"
[ ! -e "$T/m1" ] || fail "a program linked with libcubincache loaded what CUBINCACHE_LIBCUDA named: $(cat "$T/m1")"
env CUBINCACHE_LIBCUDA="$marker" CBC_MARKER="$T/m2" "$CUBINCACHE" devices > "$T/devices.out" 2>&1
[ $? -lt 128 ] || fail "cubincache devices crashed: $(cat "$T/devices.out")"
[ ! -e "$T/m2" ] || fail "cubincache devices loaded what CUBINCACHE_LIBCUDA named"
# the control: the test suite's own build takes the hook, so the checks
# above (and setuid.sh's) would see the marker if the hook were there
expect_out 0 "driver:" env CUBINCACHE_LIBCUDA="$marker" CBC_MARKER="$T/m3" "$probe_test"
[ -e "$T/m3" ] || fail "the test build did not load the library its hook names: the checks prove nothing"
note "2. a program's own prefix is searched only when it runs from PREFIX/bin, and only when no one else could have written it"
unset CUBINCACHE_BUNDLE_PATH
# prefix DIR: the bundle installed under DIR/share/cubincache, as meson install puts it
prefix() {
    mkdir -p "$1/share/cubincache/which_b90.bundle"
    cp "$BUILDDIR"/tests/which_b90.* "$1/share/cubincache/which_b90.bundle/"
}
# a program in $T/X searches no $T/share/cubincache, which anyone who can write $T could make
mkdir -p "$T/X" && cp "$probe" "$T/X/prog" && prefix "$T"
expect_out 0 "installed: bundle 'which_b90' is not installed" "$T/X/prog"
grep -qF "$T/share" "$T/last.out" && fail "a program in $T/X searched $T/share: $(cat "$T/last.out")"
mkdir -p "$T/p/bin" && cp "$probe" "$T/p/bin/prog" && prefix "$T/p"
expect_out 0 "installed: $T/p/share/cubincache/which_b90.bundle/which_b90.manifest.json" "$T/p/bin/prog"
chmod o+w "$T/p/share"
expect_out 0 "'$T/p/share/cubincache' (skipped: '$T/p/share' is writable by every user (mode 0757))" "$T/p/bin/prog"
chmod o-w "$T/p/share"
if [ "$(id -u)" = 0 ]; then
    # nobody's directory, on the way to a bundle a root program would load
    chown 65534 "$T/p/share/cubincache"
    expect_out 0 "(skipped: '$T/p/share/cubincache' is owned by uid 65534" "$T/p/bin/prog"
    chown 0 "$T/p/share/cubincache"
fi
expect_out 0 "installed: $T/p/share/cubincache/which_b90.bundle/which_b90.manifest.json" "$T/p/bin/prog"
echo ok
