#!/usr/bin/env bash
# setuid.sh: no environment variable runs code in a privileged program
# linked with libcubincache, or points it at kernels its owner did not
# install. A setuid-root copy of tests/trust/probe.c, run by nobody with
# CUBINCACHE_LIBCUDA naming nobody's library (whose constructor writes a
# marker file) and CUBINCACHE_BUNDLE_PATH naming nobody's bundle, must load
# neither: the installed library has no driver hook, and reads every
# variable with secure_getenv. The test suite's build of the driver table,
# which does have the hook, must not take it in a setuid program either.
# Runs as root only (it makes a setuid-root program): exit 77 otherwise.
. "$(dirname "$0")/lib.sh"
: "${BUILDDIR:?}"
[ "$(id -u)" = 0 ] || { echo "needs root, to make a setuid-root program" >&2; exit 77; }
command -v setpriv >/dev/null || { echo "needs setpriv (util-linux)" >&2; exit 77; }
if [ -n "${CBC_SANITIZED:-}" ]; then
    echo "a sanitizer runtime in a setuid program is not what users run" >&2
    exit 77
fi
nobody=65534
probe="$BUILDDIR/tests/trust_probe"
probe_test="$BUILDDIR/tests/trust_probe_test"
marker="$BUILDDIR/tests/libtrustmarker.so"
for f in "$probe" "$probe_test" "$marker"; do [ -f "$f" ] || fail "not built: $f"; done

chmod 755 "$T"
mkdir -m 755 "$T/suid"
# nobody's own: a library that marks being loaded, and a bundle directory
mkdir -m 755 "$T/nobody" "$T/nobody/planted"
cp "$marker" "$T/nobody/libcuda-evil.so"
cp "$BUILDDIR"/tests/which_b90.* "$T/nobody/planted/"
chown -R "$nobody:$nobody" "$T/nobody"
for p in probe probe_test; do
    cp "$BUILDDIR/tests/trust_$p" "$T/suid/$p"
    chown root:root "$T/suid/$p" && chmod 4755 "$T/suid/$p"
done

# run_as_nobody PROGRAM: as nobody, with nobody's variables
run_as_nobody() {
    rm -f "$T/marker"
    setpriv --reuid=$nobody --regid=$nobody --clear-groups \
        env CUBINCACHE_LIBCUDA="$T/nobody/libcuda-evil.so" CBC_MARKER="$T/marker" \
        CUBINCACHE_BUNDLE_PATH="$T/nobody/planted" "$1" > "$T/last.out" 2>&1
    local rc=$?
    [ $rc = 0 ] || fail "$1 as nobody exited $rc: $(cat "$T/last.out")"
}

for p in probe probe_test; do
    note "$p, setuid root, run by nobody with CUBINCACHE_LIBCUDA and CUBINCACHE_BUNDLE_PATH of nobody's"
    run_as_nobody "$T/suid/$p"
    if ! grep -q "^uid $nobody euid 0$" "$T/last.out"; then
        echo "the setuid bit took no effect here (a nosuid mount?): $(head -1 "$T/last.out")" >&2
        exit 77
    fi
    [ ! -e "$T/marker" ] || fail "$p ran nobody's library as root: $(cat "$T/marker")"
    grep -q "^default: embedded$" "$T/last.out" ||
        fail "$p took nobody's CUBINCACHE_BUNDLE_PATH: $(cat "$T/last.out")"
    grep -q "^installed: .*$T/nobody" "$T/last.out" &&
        fail "$p found an installed bundle in nobody's directory: $(cat "$T/last.out")"
done
echo ok
