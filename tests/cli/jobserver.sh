#!/usr/bin/env bash
# jobserver.sh: `cubincache build` shares CPUs the way make -j and cargo do.
# Under a GNU make jobserver it runs its first compile on the job it was
# started with and each further one on a token, gives every token back
# (also when killed by a signal), and with a jobserver that cannot be used
# runs one compile at a time, saying why. Without one it waits on nothing
# but its own compiles: another build of the same user that holds every
# CPU's worth of compiles does not delay it. Real make -j2 and real cargo,
# a FIFO jobserver written here (Debian 12's make 4.3 writes only pipes),
# and hostile offers.
. "$(dirname "$0")/lib.sh"
C=$CUBINCACHE
make_kernel "$T/src"
cd "$T/src"

# An nvcc that counts the compiles running at once (a directory each while
# it runs; not the toolchain's identification), and that holds every
# compile while $T/hold exists, until $T/hold is removed.
mkdir -p "$T/running"
cat > "$T/nvcc-js" <<EOF2
#!/bin/bash
case " \$* " in *cubincache-probe*) exec "$NVCC_REAL" "\$@" ;; *" -cubin "*) ;; *) exec "$NVCC_REAL" "\$@" ;; esac
d=\$(mktemp -d "$T/running/r.XXXXXX")
ls "$T/running" | wc -l >> "$T/par.log"
while [ -e "$T/hold" ]; do sleep 0.1; done
"$NVCC_REAL" "\$@"; rc=\$?
rmdir "\$d"
exit \$rc
EOF2
chmod +x "$T/nvcc-js"
export NVCC="$T/nvcc-js"
reset_count() { rm -rf "$T/running" "$T/par.log" "$CUBINCACHE_DIR"; mkdir -p "$T/running"; : > "$T/par.log"; }
most() { sort -n "$T/par.log" | tail -1; }
kernels() { for i in "$@"; do sed "s/scale/scale$i/" k.cu > "p$i.cu"; done; }
kernels 1 2 3 4 5 6
ARCHS=75,80,86,90

# tokens waiting in a FIFO jobserver, counted and put back
tokens() { python3 - "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
got = b""
while True:
    try:
        b = os.read(fd, 64)
    except BlockingIOError:
        break
    if not b:
        break
    got += b
os.write(fd, got)
print(len(got))
PY
}
# a FIFO jobserver with $2 tokens at $1, held open by this shell (fd 9) as
# make holds its own
fifo_server() {
    rm -f "$1"; mkfifo -m 600 "$1"
    exec 9<>"$1"
    local i; for ((i = 0; i < $2; i++)); do printf '+' >&9; done
}

note "fifo:PATH with 2 tokens, -j 8: at most 3 compiles at once, every token back after"
fifo_server "$T/js" 2
reset_count
MAKEFLAGS=" -j3 --jobserver-auth=fifo:$T/js" "$C" build -q -j 8 -a $ARCHS -o "$T/o1" p1.cu ||
    fail "build under a FIFO jobserver"
m=$(most); [ "$m" -le 3 ] || fail "$m compiles at once on 1 job and 2 tokens"
[ "$m" -ge 2 ] || fail "only $m compile at once: the tokens were not used"
[ "$(tokens "$T/js")" = 2 ] || fail "the jobserver holds $(tokens "$T/js") tokens after the build, not 2"
note "  (at most $m at once)"

note "a jobserver that never gives a token: one compile at a time, no warning, no wait"
fifo_server "$T/js0" 0
reset_count
MAKEFLAGS="-j2 --jobserver-auth=fifo:$T/js0" "$C" build -j 8 -a $ARCHS -o "$T/o0" p1.cu 2> "$T/e0" ||
    fail "build under an empty jobserver: $(cat "$T/e0")"
[ "$(most)" = 1 ] || fail "$(most) compiles at once without a token"
[ ! -s "$T/e0" ] || fail "an empty jobserver is no reason to warn: $(cat "$T/e0")"
[ "$(sort "$T/par.log" | wc -l)" = 4 ] || fail "not every target compiled"

