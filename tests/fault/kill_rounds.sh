#!/usr/bin/env bash
# kill_rounds.sh: kill -9 a build at a random moment, many times over, and
# after every kill: `check` finds the bundle intact, or INCOMPLETE (an
# interrupted publish: rerun the build), never corrupt, missing or
# mislabeled; `cache verify` finds nothing bad; and the next build repairs
# everything, leaving exactly its own files. The builds switch between two
# target sets whose entries are all cached, so every round publishes, and
# CUBINCACHE_TEST_PUBLISH_DELAY_MS widens each step of the publish window.
. "$(dirname "$0")/../cli/lib.sh"
C="$CUBINCACHE"
ROUNDS=${CBC_KILL_ROUNDS:-60}
make_kernel "$T/src"
cd "$T/src"
A=(-a 86,90 --ptx)
B=(-a 80,89,90a)
OUT="$T/out"
expect_exit 0 "$C" build -q "${A[@]}" -o "$OUT" -n k k.cu
expect_exit 0 "$C" build -q "${B[@]}" -o "$OUT" -n k k.cu

files_of() { # the files a finished build of the set leaves
    case "$1" in
        A) echo "k.compute_90.ptx k.manifest.json k.sm_86.cubin k.sm_90.cubin" ;;
        B) echo "k.manifest.json k.sm_80.cubin k.sm_89.cubin k.sm_90a.cubin" ;;
    esac
}

note "killed while retiring the outputs of the old target set: the next build finishes the job"
expect_exit 0 "$C" build -q "${A[@]}" -o "$OUT" -n k k.cu
CUBINCACHE_TEST_PUBLISH_DELAY_MS=300 "$C" build -q "${B[@]}" -o "$OUT" -n k k.cu &
pid=$!
for _ in $(seq 1 200); do # the new manifest is in place: it is retiring now
    grep -q '"sm_80"' "$OUT/k.manifest.json" 2>/dev/null && [ -e "$OUT/k.sm_90.cubin" ] && break
    sleep 0.02
done
sleep 0.35 # inside the retire steps, at least one done
kill -9 $pid
wait $pid 2>/dev/null
expect_exit 0 "$C" build -q "${B[@]}" -o "$OUT" -n k k.cu
expect_exit 0 "$C" check "$OUT"
have=$(cd "$OUT" && ls -A | tr '\n' ' ' | sed 's/ $//')
[ "$have" = "$(files_of B)" ] || fail "after a kill while retiring, the repaired bundle holds: $have"

incomplete=0 intact=0
RANDOM=4242
for round in $(seq 1 "$ROUNDS"); do
    set_name=$([ $((RANDOM % 2)) = 0 ] && echo A || echo B)
    if [ "$set_name" = A ]; then args=("${A[@]}"); else args=("${B[@]}"); fi
    CUBINCACHE_TEST_PUBLISH_DELAY_MS=15 "$C" build -q "${args[@]}" -o "$OUT" -n k k.cu &
    pid=$!
    sleep "0.$(printf '%03d' $((RANDOM % 250)))"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    "$C" check "$OUT" > "$T/check.out" 2>&1
    rc=$?
    [ $rc -lt 2 ] || fail "round $round: check exited $rc: $(cat "$T/check.out")"
    if grep -qE '^(CORRUPT|MISSING|MISLABELED|STALE) ' "$T/check.out"; then
        fail "round $round: after a kill, check says: $(cat "$T/check.out")"
    fi
    if grep -q '^INCOMPLETE ' "$T/check.out"; then
        incomplete=$((incomplete + 1))
    else
        grep -q '^ORPHAN ' "$T/check.out" && fail "round $round: orphans without INCOMPLETE: $(cat "$T/check.out")"
        [ $rc = 0 ] || fail "round $round: check exited $rc: $(cat "$T/check.out")"
        intact=$((intact + 1))
    fi
    expect_out 0 "0 bad" "$C" cache verify
    # the next build repairs it
    next=$([ $((RANDOM % 2)) = 0 ] && echo A || echo B)
    if [ "$next" = A ]; then args=("${A[@]}"); else args=("${B[@]}"); fi
    expect_exit 0 "$C" build -q "${args[@]}" -o "$OUT" -n k k.cu
    expect_exit 0 "$C" check "$OUT"
    have=$(cd "$OUT" && ls -A | tr '\n' ' ' | sed 's/ $//')
    [ "$have" = "$(files_of "$next")" ] || fail "round $round: after a repair the bundle holds: $have"
done
note "$ROUNDS kill rounds: $incomplete left an interrupted publish (INCOMPLETE, then repaired), $intact an intact bundle"
[ $incomplete -gt 0 ] || fail "no round killed a build inside its publish window: the test did not test it"
echo ok
