#!/usr/bin/env bash
# launcher_projects.sh: a real CMake project (CMAKE_CUDA_COMPILER_LAUNCHER)
# and a Meson project with native cuda sources (the launcher in a native
# file), both tests/launcher/project, built through `cubincache nvcc`:
# cold, no-op, a clean rebuild served from the cache, a header edit, an arch
# list change, CUDA_COMPUTE_CAP mapped to the arch list and switched back;
# the objects equal a plain build's (but for nvcc's temporary file name in
# the symbol table) and `check --arch` says the programs run.
. "$(dirname "$0")/lib.sh"
command -v cmake > /dev/null || { echo "cmake is not installed"; exit 77; }
C="$CUBINCACHE"
cp -r "$SRCDIR/tests/launcher/project" "$T/p"
make_counting_nvcc
mkdir -p "$T/bin"
cp "$T/nvcc-count" "$T/bin/nvcc"
N="$T/bin/nvcc"
# compiles, not toolchain probes (a split compile runs nvcc once, for --dryrun)
compiles() { grep -v cubincache-probe.cu "$T/nvcc.log" | grep -cE -- '(^| )-c( |$)'; }
norm() { perl -pe 's/tmpxft_[0-9a-f]{8}_[0-9]{8}/tmpxft_00000000_00000000/g' "$1"; }
same_object() { cmp -s <(norm "$1") <(norm "$2"); }
gen=Ninja
command -v ninja > /dev/null || gen="Unix Makefiles"

cm_configure() { # cm_configure DIR [cmake args...]
    local d=$1; shift
    cmake -S "$T/p" -B "$d" -G "$gen" -DCMAKE_CUDA_COMPILER="$N" \
        -DCMAKE_CUDA_COMPILER_LAUNCHER="$C" "$@" > "$T/cm.log" 2>&1 ||
        fail "cmake configure: $(tail -20 "$T/cm.log")"
}
cm_build() {
    cmake --build "$1" > "$T/cmb.log" 2>&1 || fail "cmake build: $(tail -30 "$T/cmb.log")"
}

note "CMake: a cold build compiles both sources once; objects equal a plain build's"
cm_configure "$T/cb" -DCMAKE_CUDA_ARCHITECTURES="86;89"
reset_nvcc_log
cm_build "$T/cb"
[ "$(compiles)" = 2 ] || fail "cold: $(compiles) compiles: $(cat "$T/nvcc.log")"
cmake -S "$T/p" -B "$T/plain" -G "$gen" -DCMAKE_CUDA_COMPILER="$NVCC_REAL" \
    -DCMAKE_CUDA_ARCHITECTURES="86;89" > "$T/cm.log" 2>&1 || fail "plain configure"
cmake --build "$T/plain" > "$T/cmb.log" 2>&1 || fail "plain build: $(tail -20 "$T/cmb.log")"
for o in main.cu.o kern.cu.o; do
    a=$(find "$T/cb" -name "$o") b=$(find "$T/plain" -name "$o")
    same_object "$a" "$b" || fail "$o differs from the plain build's"
done
"$C" check --arch 86,89 "$T/cb/app" > "$T/chk.out" 2>&1 || fail "check: $(cat "$T/chk.out")"
grep -q "^RUNS         sm_89" "$T/chk.out" || fail "check: $(cat "$T/chk.out")"

note "CMake: a no-op build runs nothing; a clean rebuild is served from the cache"
reset_nvcc_log
cm_build "$T/cb"
[ "$(compiles)" = 0 ] || fail "no-op: $(compiles) compiles"
cmake --build "$T/cb" --target clean > /dev/null 2>&1
cm_build "$T/cb"
[ "$(compiles)" = 0 ] || fail "clean rebuild: $(compiles) compiles"
"$C" check --arch 86,89 "$T/cb/app" > /dev/null 2>&1 || fail "check after the clean rebuild"

note "CMake: a header edit recompiles the sources that include it"
echo '__device__ inline float thrice(float v) { return 3.0f * v; }' >> "$T/p/kern.cuh"
cm_build "$T/cb"
[ "$(compiles)" = 2 ] || fail "header edit: $(compiles) compiles"

