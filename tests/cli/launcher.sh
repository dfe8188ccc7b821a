#!/usr/bin/env bash
# launcher.sh: `cubincache nvcc ARGS...` on single commands, as build
# systems run them: a hit serves nvcc's object, depfile, stdout and stderr
# and runs no nvcc; a header edit misses; a new arch in the list compiles
# only its device code, unless the source reads __CUDA_ARCH_LIST__; the
# objects equal plain nvcc's
# (but for the temporary file name nvcc writes into every object's symbol
# table); a failing compile gives nvcc's diagnostics and exit code and is
# not cached; an uncacheable command behaves exactly as nvcc; an output
# missing an asked-for target is never stored; -cubin, -ptx, -fatbin and
# -dlink are cached too.
. "$(dirname "$0")/lib.sh"
C="$CUBINCACHE"
make_kernel "$T/src"
cd "$T/src"
mkdir -p out
make_counting_nvcc
# the launcher runs the nvcc it is given: a counting wrapper named nvcc
mkdir -p "$T/bin"
cp "$T/nvcc-count" "$T/bin/nvcc"
N="$T/bin/nvcc"
reset_nvcc_log
# compiles only: identifying the toolchain runs nvcc --version and friends once
# (a split compile runs nvcc once, for --dryrun, then its steps itself)
nvcc_runs() { grep -v cubincache-probe.cu "$T/nvcc.log" | grep -cE -- '(^| )(-c|-dc|-cubin|-ptx|-fatbin|-dlink)( |$)'; }
# nvcc writes the name of its temporary files into every object; two plain
# runs differ there and nowhere else
norm() { perl -pe 's/tmpxft_[0-9a-f]{8}_[0-9]{8}/tmpxft_00000000_00000000/g' "$1"; }
same_object() { cmp -s <(norm "$1") <(norm "$2"); }
GEN=(-gencode arch=compute_86,code=sm_86 -gencode "arch=compute_89,code=[sm_89,compute_89]")
CMAKE_STYLE=(-x cu -c k.cu -o out/k.o -MD -MT out/k.o -MF out/k.o.d)

note "a cold compile runs nvcc once and equals plain nvcc's object"
expect_exit 0 "$C" "$N" "${GEN[@]}" -O3 "${CMAKE_STYLE[@]}"
[ "$(nvcc_runs)" = 1 ] || fail "nvcc ran $(nvcc_runs) times"
"$NVCC_REAL" "${GEN[@]}" -O3 -x cu -c k.cu -o "$T/plain.o" || fail "plain nvcc"
same_object out/k.o "$T/plain.o" || fail "the launcher's object differs from plain nvcc's"
cp out/k.o "$T/cold.o"
cp out/k.o.d "$T/cold.d"
head -1 out/k.o.d | grep -q '^out/k.o : k.cu' || fail "depfile: $(head -2 out/k.o.d)"

note "the same command again: a hit, no nvcc, the same bytes"
rm out/k.o out/k.o.d
reset_nvcc_log
expect_exit 0 "$C" "$N" "${GEN[@]}" -O3 "${CMAKE_STYLE[@]}"
[ "$(nvcc_runs)" = 0 ] || fail "a hit ran nvcc: $(cat "$T/nvcc.log")"
cmp out/k.o "$T/cold.o" || fail "the hit's object differs from the cold one"
cmp out/k.o.d "$T/cold.d" || fail "the hit's depfile differs"
"$C" check --arch 86,89 out/k.o > "$T/chk.out" || fail "check of the object: $(cat "$T/chk.out")"

note "the depfile names the target asked for, and another output name is served too"
expect_exit 0 "$C" "$N" "${GEN[@]}" -O3 -x cu -c k.cu -o out/other.o -MD -MT "my target" -MF out/o.d
[ "$(nvcc_runs)" = 0 ] || fail "another output name missed"
head -1 out/o.d | grep -q '^my target : k.cu' || fail "depfile target: $(head -1 out/o.d)"
cmp out/other.o "$T/cold.o" || fail "the object under another name differs"

