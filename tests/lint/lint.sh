#!/usr/bin/env bash
# lint.sh: `cubincache lint` on the corpus it was written against
# (tests/lint/corpus, expected findings in expected.txt): exactly those
# findings, no other; --fix inserts the declarations in the file's own style
# so that every fixed build script still compiles and lints clean, once
# (idempotent), all files or none; --dry-run's diff is the fix; links and
# bad arguments are refused with exit 2.
. "$(dirname "$0")/../cli/lib.sh"
PATH="$PATH:$HOME/.cargo/bin"
HERE="$SRCDIR/tests/lint"

findings() { # DIR: FILE:LINE:COL RULE VAR, relative to DIR
    (cd "$1" && "$CUBINCACHE" lint --json . 2> "$T/lint.err") > "$T/lint.json"
    echo $? > "$T/lint.rc"
    python3 - "$T/lint.json" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "summary" not in o:
        print("%s:%d:%d %s %s" % (o["file"], o["line"], o["col"], o["rule"], o["var"] or "-"))
PY
}

note "the corpus: exactly the expected findings (no false one, none missed)"
cp -r "$HERE/corpus" "$T/c"
findings "$T/c" > "$T/got.txt"
grep -v '^#' "$HERE/expected.txt" > "$T/want.txt"
diff -u "$T/want.txt" "$T/got.txt" || fail "findings differ from tests/lint/expected.txt"
[ "$(cat "$T/lint.rc")" = 1 ] || fail "lint with findings exited $(cat "$T/lint.rc"), not 1"

compiles() { # every build script of the tree compiles (rustc, no crates needed)
    command -v rustc > /dev/null || return 0
    local f
    for f in $(cd "$1" && find rust -name build.rs | sort); do
        rustc --edition 2021 --crate-type bin --emit=metadata -o "$T/meta.rmeta" -A warnings \
            "$1/$f" 2> "$T/rustc.err" || fail "$f does not compile: $(cat "$T/rustc.err")"
    done
}
note "every build script of the corpus is real Rust"
compiles "$T/c"

note "--fix --dry-run prints the change and writes nothing"
cp -r "$HERE/corpus" "$T/d"
before=$(cd "$T/c" && find . -type f -exec sha256sum {} + | sort)
(cd "$T/c" && "$CUBINCACHE" lint --fix --dry-run . > "$T/fix.diff" 2> "$T/dry.err")
[ $? = 1 ] || fail "--dry-run exited $?"
[ "$before" = "$(cd "$T/c" && find . -type f -exec sha256sum {} + | sort)" ] ||
    fail "--dry-run changed files"
grep -q '^+.*println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");' "$T/fix.diff" ||
    fail "the diff lacks the incident's declaration: $(cat "$T/fix.diff")"

note "--fix: every fixable finding fixed, in the file's style; what is left cannot be fixed"
(cd "$T/c" && "$CUBINCACHE" lint --fix . > "$T/fix.out" 2> "$T/fix.err")
[ $? = 1 ] || fail "--fix with unfixable findings left should exit 1: $(cat "$T/fix.out")"
findings "$T/c" > "$T/after.txt"
grep -v -e ' env-enumerated ' -e ' cmake-env ' -e ' meson-env ' "$T/after.txt" &&
    fail "fixable findings left after --fix"
grep -v '^#' "$HERE/expected.txt" | grep -e ' env-enumerated ' -e ' cmake-env ' -e ' meson-env ' |
    sort > "$T/unfixable.txt"
sort "$T/after.txt" | diff -u "$T/unfixable.txt" - || fail "after --fix, other findings than the unfixable ones"
compiles "$T/c"
# the incident's fix, as a person would have written it
grep -B1 'let cap = env::var("CUDA_COMPUTE_CAP")' "$T/c/rust/incident/build.rs" | head -1 |
    grep -qx '    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");' ||
    fail "incident: $(cat "$T/c/rust/incident/build.rs")"
grep -q 'println!("cargo::rerun-if-env-changed=CUDA_COMPUTE_CAP");' "$T/c/rust/cargo2_style/build.rs" ||
    fail "a file in the cargo:: style got another: $(cat "$T/c/rust/cargo2_style/build.rs")"
grep -q '^fn main() { println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP"); let cap' \
    "$T/c/rust/one_line/build.rs" || fail "one_line: $(cat "$T/c/rust/one_line/build.rs")"
