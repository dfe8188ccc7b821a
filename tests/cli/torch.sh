#!/usr/bin/env bash
# torch.sh: the deploy gate against what PyTorch did on a GPU. The truth,
# tests/corpus/truth-torch-sm_90.txt (recorded on the H200 by
# scripts/gpu_gate.sh), says which operations ran there (a matmul, a conv2d,
# a sparse product, an FFT and an eigendecomposition, each result read back
# and compared with float64: tests/corpus/torch_probe.py) and names every
# library of PyTorch's and NVIDIA's that the process had mapped, by its path
# under site-packages, size and SHA-256. Where the same files are here
# (CBC_TORCH_SITE: site-packages directories, colon-separated; else the one
# python3's torch is in), and every operation ran there, it holds:
#   - each library with GPU code, judged alone by the rule its DT_NEEDED
#     users give it (dispatch): never WILL-NOT-RUN, exit 0;
#   - every PARTIAL names kernels for each module that cannot launch;
#   - with every library of the truth here, `check --arch` and `select --cc`
#     of libtorch_cuda.so by the default rules (what a deploy script asks of
#     PyTorch) exit 0, and check never says WILL-NOT-RUN.
# Beside each library it notes the per-module rule's verdict: the evidence
# for judging libraries by the dispatch rule. Exits 77 when there is no
# recorded truth, it records a failed operation, or none of its files is
# here. On the GPU machine scripts/gpu_gate.sh runs it against the truth just
# measured (CBC_TORCH_TRUTH) and the site-packages that PyTorch ran from.
. "$(dirname "$0")/lib.sh"
truth=${CBC_TORCH_TRUTH:-$SRCDIR/tests/corpus/truth-torch-sm_90.txt}
if [ ! -f "$truth" ]; then
    note "no recorded truth $truth: scripts/gpu_gate.sh OUT on the GPU machine records it"
    exit 77
fi
cc=$(awk '$1 == "cc" { print $2 }' "$truth")
[ -n "$cc" ] || fail "$truth names no GPU (a line 'cc X.Y')"
sm=sm_${cc/./}
if ! grep -q '^program RAN' "$truth"; then
    note "PyTorch's operations did not all run on the GPU ($(grep '^op ' "$truth" | grep -v ' RAN ' | head -3 | tr '\n' ';')): nothing a library's verdict can be held to"
    exit 77
fi
sites=${CBC_TORCH_SITE:-$(python3 -c 'import importlib.util, os
s = importlib.util.find_spec("torch")
print(os.path.dirname(os.path.dirname(s.origin)) if s and s.origin else "")' 2>/dev/null)}

# The verdict for $sm of `check --json` as "STATUS PROBLEM UNNAMED": UNNAMED
# is "-" when every module that cannot launch names its kernels, else the
# first module that names none.
verdict() {
    python3 -c '
import json, sys
status, problem, unnamed = "none", "false", "-"
for line in sys.stdin:
    o = json.loads(line)
    if o.get("target") != sys.argv[1] or "files" not in o:
        continue
    status, problem = o["status"], str(o["problem"]).lower()
    for f in o["files"]:
        for m in f["cannot_launch"]:
            if not m["kernels"] and not m.get("kernels_problem") and unnamed == "-":
                unnamed = m["module"].replace(" ", "_")
print(status, problem, unnamed)' "$sm"
}

n=0 here=0 bad=0 code=0 torch_cuda=""
while read -r _ rel size sha; do
    n=$((n + 1))
    file=""
    IFS=: read -ra dirs <<< "$sites"
    for d in "${dirs[@]}"; do
        f="$d/$rel"
        if [ -f "$f" ] && [ "$(stat -c %s "$f")" = "$size" ] &&
            [ "$(sha256sum < "$f" | cut -d' ' -f1)" = "$sha" ]; then
            file=$f
            break
        fi
    done
    [ -n "$file" ] || continue
    here=$((here + 1))
    [ "${rel##*/}" = libtorch_cuda.so ] && torch_cuda=$file
    "$CUBINCACHE" check --json --no-libs --rule dispatch --arch "$cc" "$file" > "$T/d.json" 2> "$T/d.err"
    c=$?
    read -r status problem unnamed <<< "$(verdict < "$T/d.json")"
    [ "$status" = ok ] && continue # no GPU code
    code=$((code + 1))
    "$CUBINCACHE" check --json --no-libs --arch "$cc" "$file" > "$T/p.json" 2>&1
    pc=$?
    read -r pstatus _ _ <<< "$(verdict < "$T/p.json")"
    why=""
    [ $c = 0 ] || why="$why; check --rule dispatch exited $c"
    case "$status" in runs*|partial) ;; *) why="$why; check --rule dispatch says $status" ;; esac
    [ "$unnamed" = - ] || why="$why; PARTIAL names no kernel of $unnamed"
    if [ -n "$why" ]; then
        echo "MISMATCH $rel: it ran on the GPU${why}" >&2
        cat "$T/d.json" "$T/d.err" | cut -c1-2000 >&2
        bad=$((bad + 1))
    fi
    note "$rel: dispatch rule $status (exit $c), per-module rule $pstatus (exit $pc)"
done < <(grep '^lib ' "$truth")
[ $n -gt 0 ] || fail "$truth names no library"
if [ $here = 0 ]; then
    note "none of the $n libraries of $(basename "$truth") is in '${sites}': set CBC_TORCH_SITE to a site-packages holding them (pip download --no-deps $(awk '$1 == "dist" { printf "%s==%s ", $2, $3 }' "$truth"); a version with a +cuXYZ tail is on https://download.pytorch.org/whl/cuXYZ)"
    exit 77
fi
if [ $here = "$n" ] && [ -n "$torch_cuda" ]; then
    # what a deploy script asks: the file named by the per-module rule, its
    # DT_NEEDED libraries by the dispatch rule
    "$CUBINCACHE" check --json --arch "$cc" "$torch_cuda" > "$T/t.json" 2> "$T/t.err"
    c=$?
    read -r status problem unnamed <<< "$(verdict < "$T/t.json")"
    "$CUBINCACHE" select --cc "$cc" "$torch_cuda" > "$T/s.out" 2>&1
    s=$?
    why=""
    [ $c = 0 ] || why="$why; check exited $c"
    [ $s = 0 ] || why="$why; select exited $s"
    case "$status" in runs*|partial) ;; *) why="$why; check says $status" ;; esac
    [ "$unnamed" = - ] || why="$why; PARTIAL names no kernel of $unnamed"
    if [ -n "$why" ]; then
        echo "MISMATCH libtorch_cuda.so with its libraries: PyTorch ran on the GPU${why}" >&2
        cut -c1-2000 "$T/t.json" "$T/t.err" >&2
        grep -v ' (sass-\| (ptx-jit)\|accepted' "$T/s.out" | head -20 >&2
        bad=$((bad + 1))
    fi
    note "libtorch_cuda.so with its libraries: check says $status, select exits $s"
elif grep -q '^lib .*/libtorch_cuda\.so ' "$truth"; then
    note "$here of the $n libraries of the truth are here: libtorch_cuda.so with its libraries is not judged"
fi
[ $bad = 0 ] || fail "$bad verdicts otherwise than PyTorch ran on the GPU"
note "$code libraries with GPU code of the $here here judged as PyTorch ran them on $cc ($(basename "$truth"))"
echo ok