note "editing the header misses; touching it does not"
touch kh.cuh
expect_exit 0 "$C" "$N" "${GEN[@]}" -O3 "${CMAKE_STYLE[@]}"
[ "$(nvcc_runs)" = 0 ] || fail "a touch missed"
echo '__device__ inline float cube(float v) { return v * v * v; }' >> kh.cuh
expect_exit 0 "$C" "$N" "${GEN[@]}" -O3 "${CMAKE_STYLE[@]}"
[ "$(nvcc_runs)" = 1 ] || fail "a header edit did not recompile"
grep -q "kh.cuh" out/k.o.d || fail "the depfile lost the header"

note "a new arch in the list compiles only that arch's device code (per-SM caching)"
G2=(-gencode arch=compute_86,code=sm_86 -gencode arch=compute_89,code=sm_89)
G3=("${G2[@]}" -gencode arch=compute_90,code=sm_90)
printf '#include "kh.cuh"\n__global__ void s(float *x) { x[0] = sq(x[1]); }\n' > s.cu
served() { grep -q "device code of $1 virtual archs from the cache ($2 not preprocessed)" "$T/s.err" ||
    fail "$3: $(cat "$T/s.err")"; }
CUBINCACHE_LAUNCH_DEBUG=1 "$C" "$N" "${G2[@]}" -c s.cu -o out/s2.o 2> "$T/s.err" || fail "s.cu: $(cat "$T/s.err")"
served "0 of 2" 0 "cold split"
cp "$T/s.err" "$T/s2.err" # what the cold split said, for a failure below
CUBINCACHE_LAUNCH_DEBUG=1 "$C" "$N" "${G3[@]}" -c s.cu -o out/s3.o -MD -MF out/s3.d 2> "$T/s.err" ||
    fail "s.cu, 3 archs"
served "2 of 3" 2 "adding sm_90 did not reuse sm_86 and sm_89 without preprocessing them (the cold split said: $(cat "$T/s2.err"))"
"$NVCC_REAL" "${G3[@]}" -c s.cu -o "$T/s3.plain.o" -MD -MF "$T/s3.plain.d" || fail "plain s.cu"
same_object out/s3.o "$T/s3.plain.o" || fail "the per-SM object differs from plain nvcc's"
sed -i "s|$T/s3.plain.o|out/s3.o|" "$T/s3.plain.d"
cmp out/s3.d "$T/s3.plain.d" || fail "the depfile of archs not preprocessed differs from nvcc's: $(cat out/s3.d)"
expect_out 0 "RUNS         sm_90" "$C" check --arch 90 out/s3.o
note "...and an edited header reaches every arch, even those last served without preprocessing"
sed -i 's/return v \* v; }/return v * v + 1.0f; }/' kh.cuh
grep -q 'v \* v + 1.0f' kh.cuh || fail "the test did not edit kh.cuh"
CUBINCACHE_LAUNCH_DEBUG=1 "$C" "$N" "${G3[@]}" -c s.cu -o out/s3.o 2> "$T/s.err" || fail "s.cu, edited"
served "0 of 3" 0 "an edited header was not seen"
"$NVCC_REAL" "${G3[@]}" -c s.cu -o "$T/s3.plain.o" || fail "plain s.cu, edited"
same_object out/s3.o "$T/s3.plain.o" || fail "after a header edit the object differs from plain nvcc's"
note "...and a header that reads __CUDA_ARCH_LIST__ keeps its archs to their own list"
printf '#define N_ARCHS (sizeof (int[]){__CUDA_ARCH_LIST__} / sizeof (int))\n' > lh.cuh
printf '#include "lh.cuh"\n__global__ void h(int *x) { x[0] = (int)N_ARCHS; }\n' > hl.cu
"$C" "$N" "${G2[@]}" -c hl.cu -o out/h2.o 2> /dev/null || fail "hl.cu"
CUBINCACHE_LAUNCH_DEBUG=1 "$C" "$N" "${G3[@]}" -c hl.cu -o out/h3.o 2> "$T/s.err" || fail "hl.cu, 3 archs"
served "0 of 3" 0 "device code whose header reads the arch list was reused for another list"
"$NVCC_REAL" "${G3[@]}" -c hl.cu -o "$T/h3.plain.o" || fail "plain hl.cu"
same_object out/h3.o "$T/h3.plain.o" || fail "hl.cu's object differs from plain nvcc's"
note "...but reuses them for the same list (sm_86 and sm_89; sm_90 now also embeds its PTX)"
G3P=("${G2[@]}" -gencode "arch=compute_90,code=[sm_90,compute_90]")
CUBINCACHE_LAUNCH_DEBUG=1 "$C" "$N" "${G3P[@]}" -c hl.cu -o out/h3p.o 2> "$T/s.err" || fail "hl.cu, PTX"
served "2 of 3" 2 "the same arch list did not reuse the archs"
"$NVCC_REAL" "${G3P[@]}" -c hl.cu -o "$T/h3p.plain.o" || fail "plain hl.cu, PTX"
same_object out/h3p.o "$T/h3p.plain.o" || fail "hl.cu's object with PTX differs from plain nvcc's"
note "...but not when the source reads __CUDA_ARCH_LIST__ (CUB and Thrust name things by it)"
printf '__global__ void l(int *x) { int v[] = {__CUDA_ARCH_LIST__}; x[0] = (int)(sizeof v / sizeof *v); }\n' > list.cu
CUBINCACHE_LAUNCH_DEBUG=1 "$C" "$N" "${G2[@]}" -c list.cu -o out/l2.o 2> /dev/null || fail "list.cu"
CUBINCACHE_LAUNCH_DEBUG=1 "$C" "$N" "${G3[@]}" -c list.cu -o out/l3.o 2> "$T/l.err" || fail "list.cu, 3 archs"
grep -q "device code of 0 of 3 virtual archs from the cache (0 not" "$T/l.err" ||
    fail "device code that reads the arch list was reused for another list: $(cat "$T/l.err")"
