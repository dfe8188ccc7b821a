#!/usr/bin/env bash
# seed_meson.sh: the seed's failure replayed through Meson, with an installed
# cubincache and examples/meson-consumer: CUDA_COMPUTE_CAP=89 ninja, then
# =90 ninja must give an sm_90 cubin whose ELF says 90 (the seed reused the
# sm_89 one), then =89 again must be a pure cache hit: no nvcc run at all.
# The consumer's program embeds the bundle and links the installed library
# through pkg-config: built for 89 it is refused on a 9.0 GPU (the fake
# driver) with the fix, built for 90 it loads sm_90, and check reads the
# program the same way; a no-op build runs one step (the stamp) and relinks
# nothing, while a header edit or a changed NVCC_APPEND_FLAGS rebuilds
# without a reconfigure; a bad -Dcuda-arch fails at configure time with the
# message `build` gives.
. "$(dirname "$0")/lib.sh"
: "${BUILDDIR:?}" "${SRCDIR:?}"
if [ -n "${CBC_SANITIZED:-}" ]; then
    echo "a sanitizer build's library cannot be loaded by the uninstrumented consumer" >&2
    exit 77
fi

note "install cubincache into a staging prefix"
meson install -C "$BUILDDIR" --no-rebuild --quiet --destdir "$T/stage" > "$T/install.log" 2>&1 ||
    fail "meson install: $(cat "$T/install.log")"
bin=$(find "$T/stage" -path '*/bin/cubincache' -type f | head -1)
[ -x "$bin" ] || fail "no installed cubincache under $T/stage"
export PATH="$(dirname "$bin"):$PATH"

# the consumer finds the staged library through pkg-config
pc=$(find "$T/stage" -name cubincache.pc | head -1)
[ -n "$pc" ] || fail "no cubincache.pc installed"
# its prefix pointed at the staging tree (a sysroot would also be prefixed
# to the paths of the packages it requires, such as libxxhash's)
mkdir -p "$T/pc"
sed "s|^prefix=.*|prefix=$T/stage$(sed -n 's/^prefix=//p' "$pc")|" "$pc" > "$T/pc/cubincache.pc"
export PKG_CONFIG_PATH="$T/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
lib=$(find "$T/stage" -name 'libcubincache.so*' | head -1)
export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fake="$BUILDDIR/tests/libfakecuda.so"
[ -f "$fake" ] || fail "no fake driver at $fake"
# the installed library opens libcuda.so.1 and nothing else: the fake is
# found as the dynamic loader finds any driver, first on LD_LIBRARY_PATH
mkdir -p "$T/fakedriver" && ln -s "$fake" "$T/fakedriver/libcuda.so.1"
fakepath="$T/fakedriver:$LD_LIBRARY_PATH"

cp -r "$SRCDIR/examples/meson-consumer" "$T/consumer"
make_counting_nvcc
export NVCC="$T/nvcc-count"
meson setup "$T/cb" "$T/consumer" > "$T/setup.log" 2>&1 || fail "meson setup: $(cat "$T/setup.log")"
k="$T/cb/vecadd.bundle/vecadd"
exe="$T/cb/vecadd"

note "CUDA_COMPUTE_CAP=89 ninja"
CUDA_COMPUTE_CAP=89 ninja -C "$T/cb" > "$T/n1.log" 2>&1 || fail "ninja: $(cat "$T/n1.log")"
[ "$(sm_of "$k.sm_89.cubin")" = 89 ] || fail "first build is not sm_89"

note "the dp bundle: two sources device-linked per target, one executable cubin each"
dp="$T/cb/dp.bundle/dp"
[ "$(sm_of "$dp.sm_89.cubin")" = 89 ] || fail "no sm_89 dp cubin: $(ls "$T/cb/dp.bundle")"
grep -q '"linked_sources"' "$dp.manifest.json" || fail "dp's manifest names no linked sources"
expect_out 0 "RUNS         sm_89     dp: runs (sm_89 SASS)" cubincache check --arch 89 "$T/cb/dp"
expect_out 1 "dp: ran sm_89 on GPU 0" env LD_LIBRARY_PATH="$fakepath" FAKE_CUDA_CC=89 "$T/cb/dp"

