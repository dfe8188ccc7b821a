#!/usr/bin/env bash
# patterns.sh: `cubincache lint` on the patterns of real build scripts
# (tests/lint/patterns: each a script written here after the real one its
# head comment names, expected findings in patterns.expected), and what
# --fix does with them: no glob, no file outside the PATHs given, the
# file's own line endings and byte order mark, a Makefile whose arch flags
# become a prerequisite (checked with make itself), models of a user's own
# build helpers (--helpers). The scripts name crates (bindgen_cuda,
# cudaforge, cc, cmake) that are not here, so they are linted, not built.
. "$(dirname "$0")/../cli/lib.sh"
HERE="$SRCDIR/tests/lint"
unset CI

findings() { # DIR [ARGS...]: FILE:LINE:COL RULE VAR, relative to DIR
    local d=$1
    shift
    (cd "$d" && "$CUBINCACHE" lint --json "$@" . 2> "$T/lint.err") > "$T/lint.json"
    echo $? > "$T/lint.rc"
    python3 - "$T/lint.json" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "summary" not in o:
        print("%s:%d:%d %s %s" % (o["file"], o["line"], o["col"], o["rule"], o["var"] or "-"))
PY
}

note "the patterns: exactly the expected findings"
cp -r "$HERE/patterns" "$T/p"
findings "$T/p" > "$T/got.txt"
grep -v '^#' "$HERE/patterns.expected" > "$T/want.txt"
diff -u "$T/want.txt" "$T/got.txt" || fail "findings differ from tests/lint/patterns.expected"
[ "$(cat "$T/lint.rc")" = 1 ] || fail "lint with findings exited $(cat "$T/lint.rc")"
(cd "$T/p" && "$CUBINCACHE" lint -v . > /dev/null 2> "$T/notes.txt")
grep -q "always_rerun/build.rs prints cargo:rerun-if-changed=.git/HEAD, which does not exist" "$T/notes.txt" ||
    fail "no note for the script cargo reruns at every build: $(cat "$T/notes.txt")"

note "a header the kernels include is named as included, not as compiled"
(cd "$T/p" && "$CUBINCACHE" lint flash_attn_headers > "$T/hdr.txt" 2> /dev/null)
grep -q "the kernels the build script compiles with nvcc through bindgen_cuda::Builder.build_lib include kernels/mask.h, and no rerun-if-changed= covers it" "$T/hdr.txt" ||
    fail "the header finding does not say the kernels include it: $(grep mask.h "$T/hdr.txt")"
grep -q "compiles kernels/mask.h" "$T/hdr.txt" && fail "the header finding says the script compiles it"

note "the issue's two false-positive patterns stay clean"
grep -q '^candle_declared_after/' "$T/got.txt" && fail "a declaration after the read is a finding"
grep -q '^bindgen_ptx_glob/.* nvcc-sources kernels/norm.cu' "$T/got.txt" &&
    fail "a kernel build_ptx() declares itself is a finding"
grep -q '^cudaforge_declared/.* CUDA_COMPUTE_CAP' "$T/got.txt" &&
    fail "detect_compute_cap() after build_ptx() (which declares it) is a finding"
grep -q '^warning_only/' "$T/got.txt" && fail "a read that only picks a warning is a finding"
grep -q '^make_clean/' "$T/got.txt" && fail "a Makefile with no nvcc recipe has a finding"
grep -q 'ENABLE_UCX\|TENSORRT_ROOT' "$T/got.txt" && fail "an option that is no CUDA arch is a finding"

note "--fix never writes a glob: the glob's directory instead"
(cd "$T/p" && "$CUBINCACHE" lint --fix --dry-run . > "$T/fix.diff" 2> /dev/null)
grep '^+.*rerun-if-changed=' "$T/fix.diff" > "$T/added.txt" || fail "the fix adds no rerun-if-changed"
grep '^+.*rerun-if-changed=[^"]*[*?[]' "$T/added.txt" && fail "the fix writes a glob: $(cat "$T/added.txt")"
grep -q 'println!("cargo:rerun-if-changed=kernels");' "$T/added.txt" ||
    fail "glob_fix: the kernels' directory is not declared: $(cat "$T/added.txt")"
grep -q 'rerun-if-changed=src");' "$T/added.txt" ||
    fail "bindgen_lib_default: the directory of the forgotten kernel is not declared"

