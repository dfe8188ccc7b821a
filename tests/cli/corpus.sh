#!/usr/bin/env bash
# corpus.sh: the deploy gate against what an H200 did. For every member of
# the corpus (tests/corpus/make_corpus.sh: plain, -rdc with full and partial
# device links, -rdc objects and static libraries, one and two units with
# different archs, three compression modes, shared and static libraries,
# PTX only, sm_90a, sm_100 only, dynamic parallelism), `check --arch 90`
# and `select --cc 9.0` must say "runs" exactly where the GPU ran every
# kernel and "will not run" (exit 1) where it did not. The truth is
# tests/corpus/truth-sm_90.txt, recorded on the H200 by scripts/gpu_run.sh;
# on a GPU machine tests/gpu/corpus.sh also runs the programs themselves.
. "$(dirname "$0")/lib.sh"
: "${CBC_CORPUS:?run through meson test}"
truth="$SRCDIR/tests/corpus/truth-sm_90.txt"
[ -f "$CBC_CORPUS/members.txt" ] || fail "no corpus in $CBC_CORPUS"
n=0 bad=0
while read -r member file prog what; do
    want=$(awk -v m="$member" '$1 == m { print $2 }' "$truth")
    [ -n "$want" ] || fail "$member has no recorded truth: rerun scripts/gpu_run.sh on the H200"
    "$CUBINCACHE" check --arch 90 "$CBC_CORPUS/$file" > "$T/check.out" 2>&1
    c=$?
    "$CUBINCACHE" select --cc 9.0 "$CBC_CORPUS/$file" > "$T/select.out" 2>&1
    s=$?
    exp=$([ "$want" = runs ] && echo 0 || echo 1)
    if [ $c != "$exp" ] || [ $s != "$exp" ]; then
        echo "MISMATCH $member: the GPU says $want; check exited $c, select $s" >&2
        cat "$T/check.out" "$T/select.out" >&2
        bad=$((bad + 1))
    fi
    n=$((n + 1))
done < "$CBC_CORPUS/members.txt"
[ $n -ge 40 ] || fail "only $n corpus members"
[ $bad = 0 ] || fail "$bad of $n members judged otherwise than the GPU ran them"
note "$n members: check --arch 90 and select --cc 9.0 agree with the H200 on each"
echo ok