note "the program built for 89, on a (fake) compute capability 9.0 GPU: refused with the fix"
expect_out 4 "vecadd: no image for GPU 0 (NVIDIA H100 80GB HBM3, compute capability 9.0): the bundle has sm_89 and no PTX" env LD_LIBRARY_PATH="$fakepath" FAKE_CUDA_CC=90 "$exe"
grep -q "rebuild with cubincache build --arch 90" "$T/last.out" || fail "no remedy: $(cat "$T/last.out")"
expect_out 1 "WILL-NOT-RUN sm_90     vecadd: will not run on compute capability 9.0: has sm_89 and no PTX" cubincache check --arch 90 "$exe"

note "CUDA_COMPUTE_CAP=90 ninja, no reconfigure: an sm_90 cubin whose ELF says 90"
CUDA_COMPUTE_CAP=90 ninja -C "$T/cb" > "$T/n2.log" 2>&1 || fail "ninja: $(cat "$T/n2.log")"
[ -f "$k.sm_90.cubin" ] || fail "no sm_90 cubin after the arch changed: $(ls "$T/cb")"
[ "$(sm_of "$k.sm_90.cubin")" = 90 ] || fail "vecadd.sm_90.cubin's ELF says sm_$(sm_of "$k.sm_90.cubin")"
[ ! -e "$k.sm_89.cubin" ] || fail "the sm_89 cubin was left beside the sm_90 one"
grep -q '"target":	"sm_90"' "$k.manifest.json" || fail "manifest does not say sm_90"
grep -q '"CUDA_COMPUTE_CAP":	"90"' "$k.manifest.json" || fail "manifest does not record CUDA_COMPUTE_CAP=90"
expect_out 0 "RUNS         sm_90     vecadd: runs (sm_90 SASS)" cubincache check --arch 90 "$exe"
# the fake driver runs nothing, so the sums stay wrong; the choice is what counts
expect_out 1 "vecadd: ran sm_90 on GPU 0" env LD_LIBRARY_PATH="$fakepath" FAKE_CUDA_CC=90 "$exe"

note "CUDA_COMPUTE_CAP=89 again: a pure cache hit"
reset_nvcc_log
CUDA_COMPUTE_CAP=89 ninja -C "$T/cb" > "$T/n3.log" 2>&1 || fail "ninja: $(cat "$T/n3.log")"
[ "$(nvcc_runs)" = 0 ] || fail "nvcc ran $(nvcc_runs) times on a cache hit: $(cat "$T/nvcc.log")"
[ "$(sm_of "$k.sm_89.cubin")" = 89 ] || fail "back to 89"

note "an unchanged build rewrites, recompiles and relinks nothing"
before=$(mtime_of "$k.manifest.json")
exe_before=$(mtime_of "$exe")
sleep 0.05
CUDA_COMPUTE_CAP=89 ninja -C "$T/cb" > "$T/n4.log" 2>&1 || fail "ninja: $(cat "$T/n4.log")"
[ "$before" = "$(mtime_of "$k.manifest.json")" ] || fail "a hit rewrote the manifest"
[ "$exe_before" = "$(mtime_of "$exe")" ] || fail "a hit relinked the program: $(cat "$T/n4.log")"
grep -qE "Linking|Compiling" "$T/n4.log" && fail "a hit compiled or linked: $(cat "$T/n4.log")"
[ "$(nvcc_runs)" = 0 ] || fail "nvcc ran on a no-op build"

note "a no-op ninja runs one step, the stamp, and no cubincache build"
steps=$(grep -cE '^\[[0-9]+/[0-9]+\]' "$T/n4.log")
[ "$steps" = 1 ] && grep -q 'cuda-arch-stamp' "$T/n4.log" ||
    fail "a no-op ran $steps steps: $(cat "$T/n4.log")"

note "a header edit rebuilds the bundle, no reconfigure"
sed -i 's/return a + b;/return b + a;/' "$T/consumer/vecadd.cuh"
reset_nvcc_log
CUDA_COMPUTE_CAP=89 ninja -C "$T/cb" > "$T/n5.log" 2>&1 || fail "ninja: $(cat "$T/n5.log")"
[ "$(nvcc_runs)" = 1 ] || fail "a header edit ran nvcc $(nvcc_runs) times: $(cat "$T/n5.log")"

note "an edit of one of dp's sources recompiles that source alone, then relinks"
sed -i 's/3.0f \* x/x * 3.0f/' "$T/consumer/dp_helper.cu"
reset_nvcc_log
CUDA_COMPUTE_CAP=89 ninja -C "$T/cb" > "$T/n5b.log" 2>&1 || fail "ninja: $(cat "$T/n5b.log")"
[ "$(grep -c -- '-dlink' "$T/nvcc.log")" = 1 ] && [ "$(nvcc_runs)" = 2 ] ||
    fail "editing dp_helper.cu ran: $(cat "$T/nvcc.log")"