note "--fix, then nothing fixable is left, and a second --fix changes nothing"
(cd "$T/p" && "$CUBINCACHE" lint --fix . > "$T/fix.out" 2> "$T/fix.err")
[ $? = 1 ] || fail "--fix left no unfixable findings or failed: $(cat "$T/fix.err")"
findings "$T/p" > "$T/after.txt"
grep -v ' cmake-env ' "$T/after.txt" && fail "fixable findings left after --fix"
sum1=$(cd "$T/p" && find . -type f -exec sha256sum {} + | sort)
(cd "$T/p" && "$CUBINCACHE" lint --fix . > /dev/null 2>&1)
[ "$sum1" = "$(cd "$T/p" && find . -type f -exec sha256sum {} + | sort)" ] || fail "a second --fix changed files"

note "make: the arch flags become a prerequisite (make itself checks it)"
mkdir -p "$T/bin" "$T/mk"
cat > "$T/bin/nvcc" <<'EOF'
#!/bin/sh
# stands in for nvcc: writes its arguments to the -o file
out=
prev=
for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done
printf '%s\n' "$*" > "$out"
EOF
chmod +x "$T/bin/nvcc"
cp "$HERE/patterns/make_llmc/"* "$T/mk/"
mk() { (cd "$T/mk" && PATH="$T/bin:$PATH" make -s "$@" build/attn.o 2>&1); }
GPU_COMPUTE_CAPABILITY=80 mk > /dev/null
grep -q compute_80 "$T/mk/build/attn.o" || fail "make did not build for 80: $(cat "$T/mk/build/attn.o")"
GPU_COMPUTE_CAPABILITY=90 mk > /dev/null
grep -q compute_80 "$T/mk/build/attn.o" || fail "without the fix make should keep the sm_80 object (the bug)"
expect_exit 0 "$CUBINCACHE" lint --fix -q "$T/mk"
GPU_COMPUTE_CAPABILITY=90 mk > /dev/null
grep -q compute_90 "$T/mk/build/attn.o" || fail "after the fix a change to 90 did not rebuild: $(cat "$T/mk/build/attn.o")"
before=$(stat -c %Y.%N "$T/mk/build/attn.o" 2>/dev/null || stat -c %Y "$T/mk/build/attn.o")
sleep 1
GPU_COMPUTE_CAPABILITY=90 mk > "$T/mk.out"
[ "$before" = "$(stat -c %Y.%N "$T/mk/build/attn.o" 2>/dev/null || stat -c %Y "$T/mk/build/attn.o")" ] ||
    fail "the same flags rebuilt the object: $(cat "$T/mk.out")"
GPU_COMPUTE_CAPABILITY=80 mk > /dev/null
grep -q compute_80 "$T/mk/build/attn.o" || fail "back to 80 did not rebuild"
expect_exit 0 "$CUBINCACHE" lint -q "$T/mk"

note "--fix writes nothing outside the PATHs given"
mkdir -p "$T/ws/crates/a" "$T/ws/crates/b" "$T/ws/crates/c" "$T/ws/shared"
incident='fn main() {
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_default();
    println!("cargo:rustc-env=SM={}", cap);
}'
printf '%s\n' "$incident" > "$T/ws/shared/build.rs"
printf '[package]\nname = "a"\nversion = "0.1.0"\nbuild = "../../shared/build.rs"\n' > "$T/ws/crates/a/Cargo.toml"
printf '[package]\nname = "b"\nversion = "0.1.0"\n' > "$T/ws/crates/b/Cargo.toml"
printf '#[path = "../../shared/detect.rs"]\nmod detect;\nfn main() { println!("{}", detect::cap()); }\n' > "$T/ws/crates/b/build.rs"
printf 'pub fn cap() -> String { std::env::var("SM_ARCH").unwrap_or_default() }\n' > "$T/ws/shared/detect.rs"
printf '[package]\nname = "c"\nversion = "0.1.0"\n' > "$T/ws/crates/c/Cargo.toml"
printf 'include!("../../shared/inc.rs");\nfn main() { println!("{}", arch()); }\n' > "$T/ws/crates/c/build.rs"
printf 'fn arch() -> String { std::env::var("INC_ARCH").unwrap_or_default() }\n' > "$T/ws/shared/inc.rs"
snap=$(cd "$T/ws" && find . -type f -exec sha256sum {} + | sort)
expect_out 2 "shared/build.rs' is outside the paths given (the lint reached it through the \`build\` key of" \
    "$CUBINCACHE" lint --fix "$T/ws/crates/a"
