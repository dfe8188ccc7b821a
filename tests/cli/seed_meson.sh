#!/usr/bin/env bash
# seed_meson.sh: the seed's failure replayed through Meson, with an installed
# cubincache and examples/meson-consumer: CUDA_COMPUTE_CAP=89 ninja, then
# =90 ninja must give an sm_90 cubin whose ELF says 90 (the seed reused the
# sm_89 one), then =89 again must be a pure cache hit: no nvcc run at all.
. "$(dirname "$0")/lib.sh"
: "${BUILDDIR:?}" "${SRCDIR:?}"

note "install cubincache into a staging prefix"
meson install -C "$BUILDDIR" --no-rebuild --quiet --destdir "$T/stage" > "$T/install.log" 2>&1 ||
    fail "meson install: $(cat "$T/install.log")"
bin=$(find "$T/stage" -path '*/bin/cubincache' -type f | head -1)
[ -x "$bin" ] || fail "no installed cubincache under $T/stage"
export PATH="$(dirname "$bin"):$PATH"

cp -r "$SRCDIR/examples/meson-consumer" "$T/consumer"
make_counting_nvcc
export NVCC="$T/nvcc-count"
meson setup "$T/cb" "$T/consumer" > "$T/setup.log" 2>&1 || fail "meson setup: $(cat "$T/setup.log")"
k="$T/cb/vecadd"

note "CUDA_COMPUTE_CAP=89 ninja"
CUDA_COMPUTE_CAP=89 ninja -C "$T/cb" > "$T/n1.log" 2>&1 || fail "ninja: $(cat "$T/n1.log")"
[ "$(sm_of "$k.sm_89.cubin")" = 89 ] || fail "first build is not sm_89"

note "CUDA_COMPUTE_CAP=90 ninja, no reconfigure: an sm_90 cubin whose ELF says 90"
CUDA_COMPUTE_CAP=90 ninja -C "$T/cb" > "$T/n2.log" 2>&1 || fail "ninja: $(cat "$T/n2.log")"
[ -f "$k.sm_90.cubin" ] || fail "no sm_90 cubin after the arch changed: $(ls "$T/cb")"
[ "$(sm_of "$k.sm_90.cubin")" = 90 ] || fail "vecadd.sm_90.cubin's ELF says sm_$(sm_of "$k.sm_90.cubin")"
[ ! -e "$k.sm_89.cubin" ] || fail "the sm_89 cubin was left beside the sm_90 one"
grep -q '"target":	"sm_90"' "$k.manifest.json" || fail "manifest does not say sm_90"
grep -q '"CUDA_COMPUTE_CAP":	"90"' "$k.manifest.json" || fail "manifest does not record CUDA_COMPUTE_CAP=90"

note "CUDA_COMPUTE_CAP=89 again: a pure cache hit"
reset_nvcc_log
CUDA_COMPUTE_CAP=89 ninja -C "$T/cb" > "$T/n3.log" 2>&1 || fail "ninja: $(cat "$T/n3.log")"
[ "$(nvcc_runs)" = 0 ] || fail "nvcc ran $(nvcc_runs) times on a cache hit: $(cat "$T/nvcc.log")"
[ "$(sm_of "$k.sm_89.cubin")" = 89 ] || fail "back to 89"

note "an unchanged build rewrites nothing"
before=$(mtime_of "$k.manifest.json")
sleep 0.05
CUDA_COMPUTE_CAP=89 ninja -C "$T/cb" > "$T/n4.log" 2>&1 || fail "ninja: $(cat "$T/n4.log")"
[ "$before" = "$(mtime_of "$k.manifest.json")" ] || fail "a hit rewrote the manifest"
[ "$(nvcc_runs)" = 0 ] || fail "nvcc ran on a no-op build"
echo ok
