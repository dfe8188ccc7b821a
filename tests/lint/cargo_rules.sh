#!/usr/bin/env bash
# cargo_rules.sh: the rules of cargo that `cubincache lint` is built on,
# checked with cargo itself on a crate with no dependencies (skips, 77,
# where cargo is not installed):
#   1. a rerun-if-env-changed= printed after the read counts: cargo reads
#      the directives from the whole output of a script that finishes;
#   2. a script that prints only rerun-if-env-changed= is not rerun when a
#      file of its package changes (cargo's scan of the package ends);
#   3. a rerun-if-changed= path that does not exist (a literal glob, a
#      .git/HEAD of another directory) reruns the script at every build;
#   4. a directory in rerun-if-changed= is scanned: an edit in it reruns;
#   5. the incident: a read with no declaration is not rerun when the
#      variable changes.
. "$(dirname "$0")/../cli/lib.sh"
PATH="$PATH:$HOME/.cargo/bin"
command -v cargo > /dev/null || { echo "cargo not found: skipped"; exit 77; }
export CARGO_TARGET_DIR="$T/target" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
C="$T/crate"
mkdir -p "$C/src/kernels"
printf '[package]\nname = "rules"\nversion = "0.1.0"\nedition = "2021"\n' > "$C/Cargo.toml"
echo 'fn main() {}' > "$C/src/main.rs"
echo '// kernel' > "$C/src/kernels/k.cu"
RUNS="$T/runs"
script() { # BODY: the build script, which counts its runs
    cat > "$C/build.rs" <<EOF
use std::io::Write;
fn main() {
    std::fs::OpenOptions::new().append(true).create(true).open("$RUNS").unwrap()
        .write_all(b"run\n").unwrap();
    $1
}
EOF
}
runs() { # cargo build; how often the script ran
    rm -f "$RUNS"
    (cd "$C" && cargo build --offline -q 2> "$T/cargo.err") || fail "cargo build: $(cat "$T/cargo.err")"
    if [ -f "$RUNS" ]; then wc -l < "$RUNS" | tr -d ' '; else echo 0; fi
}
edit() { sleep 1; echo "// $RANDOM" >> "$1"; }

note "1. a declaration after the read counts"
script 'let v = std::env::var("LATE").unwrap_or_default(); let _ = v; println!("cargo:rerun-if-env-changed=LATE");'
runs > /dev/null
[ "$(runs)" = 0 ] || fail "the script reran with nothing changed"
[ "$(LATE=1 runs)" = 1 ] || fail "a declaration after the read did not rerun the script on a change"

note "2. only rerun-if-env-changed: an edit of the package does not rerun"
script 'println!("cargo:rerun-if-env-changed=SOME_VAR");'
runs > /dev/null
edit "$C/src/kernels/k.cu"
[ "$(runs)" = 0 ] || fail "an edited kernel reran a script that declares only a variable"

note "3. a declared path that does not exist reruns at every build"
script 'println!("cargo:rerun-if-changed=src/kernels/*.cu");'
runs > /dev/null
[ "$(runs)" = 1 ] || fail "a literal glob did not rerun the script"
[ "$(runs)" = 1 ] || fail "a literal glob did not rerun the script a second time"
script 'println!("cargo:rerun-if-changed=.git/HEAD");'
runs > /dev/null
[ "$(runs)" = 1 ] || fail "a missing .git/HEAD did not rerun the script"

note "4. a directory is scanned"
script 'println!("cargo:rerun-if-changed=src/kernels");'
runs > /dev/null
[ "$(runs)" = 0 ] || fail "a declared directory reran with nothing changed"
edit "$C/src/kernels/k.cu"
[ "$(runs)" = 1 ] || fail "an edit inside a declared directory did not rerun"

note "5. the incident: a read without a declaration is not rerun on a change"
script 'println!("cargo:rerun-if-changed=build.rs"); let _ = std::env::var("CUDA_COMPUTE_CAP");'
CUDA_COMPUTE_CAP=89 runs > /dev/null
[ "$(CUDA_COMPUTE_CAP=90 runs)" = 0 ] || fail "an undeclared variable reran the script (cargo changed?)"
note "ok"