note "CMake: a new arch in the list compiles; the old list is still cached"
cm_configure "$T/cb" -DCMAKE_CUDA_ARCHITECTURES="86;89;90"
reset_nvcc_log
CUBINCACHE_LAUNCH_DEBUG=1 cm_build "$T/cb"
[ "$(compiles)" = 2 ] || fail "arch change: $(compiles) compiles"
[ "$(grep -c "device code of 2 of 3 virtual archs from the cache" "$T/cmb.log")" = 2 ] ||
    fail "the new arch did not reuse the old archs' device code: $(grep note "$T/cmb.log")"
"$C" check --arch 90 "$T/cb/app" > "$T/chk.out" 2>&1 || fail "sm_90 after the change: $(cat "$T/chk.out")"
cm_configure "$T/cb" -DCMAKE_CUDA_ARCHITECTURES="86;89"
reset_nvcc_log
cm_build "$T/cb"
[ "$(compiles)" = 0 ] || fail "back to 86;89: $(compiles) compiles"

note "CMake: CUDA_COMPUTE_CAP mapped to the arch list, switched and switched back"
rm -rf "$T/cc"
CUDA_COMPUTE_CAP=89 cm_configure "$T/cc"
cm_build "$T/cc"
expect_out 1 "WILL-NOT-RUN sm_90" "$C" check --arch 90 "$T/cc/app"
CUDA_COMPUTE_CAP=90 cm_configure "$T/cc"
cm_build "$T/cc"
expect_out 0 "RUNS         sm_90     app: runs (sm_90 SASS" "$C" check --arch 90 "$T/cc/app"
reset_nvcc_log
CUDA_COMPUTE_CAP=89 cm_configure "$T/cc"
cm_build "$T/cc"
[ "$(compiles)" = 0 ] || fail "back to 89: $(compiles) compiles"
expect_out 1 "WILL-NOT-RUN sm_90" "$C" check --arch 90 "$T/cc/app"

note "Meson: native cuda sources through the launcher in a native file"
if command -v meson > /dev/null && command -v ninja > /dev/null; then
    printf "[binaries]\ncuda = ['%s', '%s']\n" "$C" "$N" > "$T/native.ini"
    meson setup --native-file "$T/native.ini" "$T/mb" "$T/p" > "$T/ms.log" 2>&1 ||
        fail "meson setup: $(tail -20 "$T/ms.log")"
    reset_nvcc_log
    ninja -C "$T/mb" > "$T/mn.log" 2>&1 || fail "ninja: $(tail -30 "$T/mn.log")"
    [ "$(compiles)" = 2 ] || fail "meson cold: $(compiles) compiles"
    expect_out 0 "RUNS         sm_89" "$C" check --arch 89 "$T/mb/app"
    reset_nvcc_log
    ninja -C "$T/mb" > "$T/mn.log" 2>&1 || fail "ninja no-op"
    grep -q "no work to do" "$T/mn.log" || fail "meson no-op did work: $(cat "$T/mn.log")"
    ninja -C "$T/mb" clean > /dev/null 2>&1
    ninja -C "$T/mb" > "$T/mn.log" 2>&1 || fail "ninja after clean"
    [ "$(compiles)" = 0 ] || fail "meson clean rebuild: $(compiles) compiles"
    # Meson passes no -MD for cuda sources, so ninja does not see headers: a
    # clean rebuild after a header edit shows that the launcher does
    echo '// edited' >> "$T/p/kern.cuh"
    ninja -C "$T/mb" clean > /dev/null 2>&1
    ninja -C "$T/mb" > "$T/mn.log" 2>&1 || fail "ninja after the edit"
    [ "$(compiles)" = 2 ] || fail "meson header edit, clean rebuild: $(compiles) compiles"
    echo '// edited' >> "$T/p/kern.cu"
    reset_nvcc_log
    ninja -C "$T/mb" > "$T/mn.log" 2>&1 || fail "ninja after a source edit"
    [ "$(compiles)" = 1 ] || fail "meson source edit: $(compiles) compiles"
    meson configure "$T/mb" -Darchs=86,89,90 > /dev/null || fail "meson configure"
    reset_nvcc_log
    ninja -C "$T/mb" > "$T/mn.log" 2>&1 || fail "ninja with sm_90"
    [ "$(compiles)" = 2 ] || fail "meson arch change: $(compiles) compiles"
    expect_out 0 "RUNS         sm_90" "$C" check --arch 90 "$T/mb/app"
fi
