#!/usr/bin/env bash
# corpus.sh: the deploy gate against what an H200 did. For every member of
# the corpus (tests/corpus/make_corpus.sh: plain, -rdc with full and partial
# device links, -rdc objects and static libraries, one and two units with
# different archs, three compression modes, shared and static libraries,
# PTX only, sm_90a, sm_100 only, dynamic parallelism, programs linking
# cuBLAS, cuSPARSE with cuRAND, cuFFT and NCCL, programs that pick their
# kernel by GPU, a library with a stale unit), `check --arch 90` and
# `select --cc 9.0` are held to the truth, tests/corpus/truth-sm_90.txt
# (recorded on the H200 by scripts/gpu_run.sh; on a GPU machine
# tests/gpu/corpus.sh also runs the programs themselves):
#   - a member that ran is never WILL-NOT-RUN, one that failed never RUNS,
#     and none is "no GPU code";
#   - a PARTIAL never names a kernel that ran, and names every kernel that
#     failed for want of code ("no kernel image");
#   - the exit code is the truth's (0 ran, 1 failed), but for the members of
#     tests/corpus/gate.txt: there it is the one given, and the truth's under
#     the switch given (the rule the default cannot know).
# On the GPU machine scripts/gpu_gate.sh runs it against the truth just
# measured: CBC_TRUTH names that file, CBC_GPU_CC its GPU (default 9.0;
# gate.txt is about 9.0, so elsewhere its members' exit codes are not held).
. "$(dirname "$0")/lib.sh"
: "${CBC_CORPUS:?run through meson test}"
truth=${CBC_TRUTH:-$SRCDIR/tests/corpus/truth-sm_90.txt}
gpu=${CBC_GPU_CC:-9.0}
sm=sm_${gpu/./}
gate="$SRCDIR/tests/corpus/gate.txt"
[ "$gpu" = 9.0 ] || gate=/dev/null
[ -f "$CBC_CORPUS/members.txt" ] || fail "no corpus in $CBC_CORPUS"

# The sm_90 verdict of `check --json` as "STATUS KERNEL,KERNEL,...": every
# kernel of every module that cannot launch, demangled and cut at "(".
verdict() {
    python3 -c '
import json, sys
status, names = "none", set()
for line in sys.stdin:
    o = json.loads(line)
    if o.get("target") != sys.argv[1] or "files" not in o:
        continue
    status = o["status"]
    for f in o["files"]:
        for m in f["cannot_launch"]:
            for k in m["kernels"]:
                names.add(k["demangled"].split("(")[0].split(" ")[-1])
print(status, ",".join(sorted(names)) or "-")' "$sm"
}

n=0 bad=0
while read -r member file prog what; do
    line=$(awk -v m="$member" '$1 == m' "$truth")
    [ -n "$line" ] || fail "$member has no recorded truth: rerun scripts/gpu_gate.sh on the H200"
    want=$(echo "$line" | cut -d' ' -f2)
    ev=$(echo "$line" | cut -d' ' -f3-)
    if [ "$want" = absent ]; then
        note "$member did not start on the GPU machine: $ev"
        continue
    fi
    # the kernels that ran, and those that failed for want of code there
    ran=$(echo "$ev" | tr ';' '\n' | awk '$2 == "RAN" { print $1 }')
    noimg=$(echo "$ev" | tr ';' '\n' | awk '$2 == "FAILED" && /NoKernelImage/ { print $1 }')
    exp=$([ "$want" = runs ] && echo 0 || echo 1)
    g=$(awk -v m="$member" '$1 == m { print $2 " " $3 " " $4 }' "$gate")
    dexp=${g%% *}
    dexp=${dexp:-$exp}
    why=""
    "$CUBINCACHE" check --json --arch "$gpu" "$CBC_CORPUS/$file" > "$T/check.json" 2> "$T/check.err"
    c=$?
    "$CUBINCACHE" select --cc "$gpu" "$CBC_CORPUS/$file" > "$T/select.out" 2>&1
    s=$?
    read -r status names <<< "$(verdict < "$T/check.json")"
    case "$want:$status" in
        # every member has GPU code (its own, or its libraries'): "ok", no
        # GPU code, is a verdict that missed it
        runs:will-not-run|runs:needs-dlink|runs:none|runs:ok) why="it ran; check says $status" ;;
        fails:runs*|fails:none|fails:ok) why="it failed; check says $status" ;;
    esac
    if [ "$status" = partial ]; then
        for k in $ran; do
            case ",$names," in *",$k,"*) why="$why; PARTIAL names $k, which ran" ;; esac
        done
        for k in $noimg; do
            case ",$names," in *",$k,"*) ;; *) why="$why; PARTIAL does not name $k, which failed" ;; esac
        done
    fi
    if [ "$gpu" = 9.0 ] || ! grep -q "^$member " "$SRCDIR/tests/corpus/gate.txt"; then
        [ $c = "$dexp" ] || why="$why; check exited $c, not $dexp"
        [ $s = "$dexp" ] || why="$why; select exited $s, not $dexp"
    fi
    if [ -n "$g" ]; then
        # the switch under which the exit code is the truth's
        sw=$(echo "$g" | cut -d' ' -f2-)
        args=($sw)
        if [ "$sw" = "--kernels LAUNCHED" ]; then
            echo "$ev" | tr ';' '\n' | awk '$2 == "RAN" || $2 == "FAILED" { print $1 }' > "$T/launched.txt"
            args=(--kernels "$T/launched.txt")
        fi
        "$CUBINCACHE" check --arch "$gpu" "${args[@]}" "$CBC_CORPUS/$file" > "$T/check2.out" 2>&1
        c2=$?
        "$CUBINCACHE" select --cc "$gpu" "${args[@]}" "$CBC_CORPUS/$file" > "$T/select2.out" 2>&1
        s2=$?
        [ $c2 = "$exp" ] || why="$why; check $sw exited $c2, not $exp"
        [ $s2 = "$exp" ] || why="$why; select $sw exited $s2, not $exp"
    fi
    if [ -n "$why" ]; then
        echo "MISMATCH $member: the GPU says $want ($ev)${why}" >&2
        cat "$T/check.json" "$T/check.err" "$T/select.out" >&2
        bad=$((bad + 1))
    fi
    n=$((n + 1))
done < "$CBC_CORPUS/members.txt"
[ $n -ge 40 ] || fail "only $n corpus members judged"
[ $bad = 0 ] || fail "$bad of $n members judged otherwise than the GPU ran them"
note "$n members: check --arch $gpu and select --cc $gpu agree with the GPU's truth ($(basename "$truth")) on each"
echo ok