# a script with no rerun-if line loses cargo's package scan with its first one:
# the fix declares the kernel it names as well
grep -q 'println!("cargo:rerun-if-changed=kernels/k.cu");' "$T/c/rust/default_scan/build.rs" ||
    fail "default_scan: $(cat "$T/c/rust/default_scan/build.rs")"
grep -q 'println!("cargo:rerun-if-changed=kernels/k.cu");' "$T/c/rust/nvcc_sources/build.rs" ||
    fail "nvcc_sources: $(cat "$T/c/rust/nvcc_sources/build.rs")"
grep -q 'emits no rerun-if directive' "$T/fix.err" ||
    fail "--fix did not warn about the scripts whose files it cannot name: $(cat "$T/fix.err")"

note "the dry run's diff is exactly the fix (patch -p1 of it gives the same tree)"
(cd "$T/d" && patch -s -p1 < "$T/fix.diff") || fail "the diff does not apply"
diff -r "$T/c" "$T/d" > /dev/null || fail "the diff and the fix differ: $(diff -r "$T/c" "$T/d")"

note "--fix again changes nothing"
after=$(cd "$T/c" && find . -type f -exec sha256sum {} + | sort)
(cd "$T/c" && "$CUBINCACHE" lint --fix . > /dev/null 2>&1)
[ "$after" = "$(cd "$T/c" && find . -type f -exec sha256sum {} + | sort)" ] || fail "a second --fix changed files"
rm -r "$T/c/rust/enumerated" # the one finding no fix can make
expect_exit 0 "$CUBINCACHE" lint -q "$T/c/rust"

note "all or nothing: a file that changes while the fix is staged stops every file"
cp -r "$HERE/corpus" "$T/e"
before=$(cd "$T/e" && find . -type f -exec sha256sum {} + | sort)
(cd "$T/e" && CUBINCACHE_TEST_PUBLISH_DELAY_MS=1500 "$CUBINCACHE" lint --fix rust > "$T/race.out" 2> "$T/race.err") &
pid=$!
sleep 0.7
echo '// edited meanwhile' >> "$T/e/rust/modules/detect.rs"
wait $pid
rc=$?
[ $rc = 4 ] || fail "a fix racing an edit exited $rc: $(cat "$T/race.err")"
grep -q "detect.rs' changed while it was being fixed; nothing was fixed" "$T/race.err" ||
    fail "$(cat "$T/race.err")"
echo '// edited meanwhile' >> /dev/null
[ "$(cd "$T/e" && find . -type f ! -name detect.rs -exec sha256sum {} + | sort)" = \
  "$(echo "$before" | grep -v detect.rs)" ] || fail "a failed fix changed other files"
[ -z "$(find "$T/e" -name '.*.cbc-lint.*')" ] || fail "staged files left behind: $(find "$T/e" -name '.*.cbc-lint.*')"

note "links are never followed, never replaced"
mkdir -p "$T/l/crate" "$T/elsewhere"
cp "$HERE/corpus/rust/incident/build.rs" "$T/elsewhere/build.rs"
ln -s "$T/elsewhere/build.rs" "$T/l/crate/build.rs"
ln -s "$T/elsewhere" "$T/l/linked-dir"
expect_exit 0 "$CUBINCACHE" lint "$T/l"
expect_out 2 "is a symbolic link" "$CUBINCACHE" lint --fix "$T/l/crate/build.rs"
[ -L "$T/l/crate/build.rs" ] || fail "the link was replaced"
cmp -s "$T/elsewhere/build.rs" "$HERE/corpus/rust/incident/build.rs" || fail "the link's target changed"

note "skipped trees: target/, vendor/, hidden and build directories"
mkdir -p "$T/s/target/debug/build" "$T/s/vendor/x" "$T/s/.git" "$T/s/build"
for d in target/debug/build vendor/x .git build; do cp "$HERE/corpus/rust/incident/build.rs" "$T/s/$d/"; done
touch "$T/s/build/build.ninja"
expect_exit 0 "$CUBINCACHE" lint "$T/s"
expect_exit 1 "$CUBINCACHE" lint -q "$T/s/build"   # named, it is linted

