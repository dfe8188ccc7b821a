#!/usr/bin/env bash
# build_outputs.sh: what `cubincache build` writes, what it refuses, and its
# exit codes (0 ok, 1 compile failure, 2 usage, 4 environment).
. "$(dirname "$0")/lib.sh"
make_kernel "$T/src"
cd "$T/src"

note "multi-target build: one cubin per real target, ELF SM as named"
expect_exit 0 "$CUBINCACHE" build -a "86;90a,100f 8.9+PTX" -o "$T/out" -n kern --depfile "$T/kern.d" k.cu -- -O3
for t in 86:86 89:89 90a:90 100f:100; do
    f="$T/out/kern.sm_${t%%:*}.cubin"
    [ -f "$f" ] || fail "missing $f"
    [ "$(sm_of "$f")" = "${t##*:}" ] || fail "$f: ELF SM is $(sm_of "$f"), expected ${t##*:}"
done
grep -q '^\.target sm_89$' "$T/out/kern.compute_89.ptx" || fail "PTX target"
[ "$(ls "$T/out" | wc -l)" = 6 ] || fail "expected 5 images and a manifest: $(ls "$T/out")"
grep -q '"target":	"sm_90a"' "$T/out/kern.manifest.json" || fail "manifest lacks sm_90a"
grep -q '"rule":	"explicit"' "$T/out/kern.manifest.json" || fail "manifest lacks the arch rule"
grep -q "kh.cuh" "$T/kern.d" || fail "depfile lacks the header"
head -1 "$T/kern.d" | grep -q "^$T/out/kern.manifest.json:" || fail "depfile target: $(head -1 "$T/kern.d")"

note "the five targets keep two dependency lists in the cache (the SASS ones share one; the PTX"
note "target runs no ptxas, so it does not look for one), and a record each"
[ "$(find "$CUBINCACHE_DIR/v1/deps" -name '*.dep' | wc -l)" = 2 ] || fail "expected two shared dependency lists"
[ "$(find "$CUBINCACHE_DIR/v1/direct" -name '*.dep' | wc -l)" = 5 ] || fail "expected five dependency records"

