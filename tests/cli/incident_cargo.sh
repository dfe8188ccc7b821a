#!/usr/bin/env bash
# incident_cargo.sh: the incident of ../shared/reference/origin.md, replayed
# with cargo. A workspace of seven crates whose build.rs read
# CUDA_COMPUTE_CAP; one declares it, six do not. `lint` reports exactly the
# six; without the fix, CUDA_COMPUTE_CAP=89 then =90 reruns only the one
# declared build script and the program keeps sm_89 for the other six (the
# H100 that loaded an sm_89 cubin); after `lint --fix`, in one step, the
# switch reruns all seven and every crate says 90. Skipped (77) only when
# cargo is not installed.
. "$(dirname "$0")/lib.sh"
PATH="$PATH:$HOME/.cargo/bin"
command -v cargo > /dev/null || { echo "cargo is not installed" >&2; exit 77; }
W="$T/ws"
mkdir -p "$W/app/src"
members=""
deps=""
for i in 1 2 3 4 5 6 7; do
    c="$W/kern$i"
    mkdir -p "$c/src"
    printf '[package]\nname = "kern%s"\nversion = "0.1.0"\nedition = "2021"\n' $i > "$c/Cargo.toml"
    {
        echo '// picks the SM target of this crate'"'"'s kernels from CUDA_COMPUTE_CAP'
        echo 'use std::io::Write;'
        echo 'fn main() {'
        [ $i = 1 ] && echo '    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");'
        echo '    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "80".to_string());'
        echo '    println!("cargo:rustc-env=KERNEL_SM={}", cap);'
        echo '    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();'
        echo '    let log = std::path::Path::new(&dir).join("../runs.log");'
        echo '    let mut f = std::fs::OpenOptions::new().append(true).create(true).open(log).unwrap();'
        # one write(2) per line: writeln! writes piece by piece, and seven build
        # scripts run at once append to one file
        echo "    f.write_all(format!(\"kern$i {}\\n\", cap).as_bytes()).unwrap();"
        echo '}'
    } > "$c/build.rs"
    echo 'pub const SM: &str = env!("KERNEL_SM");' > "$c/src/lib.rs"
    members="$members\"kern$i\", "
    deps="${deps}kern$i = { path = \"../kern$i\" }\n"
done
printf '[workspace]\nmembers = [%s"app"]\nresolver = "2"\n' "$members" > "$W/Cargo.toml"
printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n%b' "$deps" > "$W/app/Cargo.toml"
{
    echo 'fn main() {'
    for i in 1 2 3 4 5 6 7; do echo "    println!(\"kern$i sm_{}\", kern$i::SM);"; done
    echo '}'
} > "$W/app/src/main.rs"
cp -r "$W" "$T/fixed"
export CARGO_TARGET_DIR
cb() { # DIR CAP
    (cd "$1" && CARGO_TARGET_DIR="$1/target" CUDA_COMPUTE_CAP=$2 cargo build --offline -q) > "$T/cargo.log" 2>&1 ||
        fail "cargo build: $(cat "$T/cargo.log")"
}
ran() { grep -c " $2\$" "$1/runs.log" 2>/dev/null || true; }
sms() { "$1/target/debug/app" | awk '{print $2}' | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}'; }

note "lint: exactly the six undeclared reads"
"$CUBINCACHE" lint --json "$W" > "$T/lint.json" 2> /dev/null
[ $? = 1 ] || fail "lint exited $?"
python3 - "$T/lint.json" "$W" <<'PY' || fail "lint reported other findings: $(cat "$T/lint.json")"
import json, sys
got = sorted((o["file"][len(sys.argv[2]) + 1:], o["var"], o["rule"])
             for o in map(json.loads, open(sys.argv[1])) if "summary" not in o)
want = [("kern%d/build.rs" % i, "CUDA_COMPUTE_CAP", "env-undeclared") for i in range(2, 8)]
sys.exit(got != want)
PY

note "without the fix: the switch to 90 reruns one build script; six crates keep sm_89"
cb "$W" 89
[ "$(ran "$W" 89)" = 7 ] || fail "the first build ran $(ran "$W" 89) build scripts"
[ "$(sms "$W")" = "sm_89:7 " ] || fail "after 89: $(sms "$W")"
cb "$W" 90
[ "$(ran "$W" 90)" = 1 ] || fail "without the fix, $(ran "$W" 90) build scripts reran (expected only kern1)"
[ "$(sms "$W")" = "sm_89:6 sm_90:1 " ] || fail "without the fix: $(sms "$W")"
note "  the stale program: $(sms "$W")"

note "lint --fix: all six in one step, then clean"
expect_exit 0 "$CUBINCACHE" lint -q --fix "$T/fixed"
[ "$(grep -l 'rerun-if-env-changed=CUDA_COMPUTE_CAP' "$T"/fixed/kern*/build.rs | wc -l)" = 7 ] ||
    fail "not every build script declares it"
expect_exit 0 "$CUBINCACHE" lint -q "$T/fixed"
note "with the fix: the switch reruns all seven, every crate says 90"
cb "$T/fixed" 89
[ "$(sms "$T/fixed")" = "sm_89:7 " ] || fail "after 89: $(sms "$T/fixed")"
cb "$T/fixed" 90
[ "$(ran "$T/fixed" 90)" = 7 ] || fail "with the fix, $(ran "$T/fixed" 90) of 7 build scripts reran"
[ "$(sms "$T/fixed")" = "sm_90:7 " ] || fail "with the fix: $(sms "$T/fixed")"
note "ok"
