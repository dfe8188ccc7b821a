#!/usr/bin/env bash
# corpus.sh (GPU suite): runs every program of the deploy-gate corpus on
# this machine's GPU 0, decides "ran" from the results its kernels copied
# back (tests/corpus/run_truth.sh), and holds `check --arch` and `select
# --cc` for this GPU's compute capability to it as tests/cli/corpus.sh holds
# them to the recorded truth. On a 9.0 GPU the live truth must also equal the recorded one
# (tests/corpus/truth-sm_90.txt), which the CPU suite tests against.
# Exits 77 where there is no GPU.
. "$(dirname "$0")/../cli/lib.sh"
: "${CBC_CORPUS:?run through meson test}"
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
if [ -z "$cap" ]; then
    echo "no GPU (nvidia-smi reports none): nothing to run" >&2
    exit 77
fi
bash "$SRCDIR/tests/corpus/run_truth.sh" "$CBC_CORPUS" "$T/truth.txt" > "$T/runs.log" 2>&1 ||
    fail "running the corpus: $(tail -20 "$T/runs.log")"
# the CPU suite's assertions (tests/cli/corpus.sh), against this live truth
CBC_TRUTH="$T/truth.txt" CBC_GPU_CC="$cap" bash "$SRCDIR/tests/cli/corpus.sh" > "$T/gate.log" 2>&1
rc=$?
grep -E '^(MISMATCH|# )' "$T/gate.log" | cut -c1-400
cp "$T/truth.txt" "${CBC_GPU_OUT:-$T}/truth-live.txt" 2>/dev/null || true
[ $rc = 0 ] || fail "check or select judged members otherwise than this GPU ran them: $(tail -3 "$T/gate.log")"
if [ "$cap" = 9.0 ]; then
    diff <(grep -v '^#' "$SRCDIR/tests/corpus/truth-sm_90.txt" | cut -d' ' -f1,2) \
         <(grep -v '^#' "$T/truth.txt" | cut -d' ' -f1,2) > "$T/diff" ||
        fail "the recorded truth differs from this H200's run: $(cat "$T/diff")"
fi
echo ok