"$NVCC_REAL" "${G3[@]}" -c list.cu -o "$T/l3.plain.o" || fail "plain list.cu"
same_object out/l3.o "$T/l3.plain.o" || fail "list.cu's object differs from plain nvcc's"

note "nvcc's warnings are replayed on a hit"
printf '__global__ void w(float *x) { int unused = 3; x[0] = 1; }\n' > warn.cu
"$C" "$N" -arch=sm_86 -c warn.cu -o out/w.o 2> "$T/w1.err" || fail "warn.cu"
grep -q "declared but never referenced" "$T/w1.err" || fail "no warning from nvcc: $(cat "$T/w1.err")"
reset_nvcc_log
"$C" "$N" -arch=sm_86 -c warn.cu -o out/w.o 2> "$T/w2.err" || fail "warn.cu again"
[ "$(nvcc_runs)" = 0 ] || fail "warn.cu missed"
cmp "$T/w1.err" "$T/w2.err" || fail "the hit's stderr differs: $(cat "$T/w2.err")"

note "a failing compile: nvcc's diagnostics and exit code, nothing cached"
printf '__global__ void bad(float *x) { x[0] = undefined_thing; }\n' > bad.cu
"$NVCC_REAL" -arch=sm_86 -c bad.cu -o out/bad.o > "$T/p.out" 2> "$T/p.err"
want=$?
"$C" "$N" -arch=sm_86 -c bad.cu -o out/bad.o > "$T/l.out" 2> "$T/l.err"
got=$?
[ "$got" = "$want" ] && [ "$want" != 0 ] || fail "exit $got, nvcc's is $want"
diff <(sed 's/tmpxft_[0-9a-f_]*//g' "$T/p.err") <(sed 's/tmpxft_[0-9a-f_]*//g' "$T/l.err") ||
    fail "diagnostics differ"
reset_nvcc_log
"$C" "$N" -arch=sm_86 -c bad.cu -o out/bad.o > /dev/null 2>&1
[ "$(nvcc_runs)" -ge 1 ] || fail "a failed compile was served from the cache"

