#!/usr/bin/env bash
# make_corpus.sh OUT NVCC [STAMP]: the deploy-gate corpus, real nvcc output of
# every shape a CUDA program takes: plain builds, -rdc with a device link
# for all or a subset of the objects' archs, -rdc objects and static
# libraries without one, one and two translation units with different
# arch sets, three fatbin compression modes, shared libraries loaded by an
# executable, static libraries, PTX only, sm_90a, sm_100 only and dynamic
# parallelism. Each program runs its kernels and checks their results
# (common.h); tests/corpus/truth-sm_90.txt records what an H200 did with
# each, and tests assert that `check --arch 90` and `select --cc 9.0` agree.
#
# Writes OUT/members.txt: "<member> <file> <program> <what>", one per line:
# the file judged, the program whose run decides the truth, and either
# PROGRAM (all its kernels ran) or a kernel name (that kernel ran). STAMP
# (or OUT/stamp) is written last, so a partial corpus is never used.
set -euo pipefail
out=$1
nvcc=$2
stamp_out=${3:-}
case "$stamp_out" in ""|/*) ;; *) stamp_out="$PWD/$stamp_out" ;; esac
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
# OUTDIR is the build's declared output: dated to the epoch when this fails,
# so the next build runs it again instead of taking a partial directory
trap 'rc=$?; [ "$rc" = 0 ] || touch -d @0 "$out"' EXIT
rm -f "$out/stamp" "$out/members.txt"
cd "$out"
top=$(dirname "$(dirname "$(readlink -f "$(command -v "$nvcc")")")")
cudalib=$top/lib64
[ -d "$cudalib" ] || cudalib=$top/targets/x86_64-linux/lib
gxx=${CXX:-g++}
hostlink=(-L"$cudalib" -lcudart_static -ldl -lpthread -lrt)

g() { # g 86 90 ... -> -gencode for each SASS target; compute_XY gives PTX
    local a
    for a in "$@"; do
        case "$a" in
            compute_*) echo "-gencode arch=$a,code=$a" ;;
            *) echo "-gencode arch=compute_$a,code=sm_$a" ;;
        esac
    done
}
I=(-I"$src")
jobs=()
run() { "$@" & jobs+=($!); if [ ${#jobs[@]} -ge 4 ]; then wait "${jobs[0]}"; jobs=("${jobs[@]:1}"); fi; }
drain() { local j; for j in "${jobs[@]}"; do wait "$j"; done; jobs=(); }
member() { echo "$*" >> "$out/members.txt.new"; }
: > "$out/members.txt.new"

# ---- plain: each translation unit's fatbin is its own module -------------
plain_mix() { # two translation units, one for sm_86 only, one for sm_90 only
    "$nvcc" "${I[@]}" --compress-mode="$1" -c $(g 86) "$src/two_a.cu" -o "p2mix_$1.a.o"
    "$nvcc" "${I[@]}" --compress-mode="$1" -c $(g 90) "$src/two_b.cu" -o "p2mix_$1.b.o"
    "$nvcc" $(g 86) "p2mix_$1.a.o" "p2mix_$1.b.o" -o "p2mix_$1"
}
build_plain() {
    run "$nvcc" "${I[@]}" $(g 90) "$src/one.cu" -o p1_90
    run "$nvcc" "${I[@]}" $(g 86) "$src/one.cu" -o p1_86
    run "$nvcc" "${I[@]}" $(g 86 compute_80) "$src/one.cu" -o p1_86_ptx80
    run "$nvcc" "${I[@]}" $(g 86 90) "$src/two_a.cu" "$src/two_b.cu" -o p2_86_90
    for c in none default size; do
        run plain_mix "$c"
    done
    member p1_90 p1_90 p1_90 PROGRAM
    member p1_86 p1_86 p1_86 PROGRAM
    member p1_86_ptx80 p1_86_ptx80 p1_86_ptx80 PROGRAM
    member p2_86_90 p2_86_90 p2_86_90 PROGRAM
    for c in none default size; do
        member p2mix_$c p2mix_$c p2mix_$c PROGRAM
        member p2mix_$c.a.o p2mix_$c.a.o p2mix_$c k_a
        member p2mix_$c.b.o p2mix_$c.b.o p2mix_$c k_b
    done
}

# ---- -rdc: relocatable code, joined by a device link ------------------------
rdc_objs() { # rdc_objs PREFIX COMPRESS "A archs" "B archs"
    "$nvcc" "${I[@]}" -DCORPUS_RDC -rdc=true --compress-mode="$2" -c $(g $3) "$src/two_a.cu" -o "$1.a.o"
    "$nvcc" "${I[@]}" -DCORPUS_RDC -rdc=true --compress-mode="$2" -c $(g $4) "$src/two_b.cu" -o "$1.b.o"
}
rdc_prog() { # rdc_prog NAME COMPRESS "A archs" "B archs" "dlink archs"
    rdc_objs "$1" "$2" "$3" "$4"
    "$nvcc" -dlink --compress-mode="$2" $(g $5) "$1.a.o" "$1.b.o" -o "$1.dlink.o"
    "$gxx" "$1.a.o" "$1.b.o" "$1.dlink.o" "${hostlink[@]}" -o "$1"
}
rdc_one() { # rdc_one NAME "archs" "dlink archs"
    "$nvcc" "${I[@]}" -rdc=true -c $(g $2) "$src/one.cu" -o "$1.o"
    "$nvcc" -dlink $(g $3) "$1.o" -o "$1.dlink.o"
    "$gxx" "$1.o" "$1.dlink.o" "${hostlink[@]}" -o "$1"
}
rdc_archive() {
    "$nvcc" "${I[@]}" -DCORPUS_RDC -rdc=true -c $(g 86 90) "$src/two_b.cu" -o arrdc.b.o
    ar rcs libbrdc.a arrdc.b.o
    "$nvcc" "${I[@]}" -DCORPUS_RDC -rdc=true $(g 86 90) "$src/two_a.cu" libbrdc.a -o ar_rdc
}
build_rdc() {
    run rdc_one r1_all "86 90" "86 90"
    run rdc_one r1_sub "86 90" "86"
    for c in none default size; do
        run rdc_prog r2_all_$c "$c" "86 90" "86 90" "86 90"
        run rdc_prog r2_sub_$c "$c" "86 90" "86 90" "86"
    done
    run rdc_prog r2_mixsub default "86 90" "86" "86"
    # -rdc objects and a static library of one, with no device link yet
    run rdc_archive
    member r1_all r1_all r1_all PROGRAM
    member r1_sub r1_sub r1_sub PROGRAM
    for c in none default size; do
        member r2_all_$c r2_all_$c r2_all_$c PROGRAM
        member r2_sub_$c r2_sub_$c r2_sub_$c PROGRAM
    done
    member r2_mixsub r2_mixsub r2_mixsub PROGRAM
    member r2_sub_default.a.o r2_sub_default.a.o r2_all_default PROGRAM
    member r2_mixsub.b.o r2_mixsub.b.o r2_mixsub PROGRAM
    member ar_rdc ar_rdc ar_rdc PROGRAM
    member libbrdc.a libbrdc.a ar_rdc k_b
}

# ---- shared and static libraries -------------------------------------------
so_lib() { # so_lib NAME "archs" [-rdc=true]
    "$nvcc" "${I[@]}" -shared -Xcompiler -fPIC ${3:-} $(g $2) -Xlinker -soname="lib$1.so" \
        "$src/lib.cu" -o "lib$1.so"
}
so_exe() { # so_exe NAME LIB "archs"
    "$nvcc" "${I[@]}" $(g $3) "$src/uselib.cu" -L. -l"$2" -Xlinker -rpath -Xlinker '$ORIGIN' -o "$1"
}
so_pair() { # so_pair EXE LIB "lib archs" "exe archs" [-rdc=true]
    so_lib "$2" "$3" ${5:-}
    so_exe "$1" "$2" "$4"
}
ar_pair() { # ar_pair EXE LIBNAME "lib archs" "exe archs"
    "$nvcc" "${I[@]}" -c $(g $3) "$src/two_b.cu" -o "$2.b.o"
    ar rcs "lib$2.a" "$2.b.o"
    "$nvcc" "${I[@]}" $(g $4) "$src/two_a.cu" "lib$2.a" -o "$1"
}
build_libs() {
    run so_pair so_lib86_exe90 c86 86 90
    run so_pair so_lib90_exe90 c90 90 90
    run so_pair so_rdc_exe90 crdc "86 90" 90 -rdc=true
    run ar_pair ar_86_90 b86_90 "86 90" "86 90"
    run ar_pair ar_b86_exe90 b86 86 90
    member so_lib86_exe90 so_lib86_exe90 so_lib86_exe90 PROGRAM
    member libc86.so libc86.so so_lib86_exe90 k_lib
    member so_lib90_exe90 so_lib90_exe90 so_lib90_exe90 PROGRAM
    member libc90.so libc90.so so_lib90_exe90 k_lib
    member so_rdc_exe90 so_rdc_exe90 so_rdc_exe90 PROGRAM
    member libcrdc.so libcrdc.so so_rdc_exe90 k_lib
    member ar_86_90 ar_86_90 ar_86_90 PROGRAM
    member libb86_90.a libb86_90.a ar_86_90 k_b
    member ar_b86_exe90 ar_b86_exe90 ar_b86_exe90 PROGRAM
    member libb86.a libb86.a ar_b86_exe90 k_b
}

# ---- one target kind each ----------------------------------------------------
build_targets() {
    run "$nvcc" "${I[@]}" $(g compute_80) "$src/one.cu" -o ptx80
    run "$nvcc" "${I[@]}" $(g compute_100) "$src/one.cu" -o ptx100
    run "$nvcc" "${I[@]}" $(g 90a) "$src/one.cu" -o sm90a
    run "$nvcc" "${I[@]}" $(g 100) "$src/one.cu" -o sm100
    member ptx80 ptx80 ptx80 PROGRAM
    member ptx100 ptx100 ptx100 PROGRAM
    member sm90a sm90a sm90a PROGRAM
    member sm100 sm100 sm100 PROGRAM
}

# ---- dynamic parallelism: -rdc and the device runtime --------------------------
dp_prog() { # dp_prog NAME "archs" "dlink archs"
    "$nvcc" "${I[@]}" -rdc=true -c $(g $2) "$src/dp.cu" -o "$1.o"
    "$nvcc" -dlink $(g $3) "$1.o" -lcudadevrt -o "$1.dlink.o"
    "$gxx" "$1.o" "$1.dlink.o" -L"$cudalib" -lcudadevrt "${hostlink[@]}" -o "$1"
}
build_dp() {
    run dp_prog dp_86 "86" "86"
    run dp_prog dp_86_90 "86 90" "86 90"
    run dp_prog dp_86_90_dl86 "86 90" "86"
    member dp_86 dp_86 dp_86 PROGRAM
    member dp_86_90 dp_86_90 dp_86_90 PROGRAM
    member dp_86_90_dl86 dp_86_90_dl86 dp_86_90_dl86 PROGRAM
}

# ---- NVIDIA's libraries: they pick their kernels by GPU at run time ----------
have_libs() { local l; for l in "$@"; do [ -e "$cudalib/lib$l.so" ] || return 1; done; }
nv_prog() { # nv_prog NAME SRC "archs" LIB...
    local name=$1 s=$2 archs=$3 l libs=()
    shift 3
    for l in "$@"; do libs+=(-l"$l"); done
    "$nvcc" "${I[@]}" $(g $archs) "$src/$s" -L"$cudalib" "${libs[@]}" \
        -Xlinker -rpath -Xlinker "$cudalib" -o "$name"
}
build_nvlibs() {
    local spec name s archs libs
    # NAME SOURCE ARCHS LIBS (comma-separated)
    for spec in "cublas_90 cublas.cu 90 cublas" "cublas_89 cublas.cu 89 cublas" \
                "sparse_rand_90 sparse_rand.cu 90 cusparse,curand" "fft_90 fft.cu 90 cufft" \
                "nccl_90 nccl.cu 90 nccl"; do
        read -r name s archs libs <<< "$spec"
        if have_libs ${libs//,/ }; then
            run nv_prog "$name" "$s" "$archs" ${libs//,/ }
            member "$name" "$name" "$name" PROGRAM
        else
            echo "make_corpus.sh: $cudalib lacks lib${libs//,/.so or lib}.so: $name is left out" >&2
        fi
    done
}

# ---- a program that picks its kernel by compute capability, SASS only --------
pick_prog() { # pick_prog NAME NEW OLD: k_new built for NEW, launched on NEW's major; k_old for OLD
    "$nvcc" "${I[@]}" -c $(g $2) "$src/pick_new.cu" -o "$1.new.o"
    "$nvcc" "${I[@]}" -c $(g $3) "$src/pick_old.cu" -o "$1.old.o"
    "$nvcc" "${I[@]}" -DCORPUS_NEW_MAJOR=$(($2 / 10)) $(g $2) "$src/pick_main.cu" "$1.new.o" \
        "$1.old.o" -o "$1"
}
# ---- a shared library with a stale translation unit ---------------------------
stale_lib() {
    "$nvcc" "${I[@]}" -Xcompiler -fPIC -c $(g 86) "$src/stalelib_a.cu" -o stale.a.o
    "$nvcc" "${I[@]}" -Xcompiler -fPIC -c $(g 90) "$src/stalelib_b.cu" -o stale.b.o
    "$nvcc" -shared $(g 90) stale.a.o stale.b.o -Xlinker -soname=libstale.so -o libstale.so
    "$nvcc" "${I[@]}" $(g 90) "$src/usestale.cu" -L. -lstale -Xlinker -rpath -Xlinker '$ORIGIN' \
        -o stale_exe
}
build_dispatch() {
    run pick_prog pick_90_80 90 80
    run pick_prog pick_100_90 100 90
    run stale_lib
    member pick_90_80 pick_90_80 pick_90_80 PROGRAM
    member pick_100_90 pick_100_90 pick_100_90 PROGRAM
    member stale_exe stale_exe stale_exe PROGRAM
    member libstale.so libstale.so stale_exe PROGRAM
}

build_plain
build_rdc
build_libs
build_targets
build_dp
build_nvlibs
build_dispatch
drain
mv "$out/members.txt.new" "$out/members.txt"
date -u +%s > stamp
[ -z "$stamp_out" ] || cp stamp "$stamp_out"