note "hostile input: every corpus and pattern file cut short and bytes flipped lints without a crash (ASan in CI)"
python3 - "$HERE/corpus" "$T/m" "$HERE/patterns" <<'PY'
import os, random, sys
src, dst, more = sys.argv[1], sys.argv[2], sys.argv[3]
rnd = random.Random(15)
files = [os.path.join(d, f) for root in (src, more) for d, _, fs in os.walk(root) for f in fs
         if f in ("build.rs", "CMakeLists.txt", "meson.build", "Makefile") or
         f.endswith((".rs", ".cmake"))]
n = 0
for path in sorted(files):
    data = open(path, "rb").read()
    name = os.path.basename(path)
    for k in range(12):
        if k < 6:
            cut = data[:rnd.randrange(len(data) + 1)]  # cut short: open strings, comments, blocks
        else:
            b = bytearray(data)
            for _ in range(rnd.randrange(1, 8)):
                b[rnd.randrange(len(b))] = rnd.choice(b'"\'#{}()[]/*!r\n\\$|=,;:<>\t')
            cut = bytes(b)
        d = os.path.join(dst, "m%04d" % n)
        os.makedirs(d)
        open(os.path.join(d, name), "wb").write(cut)
        n += 1
print(n)
PY
for d in "$T"/m/m*; do
    rc=0
    timeout 10 "$CUBINCACHE" lint -q "$d" > /dev/null 2> "$T/m.err" || rc=$?
    [ $rc -le 1 ] || fail "lint of a mangled $(ls "$d") exited $rc: $(cat "$T/m.err") (kept in $d)"
done

note "hostile nesting: 100,000 blocks and array literals inside one another, no crash"
mkdir -p "$T/deep"
python3 -c '
n = 100000
print("const A: &[&str] = &" + "[" * n + "\"X\"" + "]" * n + ";")
print("fn main() {" + "{" * n + "let _ = std::env::var(\"DEEP\");" + "}" * n + "}")
' > "$T/deep/build.rs"
rc=0
timeout 30 "$CUBINCACHE" lint -v "$T/deep" > "$T/deep.out" 2>&1 || rc=$?
[ $rc -le 1 ] || fail "lint of a deeply nested build.rs exited $rc: $(tail -3 "$T/deep.out")"
grep -q "too complex to follow" "$T/deep.out" || fail "no note that the lint stopped early: $(tail -3 "$T/deep.out")"

note "hostile breadth: 60,000 distinct names read, declared or printed: bounded work, and said so"
# each list is scanned for every name added to it: without the budget
# counting those scans the work grows with the square of the names
for shape in reads-first declared-first changed; do
    mkdir -p "$T/wide-$shape"
    python3 - "$shape" > "$T/wide-$shape/build.rs" <<'PY2'
import sys
n, shape = 60000, sys.argv[1]
read = ['    let _ = std::env::var("V%d");' % i for i in range(n)]
decl = ['    println!("cargo:rerun-if-env-changed=V%d");' % i for i in range(n)]
body = {"reads-first": read + decl[::2], "declared-first": decl + read,
        "changed": ['    println!("cargo:rerun-if-changed=f%d");' % i for i in range(n)]}[shape]
print("\n".join(["fn main() {"] + body + ["}"]))
PY2
    rc=0
    timeout 10 "$CUBINCACHE" lint -v "$T/wide-$shape" > "$T/wide.out" 2>&1 || rc=$?
    [ $rc -le 1 ] || fail "$shape: lint of 60,000 names exited $rc (a timeout is 124)"
    grep -q "too complex to follow" "$T/wide.out" ||
        fail "$shape: no note that the lint stopped early: $(grep -v '^ ' "$T/wide.out" | tail -2)"
done

note "usage and unreadable input: exit 2, naming the problem"
expect_out 2 "cannot read '$T/nope'" "$CUBINCACHE" lint "$T/nope"
echo x > "$T/notes.txt"
expect_out 2 "is not a build script, CMake, Meson or make file" "$CUBINCACHE" lint "$T/notes.txt"
expect_out 2 "--dry-run shows what --fix would change" "$CUBINCACHE" lint --dry-run "$T/c"
mkfifo "$T/fifo.rs"
expect_out 2 "not a regular file" timeout 10 "$CUBINCACHE" lint "$T/fifo.rs"
head -c 9000000 /dev/zero | tr '\0' 'a' > "$T/big/build.rs" 2>/dev/null || { mkdir -p "$T/big"; head -c 9000000 /dev/zero | tr '\0' 'a' > "$T/big/build.rs"; }
expect_out 2 "build.rs" "$CUBINCACHE" lint "$T/big/build.rs"
note "ok"