note "uncacheable commands run as nvcc: a link, -E"
stores_before=$("$C" cache stats --json | sed -n 's/.*"uncacheable":\([0-9]*\).*/\1/p')
printf '#include "kh.cuh"\n__global__ void k(float *x) { x[0] = sq(x[1]); }\nint main() { k<<<1, 1>>>(0); return 0; }\n' > app.cu
expect_exit 0 "$C" "$N" -arch=sm_86 -c app.cu -o out/app.o
expect_exit 0 "$C" "$N" -arch=sm_86 out/app.o -o out/app
[ -x out/app ] || fail "the link made no executable"
"$C" "$N" -E k.cu > "$T/l.E" || fail "-E"
"$NVCC_REAL" -E k.cu > "$T/p.E" || fail "plain -E"
cmp "$T/l.E" "$T/p.E" || fail "-E output differs"
after=$("$C" cache stats --json | sed -n 's/.*"uncacheable":\([0-9]*\).*/\1/p')
[ "$after" = $((stores_before + 2)) ] || fail "uncacheable went $stores_before -> $after"
"$NVCC_REAL" -arch=sm_86 -c no_such_file.cu -o out/x.o 2> "$T/p.err"
want=$?
"$C" "$N" -arch=sm_86 -c no_such_file.cu -o out/x.o 2> "$T/l.err"
got=$?
[ "$got" = "$want" ] && [ "$want" != 0 ] || fail "a missing input: exit $got, nvcc's is $want"
cmp "$T/p.err" "$T/l.err" || fail "a missing input: $(cat "$T/l.err") vs $(cat "$T/p.err")"

note "-cubin, -ptx, -fatbin and -dlink are cached"
for mode in "-cubin -arch=sm_89 -o out/k.cubin" "-ptx -arch=sm_89 -o out/k.ptx" \
            "-fatbin ${GEN[*]} -o out/k.fatbin"; do
    # shellcheck disable=SC2086
    expect_exit 0 "$C" "$N" $mode k.cu
    reset_nvcc_log
    # shellcheck disable=SC2086
    expect_exit 0 "$C" "$N" $mode k.cu
    [ "$(nvcc_runs)" = 0 ] || fail "'$mode' missed the second time"
done
[ "$(sm_of out/k.cubin)" = 89 ] || fail "the cubin is sm_$(sm_of out/k.cubin)"
grep -q '^.target sm_89' out/k.ptx || fail "the PTX is not for sm_89"
expect_exit 0 "$C" "$N" -arch=sm_86 -dc k.cu -o out/rdc.o
expect_exit 0 "$C" "$N" -arch=sm_86 -dlink out/rdc.o -o out/dl.o
reset_nvcc_log
expect_exit 0 "$C" "$N" -arch=sm_86 -dlink out/rdc.o -o out/dl.o
[ "$(nvcc_runs)" = 0 ] || fail "-dlink missed the second time"

note "an output without a target the command asked for is never stored"
cat > "$T/bin/nvcc-drops-89" <<EOF
#!/bin/sh
# nvcc, but sm_89 quietly becomes sm_86
echo "\$*" >> "$T/nvcc.log"
args=\$(printf '%s\n' "\$@" | sed 's/compute_89/compute_86/g; s/sm_89/sm_86/g')
IFS='
'
exec "$NVCC_REAL" \$args
EOF
chmod +x "$T/bin/nvcc-drops-89"
printf '__global__ void d(float *x) { x[0] = 2; }\n' > drop.cu
expect_out 0 "not caching 'out/drop.o': 'out/drop.o' has no sm_89" "$C" "$T/bin/nvcc-drops-89" -gencode arch=compute_89,code=sm_89 -c drop.cu -o out/drop.o
reset_nvcc_log
expect_exit 0 "$C" "$T/bin/nvcc-drops-89" -gencode arch=compute_89,code=sm_89 -c drop.cu -o out/drop.o
[ "$(nvcc_runs)" = 1 ] || fail "an output missing sm_89 was stored and served"
