#!/usr/bin/env bash
# scripts/gpu_gate.sh OUTDIR: the deploy gate's truth on the GPU machine, in
# one call (meant to fit the device machine's 10 minutes a command). It
# builds only what it must there: the `cubincache` command (ninja of that
# one target) and the corpus (tests/corpus/make_corpus.sh, real nvcc
# output). Then:
#   1. runs every corpus program (tests/corpus/run_truth.sh): the truth, a
#      line per member decided from the values its kernels copied back;
#   2. holds check --arch and select --cc for this GPU to that truth, as the
#      CPU suite holds them to the recorded one (tests/cli/corpus.sh);
#   3. runs a matmul, a conv2d, a sparse product, an FFT and an eigen-
#      decomposition through this machine's PyTorch (tests/corpus/
#      torch_probe.py), each checked against float64 on the CPU, and lists
#      the libraries the process mapped (what PyTorch really loads);
#   4. records what PyTorch did (truth-torch-sm_XY.txt: the operations, the
#      distributions installed, and every library of PyTorch's and NVIDIA's
#      the process mapped, by path under site-packages, size and SHA-256)
#      and holds check and select to it (tests/cli/torch.sh, as the CPU
#      suite does where the same files are); judges libtorch_cuda.so for
#      every compute capability from 5.0 to 12.1 next to
#      torch.cuda.get_arch_list(), and each library PyTorch loaded, for this
#      GPU, by the per-module rule and by the dispatch rule: the libraries
#      ran, so a rule that says WILL-NOT-RUN of one is wrong.
# Exits 0 when check and select agree with this GPU on every corpus member
# and every PyTorch library, 1 when they do not, or when a step failed.
# Writes into OUTDIR (at most 8 files): summary.txt (also printed),
# truth-sm_XY.txt and truth-torch-sm_XY.txt (copy both to tests/corpus/ to
# record them), gate-corpus.log, torch-probe.txt, torch-check.txt (with
# tests/cli/torch.sh's output at its end), build.log.
# The Debian packages the project builds with come from .device-debs
# (shared/device/fetch-debs.sh), carried: carry [".device-debs"].
set -uo pipefail
out=${1:?usage: scripts/gpu_gate.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
root=$PWD
S="$out/summary.txt"
: > "$S"
say() { echo "$*" | tee -a "$S"; }
[ -f .device-debs/env.sh ] && . .device-debs/env.sh
export PATH="$PATH:/usr/local/cuda/bin"
# NVLink multicast stays off on shared machines (KINDS.md)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

say "== machine"
gpu=$(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1 | head -1)
say "  GPU: $gpu"
say "  $(nvcc --version 2>&1 | tail -1)"
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
[ -n "$cap" ] || { say "no GPU: nothing to measure"; exit 1; }
cc=${cap/./}
say "  commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

say "== build: the cubincache command only"
t0=$SECONDS
if [ -x "${CUBINCACHE:-}" ]; then
    C=$CUBINCACHE
else
    { [ -f build-gate/build.ninja ] || meson setup build-gate -Dgpu_tests=disabled; } > "$out/build.log" 2>&1 &&
        ninja -C build-gate tools/cubincache >> "$out/build.log" 2>&1 ||
        { tail -30 "$out/build.log"; say "  the build failed (build.log)"; exit 1; }
    C=$root/build-gate/tools/cubincache
fi
say "  $C ($((SECONDS - t0)) s)"

say "== corpus: built with this machine's nvcc"
t0=$SECONDS
corpus=/tmp/cbc-gate-corpus
bash tests/corpus/make_corpus.sh "$corpus" nvcc >> "$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log"; say "  make_corpus.sh failed (build.log)"; exit 1; }
grep 'is left out' "$out/build.log" | sed 's/^/  /' | tee -a "$S"
say "  $(wc -l < "$corpus/members.txt") members ($((SECONDS - t0)) s)"

say "== 1. the truth: every program run, its kernels' results read back"
t0=$SECONDS
truth="$out/truth-sm_$cc.txt"
bash tests/corpus/run_truth.sh "$corpus" "$truth" > "$out/gate-corpus.log" 2>&1
say "  $(grep -c ' runs ' "$truth") ran, $(grep -c ' fails ' "$truth") failed ($((SECONDS - t0)) s)"
grep -E '^(cublas|sparse_rand|fft|nccl|pick|stale|libstale)' "$truth" | sed 's/^/  /' | tee -a "$S"
if [ "$cap" = 9.0 ]; then
    d=$(diff <(grep -v '^#' tests/corpus/truth-sm_90.txt | cut -d' ' -f1,2) \
             <(grep -v '^#' "$truth" | cut -d' ' -f1,2))
    say "  against the recorded tests/corpus/truth-sm_90.txt: ${d:-the same}"
fi

say "== 2. check --arch $cc and select --cc $cap held to it (tests/cli/corpus.sh)"
CUBINCACHE=$C SRCDIR=$root CBC_CORPUS=$corpus CBC_TRUTH=$truth CBC_GPU_CC=$cap \
    bash tests/cli/corpus.sh >> "$out/gate-corpus.log" 2>&1
