#!/usr/bin/env bash
# corpus.sh (GPU suite): runs every program of the deploy-gate corpus on
# this machine's GPU 0, decides "ran" from the results its kernels copied
# back (tests/corpus/run_truth.sh), and asserts that `check --arch` and
# `select --cc` for this GPU's compute capability say the same of every
# member. On a 9.0 GPU the live truth must also equal the recorded one
# (tests/corpus/truth-sm_90.txt), which the CPU suite tests against.
# Exits 77 where there is no GPU.
. "$(dirname "$0")/../cli/lib.sh"
: "${CBC_CORPUS:?run through meson test}"
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
if [ -z "$cap" ]; then
    echo "no GPU (nvidia-smi reports none): nothing to run" >&2
    exit 77
fi
cc=${cap/./}
bash "$SRCDIR/tests/corpus/run_truth.sh" "$CBC_CORPUS" "$T/truth.txt" > "$T/runs.log" 2>&1 ||
    fail "running the corpus: $(tail -20 "$T/runs.log")"
n=0 bad=0
while read -r member state rest; do
    case "$member" in "#"*) continue ;; esac
    file=$(awk -v m="$member" '$1 == m { print $2 }' "$CBC_CORPUS/members.txt")
    "$CUBINCACHE" check --arch "$cc" "$CBC_CORPUS/$file" > "$T/c.out" 2>&1
    c=$?
    "$CUBINCACHE" select --cc "$cap" "$CBC_CORPUS/$file" > "$T/s.out" 2>&1
    s=$?
    exp=$([ "$state" = runs ] && echo 0 || echo 1)
    if [ $c != "$exp" ] || [ $s != "$exp" ]; then
        echo "MISMATCH $member: the GPU $state ($rest); check exited $c, select $s" >&2
        cat "$T/c.out" "$T/s.out" >&2
        bad=$((bad + 1))
    fi
    n=$((n + 1))
done < "$T/truth.txt"
note "$n members run on a compute capability $cap GPU; $bad judged otherwise by check or select"
cp "$T/truth.txt" "${CBC_GPU_OUT:-$T}/truth-live.txt" 2>/dev/null || true
[ $bad = 0 ] || fail "$bad of $n members judged otherwise than this GPU ran them"
if [ "$cap" = 9.0 ]; then
    diff <(grep -v '^#' "$SRCDIR/tests/corpus/truth-sm_90.txt" | cut -d' ' -f1,2) \
         <(grep -v '^#' "$T/truth.txt" | cut -d' ' -f1,2) > "$T/diff" ||
        fail "the recorded truth differs from this H200's run: $(cat "$T/diff")"
fi
echo ok
