#!/usr/bin/env bash
# run_truth.sh CORPUS OUT.txt: runs every program of a corpus made by
# make_corpus.sh on this machine's GPU 0 and writes what happened to each
# member: "<member> runs|fails <evidence>", decided only from the results
# the kernels wrote (the KERNEL/PROGRAM lines of common.h), never from an
# exit code alone; "absent" when the program could not start for want of a
# shared library on this machine (the GPU machine lacking one of NVIDIA's).
# Run on the H200 by scripts/gpu_gate.sh (and scripts/gpu_run.sh) to
# regenerate tests/corpus/truth-sm_90.txt.
set -uo pipefail
corpus=$(cd "$1" && pwd)
out=$2
[ -f "$corpus/stamp" ] || { echo "run_truth.sh: no complete corpus in $corpus" >&2; exit 2; }
logs=$(mktemp -d)
gpu=$(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>/dev/null | head -1)
{
    echo "# what a GPU did with each member of the deploy-gate corpus (tests/corpus)"
    echo "# GPU: ${gpu:-unknown}; nvcc: $(nvcc --version 2>/dev/null | sed -n 's/.*, V/V/p')"
    echo "# regenerate: scripts/gpu_gate.sh OUT (on the GPU machine), which runs"
    echo "#   tests/corpus/run_truth.sh on a corpus built by tests/corpus/make_corpus.sh"
} > "$out.new"
while read -r member file prog what; do
    log="$logs/$prog.log"
    if [ ! -f "$log" ]; then
        (cd "$corpus" && timeout 120 "./$prog") > "$log" 2>&1
        echo "exit $?" >> "$log"
    fi
    if grep -q "error while loading shared libraries" "$log"; then
        echo "$member absent $(grep -m1 'error while loading' "$log")" >> "$out.new"
        continue
    fi
    if [ "$what" = PROGRAM ]; then
        line=$(grep -m1 '^PROGRAM ' "$log")
        ok=$([ "$line" = "PROGRAM RAN" ] && echo runs || echo fails)
        ev=$(grep '^KERNEL ' "$log" | sed 's/^KERNEL //' | tr '\n' ';' | sed 's/;$//')
    else
        line=$(grep -m1 "^KERNEL $what " "$log")
        ok=$(case "$line" in "KERNEL $what RAN "*) echo runs ;; *) echo fails ;; esac)
        ev=${line#KERNEL }
    fi
    echo "$member $ok ${ev:-no output: $(tail -1 "$log")}" >> "$out.new"
done < "$corpus/members.txt"
mv "$out.new" "$out"
for f in "$logs"/*.log; do echo "== $(basename "$f" .log)"; cat "$f"; done
rm -rf "$logs"
