#!/usr/bin/env bash
# lint_real.sh [CUBINCACHE]: `cubincache lint` on real build scripts nobody
# here wrote (bench/lint_real/manifest.txt: candle at five points of its
# history, cudarc, mistral.rs, Rust-CUDA, the cc crate, CMake of PyTorch,
# vLLM and cuda-samples, the Makefiles of llm.c and cuda-samples, and held
# out, read only after the lint was finished: candle-vllm, learning-lm-rs,
# fltr), every
# finding compared with its judgement (bench/lint_real/judged.txt:
# consequential, harmless or false) and the patterns found by reading that
# the lint does not report (missed.txt). Prints the precision and recall
# table of BENCHMARKS.md; exits 1 when a finding has no judgement or a
# judged one is gone (the judgements are then out of date, not the lint
# right or wrong), 77 when a mirror is missing.
#   precision = consequential findings / all findings
#   recall    = consequential findings / (consequential findings + missed)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cb=${1:-${CUBINCACHE:-$here/../build/tools/cubincache}}
case "$cb" in /*) ;; *) cb="$PWD/$cb" ;; esac
mirrors=${CBC_MIRRORS:-/work/.mirror}
files=${CBC_REAL_FILES:-$HOME/.cache/cbc-real}
# CBC_REAL_KEEP=DIR keeps the tree there, to read the scripts judged
if [ -n "${CBC_REAL_KEEP:-}" ]; then
    T=$CBC_REAL_KEEP
    rm -rf "$T/tree"
else
    T=$(mktemp -d)
    trap 'rm -rf "$T"' EXIT
fi
tree=$T/tree
mkdir -p "$tree"
while read -r repo commit what blob; do
    case "$repo" in ''|'#'*) continue ;; esac
    dir="$tree/${repo/\//+}@$commit"
    mkdir -p "$dir"
    if [ -n "${blob:-}" ]; then # one file fetched by path
        src="$files/${repo/\//+}/$commit/$what"
        [ -f "$src" ] || { echo "lint_real: $src missing: fetch $repo $commit:$what there" >&2; exit 77; }
        got=$(git hash-object "$src")
        [ "$got" = "$blob" ] || { echo "lint_real: $src is blob $got, not $blob" >&2; exit 1; }
        mkdir -p "$dir/$(dirname "$what")"
        cp "$src" "$dir/$what"
        continue
    fi
    m="$mirrors/${repo/\//+}/repo"
    [ -d "$m" ] || { echo "lint_real: no mirror of $repo at $m (fetch github:$repo)" >&2; exit 77; }
    git -C "$m" rev-parse -q --verify "$commit^{commit}" > /dev/null ||
        { echo "lint_real: $repo has no commit $commit" >&2; exit 1; }
    git -C "$m" ls-tree -r --name-only "$commit" | grep -E "$what" > "$T/all" || true
    [ -s "$T/all" ] || { echo "lint_real: nothing of $repo $commit matches $what" >&2; exit 1; }
    # a mirror may lack the blobs of its largest files (images, data): those
    # are left out, and said so
    sed "s|^|$commit:|" "$T/all" | git -C "$m" cat-file --batch-check > "$T/check"
    paste -d ' ' "$T/all" "$T/check" | awk '$NF != "missing" { print $1 }' > "$T/list"
    paste -d ' ' "$T/all" "$T/check" | awk '$NF == "missing" { print $1 }' |
        sed "s|^|lint_real: $repo $commit: not in the mirror: |" >&2
    (cd "$m" && xargs -d '\n' git archive "$commit" -- < "$T/list" 2> "$T/archive.err") |
        tar -x -C "$dir" || { echo "lint_real: $repo $commit: $(cat "$T/archive.err")" >&2; exit 1; }
    while read -r p; do
        [ -e "$dir/$p" ] || { echo "lint_real: $repo $commit: $p not extracted" >&2; exit 1; }
    done < "$T/list"
done < "$here/lint_real/manifest.txt"

(cd "$tree" && "$cb" lint --json . 2> "$T/notes") > "$T/json"
rc=$?
[ $rc -le 1 ] || { echo "lint_real: lint exited $rc: $(cat "$T/notes")" >&2; exit 1; }
python3 - "$T/json" "$here/lint_real/judged.txt" "$here/lint_real/missed.txt" "$T/tree" <<'PY'
import json, os, re, sys, collections
js, judged_path, missed_path, tree = sys.argv[1:5]
found = []
summary = None
for line in open(js):
    o = json.loads(line)
    if "summary" in o:
        summary = o["summary"]
        continue
    found.append("%s:%d:%d %s %s" % (o["file"], o["line"], o["col"], o["rule"], o["var"] or "-"))
judged = {}
for line in open(judged_path):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    key, verdict = line.rsplit(None, 1)
    if verdict not in ("consequential", "harmless", "false"):
        sys.exit("judged.txt: bad verdict %r for %s" % (verdict, key))
    judged[key] = verdict
missed = [l.split("#", 1)[0].strip() for l in open(missed_path)]
missed = [m for m in missed if m]
bad = False
for f in found:
    if f not in judged:
        print("UNJUDGED  %s" % f)
        bad = True
for k in judged:
    if k not in found:
        print("GONE      %s (judged %s)" % (k, judged[k]))
        bad = True
def repo_of(key):
    return key.split("/", 1)[0].split("@")[0].replace("+", "/")
def lang(key):
    rule = key.split()[1]
    return {"env-undeclared": "cargo", "env-enumerated": "cargo", "nvcc-sources": "cargo",
            "cmake-env": "CMake", "meson-env": "Meson", "make-env": "make"}[rule]
rows = collections.OrderedDict()
for key in found:
    r = rows.setdefault((repo_of(key), lang(key)), collections.Counter())
    r[judged.get(key, "unjudged")] += 1
for m in missed:
    r = rows.setdefault((repo_of(m), lang(m)), collections.Counter())
    r["missed"] += 1
def lang_of_file(name):
    if name == "build.rs" or name.endswith(".rs"):
        return "cargo"
    if name == "CMakeLists.txt" or name.endswith(".cmake"):
        return "CMake"
    if name in ("Makefile", "GNUmakefile", "makefile") or name.endswith(".mk"):
        return "make"
    return None
files_per = collections.Counter()
for d in sorted(os.listdir(tree)):
    repo = d.split("@")[0].replace("+", "/")
    for dp, _, fs in os.walk(os.path.join(tree, d)):
        for f in fs:
            lg = lang_of_file(f)
            # what the lint reads: build scripts and their modules, CMake and make files
            if lg == "cargo" and not (f == "build.rs" or os.path.basename(dp) == "build"):
                continue
            if lg:
                files_per[(repo, lg)] += 1
                rows.setdefault((repo, lg), collections.Counter())
print("| repository | language | files | findings | consequential | harmless | false | missed |")
print("|---|---|---|---|---|---|---|---|")
tot = collections.Counter()
for (repo, lg), c in sorted(rows.items()):
    n = c["consequential"] + c["harmless"] + c["false"] + c["unjudged"]
    print("| %s | %s | %d | %d | %d | %d | %d | %d |" % (repo, lg, files_per[(repo, lg)], n, c["consequential"],
          c["harmless"], c["false"], c["missed"]))
    tot.update(c)
n = tot["consequential"] + tot["harmless"] + tot["false"] + tot["unjudged"]
print("| **all** | | %d | %d | %d | %d | %d | %d |" % (sum(files_per.values()), n,
      tot["consequential"], tot["harmless"], tot["false"], tot["missed"]))
p = tot["consequential"] / n if n else 0.0
r = tot["consequential"] / (tot["consequential"] + tot["missed"]) if tot["consequential"] + tot["missed"] else 0.0
print()
print("precision (consequential / findings): %d/%d = %.1f%%" % (tot["consequential"], n, 100 * p))
print("recall (consequential / (consequential + missed)): %d/%d = %.1f%%" % (
    tot["consequential"], tot["consequential"] + tot["missed"], 100 * r))
# the same counted once per file and variable across the commits of one
# repository (candle's scripts repeat from one point of its history to the next)
def distinct(key):
    f, rule, var = key.split(" ")[:3]
    path = f.split("/", 1)[1].rsplit(":", 2)[0]
    return (repo_of(key), path, rule, var)
dc = collections.defaultdict(set)
for key in found:
    dc[judged.get(key, "unjudged")].add(distinct(key))
dm = set(distinct(m) for m in missed)
cons = len(dc["consequential"])
alln = len(set().union(*dc.values())) if dc else 0
print("distinct (file, variable) across commits: %d findings, %d consequential (%.1f%%), %d missed" % (
    alln, cons, 100.0 * cons / alln if alln else 0.0, len(dm)))
print("lint summary: %s" % json.dumps(summary))
sys.exit(1 if bad else 0)
PY
