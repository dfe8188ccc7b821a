#!/usr/bin/env bash
# cargo_consumer.sh: examples/cargo-consumer, built by a real cargo, offline,
# with no crate from crates.io: its build.rs builds the kernel through
# cubincache and embeds it; the binary it makes carries sm_89 after
# CUDA_COMPUTE_CAP=89 and, after CUDA_COMPUTE_CAP=90 (cargo reruns the build
# script), sm_90 — `check --arch 90` on the Rust binary says which; a
# header edit rebuilds it too; lint finds nothing in it. Without a GPU the
# program prints the loader's error and its fix and exits 4 (the GPU suite
# runs it on the H200). Its build.rs finds the build tree's uninstalled .pc
# beside the cubincache it runs, with no PKG_CONFIG_PATH; with none to
# find it stops with the export to run. Skipped (77) only when cargo is not
# installed.
. "$(dirname "$0")/lib.sh"
PATH="$PATH:$HOME/.cargo/bin"
command -v cargo > /dev/null || { echo "cargo is not installed" >&2; exit 77; }
cp -r "$SRCDIR/examples/cargo-consumer" "$T/crate"
cd "$T/crate"
unset PKG_CONFIG_PATH # found beside $CUBINCACHE, the build tree's tools/cubincache
export CUBINCACHE CARGO_TARGET_DIR="$T/target"
bin="$T/target/debug/cargo-consumer"
cb() { CUDA_COMPUTE_CAP=$1 cargo build --offline -q > "$T/cargo.log" 2>&1 || fail "cargo build: $(cat "$T/cargo.log")"; }
runs() { find "$T/target/debug/build" -path '*cargo-consumer-*/out/saxpy.bundle' -name 'saxpy.manifest.json' 2>/dev/null | wc -l; }

note "lint: the example is hygienic"
expect_exit 0 "$CUBINCACHE" lint -q .

note "CUDA_COMPUTE_CAP=89: the binary carries sm_89 only"
cb 89
expect_out 1 "has sm_89 and no PTX" "$CUBINCACHE" check --arch 90 "$bin"
expect_out 0 "runs (sm_89 SASS)" "$CUBINCACHE" check --arch 89 "$bin"
note "CUDA_COMPUTE_CAP=90: cargo reruns the build script, the binary carries sm_90"
m1=$(stat -c %Y.%y "$bin")
cb 90
[ "$m1" != "$(stat -c %Y.%y "$bin")" ] || fail "the binary was not relinked"
expect_out 0 "runs (sm_90 SASS)" "$CUBINCACHE" check --arch 90 "$bin"
expect_out 1 "will not run" "$CUBINCACHE" check --arch 89 "$bin"
note "nothing changed: nothing rebuilt"
m2=$(stat -c %Y.%y "$bin")
sleep 1.1
cb 90
[ "$m2" = "$(stat -c %Y.%y "$bin")" ] || fail "an unchanged build relinked the binary"
note "the kernel's header changed: rebuilt (the dependency cubincache recorded)"
echo '// edited' >> kernels/saxpy.cuh
cb 90
[ "$m2" != "$(stat -c %Y.%y "$bin")" ] || fail "a header edit did not rebuild the binary"

note "a cubincache with no .pc beside it and none on PKG_CONFIG_PATH: the export to run"
mkdir -p "$T/lone/bin"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$CUBINCACHE" > "$T/lone/bin/cubincache"
chmod +x "$T/lone/bin/cubincache"
if CUBINCACHE="$T/lone/bin/cubincache" CARGO_TARGET_DIR="$T/target-lone" cargo build --offline -q > "$T/lone.log" 2>&1; then
    fail "cargo build found a .pc that is not there"
fi
grep -q "pkg-config cannot find cubincache" "$T/lone.log" &&
    grep -q "no cubincache.pc beside $T/lone/bin/cubincache either; export PKG_CONFIG_PATH=BUILDDIR/meson-uninstalled" "$T/lone.log" ||
    fail "no export named: $(cat "$T/lone.log")"

note "no GPU here: the loader's error and its fix, exit 4"
if [ -e /dev/nvidiactl ]; then
    note "a GPU is present: the GPU suite runs the program"
elif [ -n "${CBC_SANITIZED:-}" ]; then
    note "a sanitizer build: an uninstrumented Rust program cannot load the instrumented library"
else
    expect_out 4 "fix: install the NVIDIA driver" "$bin"
fi
note "ok"