rc=$?
grep -E '^(MISMATCH|# |FAIL)' "$out/gate-corpus.log" | cut -c1-400 | tee -a "$S"
say "  exit $rc"

say "== 3. PyTorch: matmul, conv2d, sparse mm, FFT, eigh on this GPU"
PYTHONUNBUFFERED=1 timeout 300 python3 tests/corpus/torch_probe.py > "$out/torch-probe.txt" 2>&1
say "  exit $?"
grep -E '^(TORCH|GPU|ARCH_FLAGS|ARCH_LIST|KERNEL|PROGRAM)' "$out/torch-probe.txt" | sed 's/^/  /' | tee -a "$S"

say "== 4. what check says of PyTorch's libraries"
tl=$(sed -n 's/^TORCH .* at //p' "$out/torch-probe.txt" | head -1)/lib
site=$(realpath -m "$tl/../..") # as /proc/self/maps names files: links resolved
T="$out/torch-check.txt"
: > "$T"
TT="$out/truth-torch-sm_$cc.txt"
rctorch=1
if [ -f "$tl/libtorch_cuda.so" ]; then
    {
        echo "# what PyTorch did on a GPU (tests/corpus/torch_probe.py): each operation's result"
        echo "# read back and compared with float64 on the CPU, the distributions installed, and"
        echo "# every library of PyTorch's and NVIDIA's the process had mapped (its path under"
        echo "# site-packages, size, SHA-256). tests/cli/torch.sh holds check and select to it."
        echo "# GPU: $gpu"
        echo "# regenerate: scripts/gpu_gate.sh OUT on the GPU machine, then copy"
        echo "#   OUT/truth-torch-sm_$cc.txt to tests/corpus/"
        echo "cc $cap"
        sed -n 's/^TORCH \(.*\) at .*/torch \1/p; s/^ARCH_LIST /arch_list /p' "$out/torch-probe.txt"
        sed -n 's/^DIST /dist /p; s/^KERNEL /op /p; s/^PROGRAM /program /p' "$out/torch-probe.txt"
        sed -n 's/^LOADED //p' "$out/torch-probe.txt" | while read -r lib; do
            case "$lib" in "$site"/torch/*|"$site"/nvidia/*) ;; *) continue ;; esac
            [ -f "$lib" ] || continue
            echo "lib ${lib#"$site"/} $(stat -c %s "$lib") $(sha256sum < "$lib" | cut -d' ' -f1)"
        done
    } > "$TT"
    say "  $(grep -c '^lib ' "$TT") libraries recorded in $(basename "$TT")"
    CUBINCACHE=$C SRCDIR=$root CBC_TORCH_TRUTH=$TT CBC_TORCH_SITE=$site \
        bash tests/cli/torch.sh > "$out/torch-gate.out" 2>&1
    rctorch=$?
fi
if [ -f "$tl/libtorch_cuda.so" ]; then
    echo "# check --arch X libtorch_cuda.so (its DT_NEEDED libraries as the loader finds them)" >> "$T"
    echo "# torch.cuda.get_arch_list(): $(sed -n 's/^ARCH_LIST //p' "$out/torch-probe.txt")" >> "$T"
    for a in 5.0 5.2 5.3 6.0 6.1 6.2 7.0 7.2 7.5 8.0 8.6 8.7 8.8 8.9 9.0 10.0 10.3 11.0 12.0 12.1; do
        v=$("$C" check --arch "$a" "$tl/libtorch_cuda.so" 2> /dev/null)
        echo "$a exit $?: $(head -1 <<< "$v" | cut -c1-200)" >> "$T"
    done
    t0=$EPOCHREALTIME
    "$C" check --arch "$cc" "$tl/libtorch_cuda.so" > "$out/check-torch.out" 2>&1
    rct=$?
    t1=$EPOCHREALTIME
    echo "# check --arch $cc libtorch_cuda.so: exit $rct, $(awk "BEGIN { print $t1 - $t0 }") s" >> "$T"
    sed 's/^/#   /' "$out/check-torch.out" | cut -c1-300 >> "$T"
    rm -f "$out/check-torch.out"
    # each library the probe mapped, alone, by both rules (the library ran):
    # "# <path>: dispatch rule STATUS, per-module rule STATUS", and MISMATCH
    # lines where check or select said otherwise than it ran
    { echo "# tests/cli/torch.sh against $(basename "$TT"): exit $rctorch"
      cat "$out/torch-gate.out"; } >> "$T"
    rm -f "$out/torch-gate.out"
else
    echo "no libtorch_cuda.so under '$tl'" >> "$T"
fi
grep -vE '^#   |^[{]' "$T" | cut -c1-300 | sed 's/^/  /' | tee -a "$S"
say "  libraries that ran but the per-module rule does not call RUNS: $(grep -cE 'per-module rule [^r]|per-module rule runs[^ ]* \(exit [^0]' "$T")"
say "  tests/cli/torch.sh: exit $rctorch"
say "== verdict: corpus exit $rc, PyTorch exit $rctorch"
[ $rc = 0 ] && [ $rctorch = 0 ]