note "a rebuild is all hits and rewrites nothing"
before=$(for f in "$T"/out/* "$T/kern.d"; do mtime_of "$f"; done)
sleep 0.05
expect_out 0 "5 hit, 0 miss" "$CUBINCACHE" build -v -a "86;90a,100f 8.9+PTX" -o "$T/out" -n kern --depfile "$T/kern.d" k.cu -- -O3
after=$(for f in "$T"/out/* "$T/kern.d"; do mtime_of "$f"; done)
[ "$before" = "$after" ] || fail "a hit touched outputs"

note "--ptx adds PTX of the highest arch"
expect_exit 0 "$CUBINCACHE" build -a 86,90 --ptx -o "$T/ptx" k.cu
[ -f "$T/ptx/k.compute_90.ptx" ] || fail "--ptx did not add compute_90"

note "usage errors exit 2 and say what to do"
expect_out 2 "no SOURCE" "$CUBINCACHE" build
expect_out 2 "unknown option" "$CUBINCACHE" build --frobnicate k.cu
expect_out 2 "sm_70 cannot be built" "$CUBINCACHE" build -a 70 k.cu
expect_out 2 "sm_75 sm_80" "$CUBINCACHE" build -a sm_70 k.cu
expect_out 2 "'ninety'" "$CUBINCACHE" build -a ninety k.cu
expect_out 2 "conflicts" "$CUBINCACHE" build -a 90 k.cu -- -arch=sm_89
expect_out 2 "--arch" "$CUBINCACHE" build -a 90 k.cu -- -gencode arch=compute_89,code=sm_89
expect_out 2 "does not exist" "$CUBINCACHE" build -a 90 missing.cu
expect_out 2 "'other.cu' does not exist" "$CUBINCACHE" build -a 90 k.cu other.cu
expect_out 2 "is given twice" "$CUBINCACHE" build -a 90 k.cu ./k.cu
expect_out 2 "CUDA_COMPUTE_CAP='abc'" env CUDA_COMPUTE_CAP=abc "$CUBINCACHE" build k.cu

note "nvcc missing exits 4 and names where it looked"
expect_out 4 "not an executable" env NVCC=/nonexistent/nvcc "$CUBINCACHE" build -a 90 k.cu
expect_out 4 "/nonexistent/nvcc" "$CUBINCACHE" build --nvcc /nonexistent/nvcc -a 90 k.cu

note "a compile error exits 1, shows nvcc's diagnostics, stores and writes nothing"
mkdir -p "$T/bad" && cd "$T/bad"
printf 'extern "C" __global__ void k(float *x) { x[0] = undefined_thing; }\n' > bad.cu
n0=$(count_entries)
expect_out 1 "undefined_thing" "$CUBINCACHE" build -a 86,90 -o "$T/badout" bad.cu
grep -q "nvcc failed for 2 of 2 targets" "$T/last.out" || fail "summary line: $(cat "$T/last.out")"
[ "$(count_entries)" = "$n0" ] || fail "a failed compile stored an entry"
[ ! -e "$T/badout/bad.manifest.json" ] || fail "a failed compile wrote a manifest"
[ -z "$(ls -A "$T/badout" 2>/dev/null)" ] || fail "a failed compile left files: $(ls -A "$T/badout")"

note "an environment override of the arch is caught before nvcc runs, not filed as the wrong target"
cd "$T/src"
make_counting_nvcc
for v in "-arch=sm_89" "-O3 -gencode arch=compute_89,code=sm_89" "--gpu-architecture sm_89"; do
    reset_nvcc_log
    expect_out 2 "NVCC_APPEND_FLAGS='$v' sets the targets" env NVCC="$T/nvcc-count" NVCC_APPEND_FLAGS="$v" "$CUBINCACHE" build -a 90 -o "$T/ovr" k.cu
    expect_out 2 "NVCC_PREPEND_FLAGS='$v' sets the targets" env NVCC="$T/nvcc-count" NVCC_PREPEND_FLAGS="$v" "$CUBINCACHE" build -a 90 -o "$T/ovr" k.cu
    [ "$(nvcc_runs)" = 0 ] || fail "nvcc ran with an arch override in the environment: $(cat "$T/nvcc.log")"
done
[ ! -e "$T/ovr/k.sm_90.cubin" ] || fail "a build with an arch override wrote k.sm_90.cubin"
expect_exit 0 env NVCC_APPEND_FLAGS="-lineinfo" "$CUBINCACHE" build -q -a 90 -o "$T/ovr" k.cu

note "a toolchain that silently builds another arch is caught by the ELF check"
cat > "$T/nvcc-liar" <<EOF2
#!/bin/sh
# rewrites every sm_90 request into sm_89, as a broken wrapper might
for a in "\$@"; do
    case "\$a" in arch=*) a=\$(printf %s "\$a" | sed 's/_90/_89/g') ;; esac
    set -- "\$@" "\$a"; shift
done
exec "$NVCC_REAL" "\$@"
EOF2
chmod +x "$T/nvcc-liar"
n0=$(count_entries)
expect_out 1 "holds sm_89 code" env NVCC="$T/nvcc-liar" "$CUBINCACHE" build -a 90 -o "$T/liar" k.cu
grep -q "a wrapper around it, built another target" "$T/last.out" || fail "the hint should blame the wrapper: $(cat "$T/last.out")"
grep -q "NVCC_PREPEND_FLAGS" "$T/last.out" && fail "the hint blames the flags, which are not the cause: $(cat "$T/last.out")"
[ ! -e "$T/liar/k.sm_90.cubin" ] || fail "a mislabeled output was written"
[ "$(count_entries)" = "$n0" ] || fail "a mislabeled output was stored"

note "CUBINCACHE_DISABLE=1 compiles without the cache"
rm -rf "$T/nocache"
expect_exit 0 env CUBINCACHE_DISABLE=1 CUBINCACHE_DIR="$T/nocache" "$CUBINCACHE" build -a 90 -o "$T/dis" k.cu
[ "$(sm_of "$T/dis/k.sm_90.cubin")" = 90 ] || fail "disabled build output"
[ ! -e "$T/nocache" ] || fail "CUBINCACHE_DISABLE=1 touched the cache"

note "changing the target set removes what is no longer asked for"
expect_exit 0 "$CUBINCACHE" build -a 86,89 -o "$T/set" k.cu
expect_exit 0 "$CUBINCACHE" build -a 89 -o "$T/set" k.cu
[ ! -e "$T/set/k.sm_86.cubin" ] && [ -e "$T/set/k.sm_89.cubin" ] || fail "stale output kept: $(ls "$T/set")"
note "an out dir spelled NAME.bundle names the bundle, is the depfile's target, and check finds it"
expect_exit 0 "$CUBINCACHE" build -a 90 -o "$T/nest/kb.bundle" --depfile "$T/kb.d" k.cu
[ -f "$T/nest/kb.bundle/kb.manifest.json" ] && [ "$(sm_of "$T/nest/kb.bundle/kb.sm_90.cubin")" = 90 ] ||
    fail "NAME.bundle: $(ls -R "$T/nest")"
head -1 "$T/kb.d" | grep -q "^$T/nest/kb.bundle:" || fail "depfile target: $(head -1 "$T/kb.d")"
expect_out 0 "OK           sm_90     kb.sm_90.cubin: current" "$CUBINCACHE" check "$T/nest"
expect_out 2 "out dir '$T/nest/kb.bundle' is spelled as bundle 'kb'" "$CUBINCACHE" build -a 90 -o "$T/nest/kb.bundle" -n other k.cu

note "an out dir with a space and a comma: built, its dependencies recorded"
expect_exit 0 "$CUBINCACHE" build -a 80 -o "$T/with space,comma" k.cu
expect_out 0 "OK           sm_80     k.sm_80.cubin: current" "$CUBINCACHE" check "$T/with space,comma"
grep -q '"path":	"'"$PWD"'/kh.cuh"' "$T/with space,comma/k.manifest.json" ||
    fail "the header is not a recorded dependency: $(grep -c path "$T/with space,comma/k.manifest.json") paths"

note "a header included only under __CUDA_ARCH__ >= 900 is a dependency of sm_90 alone"
printf '#if __CUDA_ARCH__ >= 900\n#include "only90.cuh"\n#endif\n__global__ void c(float *x) { x[0] = 1.0f; }\n' > cond.cu
printf '#define ONLY90 1\n' > only90.cuh
expect_exit 0 "$CUBINCACHE" build -a 80,90 -o "$T/cond" cond.cu
expect_out 0 "OK" "$CUBINCACHE" check "$T/cond"
printf '#define ONLY90 2\n' > only90.cuh
expect_out 1 "STALE        sm_90     cond.sm_90.cubin: dependency '$PWD/only90.cuh' changed" "$CUBINCACHE" check "$T/cond"
grep -q "OK           sm_80     cond.sm_80.cubin: current" "$T/last.out" || fail "sm_80 read only90.cuh: $(cat "$T/last.out")"
expect_out 0 "1 hit, 1 miss" "$CUBINCACHE" build -v -a 80,90 -o "$T/cond" cond.cu

note "a cold build on a terminal shows one updating status line; not through a pipe, -q or NO_COLOR's escapes"
command -v script > /dev/null || fail "script (util-linux) is needed to give the build a terminal"
status_run() { # OUT ARGS...: the build's terminal output, via script(1)
    local out=$1; shift
    rm -rf "$CUBINCACHE_DIR" "$T/tty"
    script -qec "$*" /dev/null > "$out" 2>&1 < /dev/null
}
status_run "$T/tty.txt" env -u NO_COLOR "$CUBINCACHE" build -a 75,86 -o "$T/tty" k.cu || fail "build on a pty: $(cat -v "$T/tty.txt")"
grep -q "k: \[0/2\] 0.0 s  compiling sm_75" "$T/tty.txt" || fail "no status line: $(cat -v "$T/tty.txt")"
grep -q "k: \[2/2\]" "$T/tty.txt" || fail "the status line never reached 2/2: $(cat -v "$T/tty.txt")"
grep -q $'\e\[K' "$T/tty.txt" || fail "the status line is not erased: $(cat -v "$T/tty.txt")"
[ "$(tail -c 4 "$T/tty.txt" | od -An -c | tr -d ' ')" = '\r033[K' ] ||
    fail "the status line is left on the terminal: $(tail -c 40 "$T/tty.txt" | cat -v)"
status_run "$T/nc.txt" env NO_COLOR=1 "$CUBINCACHE" build -a 75,86 -o "$T/tty" k.cu
grep -q "k: \[2/2\]" "$T/nc.txt" && ! grep -q $'\e' "$T/nc.txt" || fail "NO_COLOR: $(cat -v "$T/nc.txt")"
status_run "$T/q.txt" "$CUBINCACHE" build -q -a 75,86 -o "$T/tty" k.cu
[ ! -s "$T/q.txt" ] || fail "-q printed: $(cat -v "$T/q.txt")"
rm -rf "$CUBINCACHE_DIR" "$T/tty"
"$CUBINCACHE" build -a 75,86 -o "$T/tty" k.cu > "$T/pipe.txt" 2>&1 || fail "build through a pipe"
[ ! -s "$T/pipe.txt" ] || fail "a build through a pipe (as under ninja) printed: $(cat -v "$T/pipe.txt")"
echo ok