note "the old --jobserver-fds=R,W on a pipe given as descriptors (R = W, one pipe)"
fifo_server "$T/jsp" 1
reset_count
MAKEFLAGS="-j2 --jobserver-fds=9,9" "$C" build -q -j 8 -a $ARCHS -o "$T/o2" p2.cu ||
    fail "build under --jobserver-fds"
[ "$(most)" -le 2 ] || fail "$(most) compiles at once on 1 job and 1 token"
[ "$(most)" = 2 ] || fail "the one token was not used"
[ "$(tokens "$T/jsp")" = 1 ] || fail "the token did not come back"

note "CARGO_MAKEFLAGS is read before MAKEFLAGS"
fifo_server "$T/jsc" 0
reset_count
CARGO_MAKEFLAGS="-j --jobserver-auth=fifo:$T/jsc" MAKEFLAGS="-j4 --jobserver-auth=fifo:$T/js" \
    "$C" build -q -j 8 -a $ARCHS -o "$T/o3" p3.cu || fail "build under CARGO_MAKEFLAGS"
[ "$(most)" = 1 ] || fail "CARGO_MAKEFLAGS's empty jobserver ignored: $(most) at once"

note "killed by SIGTERM while holding tokens: every token goes back"
fifo_server "$T/jsk" 2
reset_count
touch "$T/hold"
MAKEFLAGS="-j3 --jobserver-auth=fifo:$T/jsk" "$C" build -q -j 8 -a $ARCHS -o "$T/o4" p4.cu &
victim=$!
for _ in $(seq 1 6000); do [ "$(ls "$T/running" | wc -l)" -ge 3 ] && break; sleep 0.1; done
[ "$(ls "$T/running" | wc -l)" = 3 ] || fail "the build never ran 3 compiles at once"
[ "$(tokens "$T/jsk")" = 0 ] || fail "3 compiles run, yet the jobserver still has tokens"
kill -TERM $victim
wait $victim; rc=$?
[ $rc = 143 ] || fail "the build should die of SIGTERM (143), not exit $rc"
rm -f "$T/hold"
[ "$(tokens "$T/jsk")" = 2 ] || fail "SIGTERM lost tokens: $(tokens "$T/jsk") of 2 back"

note "hostile offers: a warning naming what is wrong, then one compile at a time"
hostile() { # NEEDLE MAKEFLAGS-VALUE
    reset_count
    MAKEFLAGS="$2" "$C" build -j 8 -a $ARCHS -o "$T/oh" p5.cu 2> "$T/eh" || fail "build with MAKEFLAGS='$2': $(cat "$T/eh")"
    grep -q "warning: MAKEFLAGS offers a jobserver (--jobserver-.*) that cannot be used: $1" "$T/eh" ||
        fail "MAKEFLAGS='$2': no warning '$1': $(cat "$T/eh")"
    [ "$(most)" = 1 ] || fail "MAKEFLAGS='$2': $(most) compiles at once"
}
echo "not a fifo" > "$T/plain"
hostile "'$T/plain' is not a FIFO" "-j2 --jobserver-auth=fifo:$T/plain"
hostile "cannot open '$T/absent': No such file or directory" "-j2 --jobserver-auth=fifo:$T/absent"
hostile "fd 97 is not open" "-j2 --jobserver-auth=97,98"
hostile "fd 8 is not a pipe" "-j2 --jobserver-auth=8,9" 8< "$T/plain"
rm -f "$T/p1" "$T/p2"; mkfifo "$T/p1" "$T/p2"
hostile "fds 7 and 8 are not the two ends of one pipe" "-j2 --jobserver-auth=7,8" 7<> "$T/p1" 8<> "$T/p2"
hostile "'--jobserver-auth=w32' is not a form" "-j2 --jobserver-auth=w32"
[ "$(tokens "$T/p1")" = 0 ] || fail "a pipe that is not a jobserver was written to"

note "real make -j2: a recipe marked '+' gets the jobserver, two bundles share 2 jobs"
cat > Makefile <<EOF2
all: b1 b2
b1 b2:
	+"$C" build -j 8 -a $ARCHS -o "$T/mk/\$@" p\$(subst b,,\$@).cu