grep -v -- '-dlink' "$T/nvcc.log" | grep -q dp_parent.cu && fail "dp_parent.cu was recompiled"

note "so does a changed NVCC_APPEND_FLAGS (through the stamp)"
reset_nvcc_log
before=$(mtime_of "$k.sm_89.cubin")
sleep 0.05
NVCC_APPEND_FLAGS=-lineinfo CUDA_COMPUTE_CAP=89 ninja -C "$T/cb" > "$T/n6.log" 2>&1 ||
    fail "ninja: $(cat "$T/n6.log")"
[ "$(nvcc_runs)" = 4 ] || fail "NVCC_APPEND_FLAGS ran nvcc $(nvcc_runs) times: $(cat "$T/n6.log")"
[ "$before" != "$(mtime_of "$k.sm_89.cubin")" ] || fail "-lineinfo left the cubin as it was"

note "meson install: the bundle directory under DATADIR/cubincache, found by the installed program"
meson install -C "$T/cb" --no-rebuild --destdir "$T/cstage" > "$T/ci.log" 2>&1 ||
    fail "meson install of the consumer: $(cat "$T/ci.log")"
ib=$(find "$T/cstage" -path '*/share/cubincache/vecadd.bundle' -type d)
[ -n "$ib" ] && [ -f "$ib/vecadd.manifest.json" ] && [ "$(sm_of "$ib/vecadd.sm_89.cubin")" = 89 ] ||
    fail "installed: $(find "$T/cstage" -type f)"
iexe=$(find "$T/cstage" -path '*/bin/vecadd' -type f)
expect_out 1 "vecadd: ran sm_89 on GPU 0" env LD_LIBRARY_PATH="$fakepath" FAKE_CUDA_CC=89 "$iexe" --installed
grep -qF "$ib/vecadd.manifest.json" "$T/last.out" || fail "not the installed bundle: $(cat "$T/last.out")"
expect_out 1 "bundle 'vecadd' is not installed" env LD_LIBRARY_PATH="$fakepath" FAKE_CUDA_CC=89 \
    "$T/cb/vecadd" --installed

note "ninja clean removes every file the kernel steps wrote; the next ninja rebuilds from the cache"
ninja -C "$T/cb" clean > "$T/clean.log" 2>&1 || fail "ninja clean: $(cat "$T/clean.log")"
left=$(find "$T/cb" -name '*.cubin' -o -name '*.ptx' -o -name '*.manifest.json' -o -name 'cuda-arch.stamp')
[ -z "$left" ] || fail "ninja clean left: $left"
reset_nvcc_log
CUDA_COMPUTE_CAP=89 ninja -C "$T/cb" > "$T/n7.log" 2>&1 || fail "ninja after clean: $(cat "$T/n7.log")"
[ "$(nvcc_runs)" = 0 ] || fail "the rebuild after clean ran nvcc: $(cat "$T/nvcc.log")"
[ "$(sm_of "$k.sm_89.cubin")" = 89 ] || fail "no sm_89 cubin after clean and rebuild"

note "a bad -Dcuda-arch fails when Meson configures, with build's message"
cubincache build --arch bogus -o "$T/bogus" "$T/consumer/vecadd.cu" 2> "$T/b.err"
[ $? = 2 ] || fail "build --arch bogus: $(cat "$T/b.err")"
msg=$(head -1 "$T/b.err" | sed 's/^cubincache build: error: //')
[ -n "$msg" ] || fail "build gave no message for a bad arch"
meson setup -Dcuda-arch=bogus "$T/cb-bogus" "$T/consumer" > "$T/bogus.log" 2>&1 &&
    fail "meson setup accepted -Dcuda-arch=bogus"
grep -qF -- "$msg" "$T/bogus.log" || fail "configure said: $(tail -5 "$T/bogus.log"), build says: $msg"
# ... and so does the project's own option, through the same parser compiled at configure time
meson setup -Dcuda-arch=bogus "$T/self-bogus" "$SRCDIR" > "$T/self.log" 2>&1 &&
    fail "the project's meson setup accepted -Dcuda-arch=bogus"
grep -qF -- "-Dcuda-arch=bogus: $msg" "$T/self.log" || fail "the project's configure said: $(tail -5 "$T/self.log")"
[ ! -e "$T/bogus" ] || fail "a failed build wrote its out dir"
echo ok