expect_out 2 "shared/detect.rs' is outside the paths given (the lint reached it through the #[path] of \`mod detect;\`" \
    "$CUBINCACHE" lint --fix "$T/ws/crates/b"
expect_out 2 "shared/inc.rs' is outside the paths given (the lint reached it through include!(" \
    "$CUBINCACHE" lint --fix "$T/ws/crates/c"
[ "$snap" = "$(cd "$T/ws" && find . -type f -exec sha256sum {} + | sort)" ] || fail "a refused fix wrote something"
[ -z "$(find "$T/ws" -name '.*.cbc-lint.*')" ] || fail "a refused fix left staged files"
expect_exit 0 "$CUBINCACHE" lint --fix -q "$T/ws/crates/a" "$T/ws/shared"
grep -q 'rerun-if-env-changed=CUDA_COMPUTE_CAP' "$T/ws/shared/build.rs" || fail "naming the directory too did not fix it"

note "--fix keeps CRLF line endings and a byte order mark"
mkdir -p "$T/crlf" "$T/bom"
printf 'fn main() {\r\n    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_default();\r\n    println!("cargo:rustc-env=SM={}", cap);\r\n}\r\n' > "$T/crlf/build.rs"
expect_exit 0 "$CUBINCACHE" lint --fix -q "$T/crlf"
python3 - "$T/crlf/build.rs" <<'PY' || fail "the CRLF file got a foreign line ending: $(od -c "$T/crlf/build.rs" | head)"
import sys
b = open(sys.argv[1], "rb").read()
assert b"rerun-if-env-changed=CUDA_COMPUTE_CAP" in b, b
bare = [i for i, c in enumerate(b) if c == 10 and (i == 0 or b[i - 1] != 13)]
assert not bare, bare
PY
printf '\xef\xbb\xbffn main() {\n    let cap = std::env::var("CUDA_COMPUTE_CAP");\n    println!("{:?}", cap);\n}\n' > "$T/bom/build.rs"
expect_exit 0 "$CUBINCACHE" lint --fix -q "$T/bom"
head -c 3 "$T/bom/build.rs" | od -An -tx1 | grep -q 'ef bb bf' || fail "the byte order mark moved"
sed -n 2p "$T/bom/build.rs" | grep -q '^    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");$' ||
    fail "BOM file: $(cat "$T/bom/build.rs")"

note "--helpers: models of a user's own build helper"
mkdir -p "$T/h/own"
printf '[package]\nname = "own"\nversion = "0.1.0"\n' > "$T/h/own/Cargo.toml"
cat > "$T/h/own/build.rs" <<'EOF'
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let arch = mybuild::cuda_arch();
    let k = mybuild::Kernels::new("kernels").arch(&arch);
    println!("cargo:rustc-env=ARCH={arch}");
    drop(k);
}
EOF
cat > "$T/h/helpers.txt" <<'EOF'
# mybuild, the workspace's own build helper crate
mybuild::cuda_arch        reads=MY_CUDA_ARCH
mybuild::Kernels::new     type=mybuild::Kernels sources=arg
mybuild::Kernels.compile  declares=MY_CUDA_ARCH declares-sources nvcc ends
EOF
expect_exit 0 "$CUBINCACHE" lint -q "$T/h/own"
expect_out 1 "MY_CUDA_ARCH: MY_CUDA_ARCH is read" "$CUBINCACHE" lint --helpers "$T/h/helpers.txt" "$T/h/own"
sed -i 's/drop(k);/k.compile();/' "$T/h/own/build.rs"
expect_exit 0 "$CUBINCACHE" lint -q --helpers "$T/h/helpers.txt" "$T/h/own"
printf 'mybuild::cuda_arch  reads=MY_CUDA_ARCH\nmybuild::x  bogus=1\n' > "$T/h/bad.txt"
expect_out 2 "bad.txt:2: unknown effect 'bogus=1'" "$CUBINCACHE" lint --helpers "$T/h/bad.txt" "$T/h/own"
printf 'not-a-call reads=X\n' > "$T/h/bad2.txt"
expect_out 2 "bad2.txt:1: not a call 'not-a-call'" "$CUBINCACHE" lint --helpers "$T/h/bad2.txt" "$T/h/own"
expect_out 2 "cannot" "$CUBINCACHE" lint --helpers "$T/h/none.txt" "$T/h/own"
note "ok"