EOF2
reset_count
env -u MAKEFLAGS -u MFLAGS make -s -j2 > "$T/make.out" 2>&1 || fail "make -j2: $(cat "$T/make.out")"
[ "$(most)" -le 2 ] || fail "make -j2 ran $(most) compiles at once"
[ ! -s "$T/make.out" ] || fail "make -j2 said: $(cat "$T/make.out")"
reset_count
env -u MAKEFLAGS -u MFLAGS make -s -j3 b1 > "$T/make.out" 2>&1 || fail "make -j3 b1"
[ "$(most)" -gt 1 ] && [ "$(most)" -le 3 ] || fail "make -j3 with one bundle: $(most) at once"

note "make -j2 without '+': make keeps its jobserver from the recipe, which says so and runs one at a time"
sed -i 's/^\t+/\t/' Makefile
reset_count
env -u MAKEFLAGS -u MFLAGS make -s -j2 > "$T/make.out" 2>&1 || fail "make -j2 without +: $(cat "$T/make.out")"
grep -q "cannot be used: fd [0-9]* is not open (make passes its jobserver only to the commands of rules it knows run make: prefix the recipe line with '+')" "$T/make.out" ||
    fail "no warning naming the fix: $(cat "$T/make.out")"
[ "$(most)" -le 2 ] || fail "make -j2 without '+' ran $(most) compiles at once"

note "real cargo: a build script building 3 bundles of 4 targets, total compiles at most cargo's -j"
CARGO=${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}
if [ -x "$CARGO" ]; then
    mkdir -p "$T/crate/src"
    cat > "$T/crate/Cargo.toml" <<'EOF2'
[package]
name = "jobs"
version = "0.1.0"
edition = "2021"
build = "build.rs"
EOF2
    cat > "$T/crate/build.rs" <<EOF2
use std::process::Command;
fn main() {
    let out = std::env::var("OUT_DIR").unwrap();
    for i in 1..=3 {
        let st = Command::new("$C")
            .args(["build", "-q", "-j", "8", "-a", "$ARCHS", "-o", &format!("{}/b{}", out, i),
                   &format!("$T/src/p{}.cu", i)])
            .status().unwrap();
        assert!(st.success(), "cubincache build failed");
    }
}
EOF2
    echo 'fn main() {}' > "$T/crate/src/main.rs"
    for j in 1 2; do
        reset_count
        rm -rf "$T/crate/target"
        (cd "$T/crate" && env -u MAKEFLAGS -u MFLAGS -u CARGO_MAKEFLAGS "$CARGO" build -q --offline -j $j) \
            > "$T/cargo.out" 2>&1 || fail "cargo build -j $j: $(cat "$T/cargo.out")"
        [ "$(most)" -le $j ] || fail "cargo -j $j: $(most) compiles at once"
        [ "$(sort "$T/par.log" | wc -l)" = 12 ] || fail "cargo -j $j: not all 12 compiles ran"
    done
    [ "$(most)" = 2 ] || fail "cargo -j 2: the build script's builds never used the free token"
else
    note "  (no cargo: skipped)"
fi

note "no jobserver: a build never waits on another build of the same user"
reset_count
touch "$T/hold"
"$C" build -q -a 75,80 -o "$T/held" p6.cu & holder=$!  # holds one compile per CPU
for _ in $(seq 1 6000); do [ "$(ls "$T/running" | wc -l)" -ge 2 ] && break; sleep 0.1; done
[ "$(ls "$T/running" | wc -l)" -ge 2 ] || fail "the holding build never started its compiles"
# the other build must finish while the first still holds every CPU's compile
mkdir -p "$T/other" && cp k.cu kh.cuh "$T/other/"
(cd "$T/other" && NVCC="$NVCC_REAL" "$C" build -q -a 75,86 -o "$T/other/out" k.cu) ||
    fail "a build beside a holding one failed"
kill -0 $holder 2>/dev/null || fail "the holding build ended early: the test proves nothing"
[ -e "$T/other/out/k.sm_86.cubin" ] || fail "the other build wrote nothing"
[ ! -e "$XDG_RUNTIME_DIR/cubincache-jobs" ] || fail "a build took shared slots without shared_jobs"
rm -f "$T/hold"
wait $holder || fail "the holding build failed"
echo ok
