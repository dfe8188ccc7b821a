#!/usr/bin/env bash
# remote.sh: the Redis second-level cache against a real redis-server on a
# loopback port (started and stopped here; skipped, 77, only when
# redis-server is not installed). Two builders with separate local caches
# share it: the second is a remote hit, runs no compile, and writes the same
# bytes; the launcher too. Poisoned values (a flipped byte, another arch, a
# header relabelled, truncated, the wrong Redis type) are refused and
# compiled here; another kernel's valid entry under a key is served: what
# a trusted writer can do (README). Faults, each bounded in time: nothing
# listening, a server that never answers, one that answers garbage, one
# that trickles a valid reply a byte every 0.5 s (one deadline for the
# whole operation), one that announces a 1 GiB value and sends it for ever
# (refused from its header: the peak resident size stays small), a password
# missing or wrong, a full server; each counted as what it is (timeouts,
# refusals, bad values). 16 builders at once.
. "$(dirname "$0")/lib.sh"
command -v redis-server > /dev/null || { echo "redis-server is not installed" >&2; exit 77; }
. "$(dirname "$0")/remote_lib.sh"
trap 'for p in "$T"/*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done; chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT

rcli() { redis-cli -p "$PORT" "$@"; }

make_counting_nvcc
export NVCC="$T/nvcc-count"
start_redis "$T/main" || fail "no redis-server"
MAIN=$PORT
URL="redis://127.0.0.1:$MAIN"
make_kernel "$T/src"
cd "$T/src"

note "builder A (its own cache): misses, compiles, writes through to Redis"
CUBINCACHE_DIR="$T/cA" expect_exit 0 "$CUBINCACHE" build -q --remote "$URL" -a 80,90 -o "$T/outA" k.cu
[ "$(compiles)" = 2 ] || fail "A compiled $(compiles) times: $(cat "$T/nvcc.log")"
[ "$(rcli --scan --pattern 'cubincache:v1:objects:*' | wc -l)" = 2 ] || fail "Redis holds $(rcli keys '*')"
note "builder B (another cache, CUBINCACHE_REMOTE): remote hits, no compile, the same bytes"
reset_nvcc_log
CUBINCACHE_DIR="$T/cB" CUBINCACHE_REMOTE="$URL" "$CUBINCACHE" build --explain -a 80,90 -o "$T/outB" k.cu 2> "$T/b.err" ||
    fail "B: $(cat "$T/b.err")"
grep -q "sm_90: remote hit (redis://127.0.0.1:$MAIN)" "$T/b.err" || fail "B's explain: $(cat "$T/b.err")"
[ "$(compiles)" = 0 ] || fail "B compiled: $(cat "$T/nvcc.log")"
for t in 80 90; do cmp "$T/outA/k.sm_$t.cubin" "$T/outB/k.sm_$t.cubin" || fail "sm_$t differs"; done
CUBINCACHE_DIR="$T/cB" CUBINCACHE_REMOTE="$URL" "$CUBINCACHE" cache stats > "$T/stats"
grep -q "^remote           redis://127.0.0.1:$MAIN" "$T/stats" && grep -q "remote hits    2 " "$T/stats" ||
    fail "B's stats: $(cat "$T/stats")"
note "B again: local hits (the remote's answers were written here)"
CUBINCACHE_DIR="$T/cB" CUBINCACHE_REMOTE="$URL" "$CUBINCACHE" build --explain -a 80,90 -o "$T/outB" k.cu 2> "$T/b.err"
grep -q "sm_90: hit$" "$T/b.err" || fail "$(cat "$T/b.err")"

note "the launcher: a second builder's nvcc -c is a remote hit with the same object"
CUBINCACHE_DIR="$T/cA" CUBINCACHE_REMOTE="$URL" "$CUBINCACHE" "$NVCC" -c k.cu -o "$T/kA.o" -arch=sm_90 ||
    fail "launcher A"
reset_nvcc_log
CUBINCACHE_DIR="$T/cC" CUBINCACHE_REMOTE="$URL" "$CUBINCACHE" "$NVCC" -c k.cu -o "$T/kC.o" -arch=sm_90 ||
    fail "launcher C"
[ "$(compiles)" = 0 ] || fail "the launcher compiled on a remote hit: $(cat "$T/nvcc.log")"
cmp "$T/kA.o" "$T/kC.o" || fail "the launcher's objects differ"

note "read-only: a miss compiles and writes nothing to Redis"
sed 's/sq(x\[i\]) \* a/sq(x[i]) + a/' k.cu > ro.cu
n0=$(rcli dbsize)
CUBINCACHE_DIR="$T/cD" expect_exit 0 "$CUBINCACHE" build -q --remote "$URL|read-only" -a 90 -o "$T/outD" ro.cu
[ "$(rcli dbsize)" = "$n0" ] || fail "a read-only client wrote to Redis"

# ---- poisoned values -------------------------------------------------------
new_key_for() { # KEYS_BEFORE_FILE SM: the objects key added since, holding sm_SM
    local k
    for k in $(rcli --scan --pattern 'cubincache:v1:objects:*' | sort | comm -13 "$1" -); do
        $H "$MAIN" get "$k" "$T/v" && $H unvalue "$T/v" "$T/e"
        [ "$(od -An -tu2 -j14 -N2 "$T/e" | tr -d ' ')" = "$2" ] && { echo "$k"; return; }
    done
}
rcli --scan --pattern 'cubincache:v1:objects:*' | sort > "$T/keys0"
sed 's/sq(x\[i\]) \* a/sq(x[i]) * a * 2.0f/' k.cu > p.cu
CUBINCACHE_DIR="$T/cA" expect_exit 0 "$CUBINCACHE" build -q --remote "$URL" -a 89,90 -o "$T/outP" p.cu
K90=$(new_key_for "$T/keys0" 90)
K89=$(new_key_for "$T/keys0" 89)
[ -n "$K90" ] && [ -n "$K89" ] || fail "the new entries are not in Redis"
$H "$MAIN" get "$K90" "$T/v90" && $H unvalue "$T/v90" "$T/e90"
$H "$MAIN" get "$K89" "$T/v89" && $H unvalue "$T/v89" "$T/e89"
poisoned() { # NAME WHY_NEEDLE: a fresh builder refuses the value, compiles sm_90, right bytes
    reset_nvcc_log
    CUBINCACHE_DIR="$T/c$1" timeout 60 "$CUBINCACHE" build --remote "$URL|read-only" -a 89,90 -o "$T/out$1" p.cu 2> "$T/$1.err" ||
        fail "$1: $(cat "$T/$1.err")"
    grep -q "ignored a bad entry (.*$2" "$T/$1.err" || fail "$1: $(cat "$T/$1.err")"
    [ "$(compiles)" = 1 ] || fail "$1: compiled $(compiles) times, expected sm_90 alone"
    cmp "$T/outP/p.sm_90.cubin" "$T/out$1/p.sm_90.cubin" || fail "$1: wrong sm_90 output"
    $H "$MAIN" set "$K90" "$T/v90" # the good value again
}
note "poison: a byte of the cubin flipped (the value re-wrapped, its sizes right)"
cp "$T/e90" "$T/bad" && printf '\xff' | dd of="$T/bad" bs=1 seek=200 conv=notrunc 2> /dev/null
$H value "$T/bad" "$T/badv" && $H "$MAIN" set "$K90" "$T/badv"
poisoned flip "content hash mismatch"
[ "$(counter "$T/cflip" remote_bad_values)" -ge 1 ] || fail "flip: the bad value is not counted"
note "poison: the sm_89 entry under the sm_90 key"
$H "$MAIN" set "$K90" "$T/v89"
poisoned arch "filed under the wrong key"
note "poison: the sm_89 entry relabelled sm_90 in its header (hash still right)"
cp "$T/e89" "$T/bad" && printf '\x5a' | dd of="$T/bad" bs=1 seek=14 conv=notrunc 2> /dev/null
head -c 32 "$T/e90" | tail -c 16 > "$T/key90" # the sm_90 key, as the header files it
dd if="$T/key90" of="$T/bad" bs=1 seek=16 conv=notrunc 2> /dev/null
$H value "$T/bad" "$T/badv" && $H "$MAIN" set "$K90" "$T/badv"
poisoned relabel "sm_89"
note "poison: a truncated value, and the wrong Redis type"
head -c 40 "$T/v90" > "$T/trunc" && $H "$MAIN" set "$K90" "$T/trunc"
poisoned trunc "truncated"
rcli del "$K90" > /dev/null && rcli lpush "$K90" x > /dev/null
poisoned wrongtype "WRONGTYPE"
rcli del "$K90" > /dev/null && $H "$MAIN" set "$K90" "$T/v90"
if command -v xxhsum > /dev/null; then
    note "trust: another kernel's valid sm_90 cubin under this key, its hash recomputed, is served"
    # (what any writer to the Redis can do: README, \"Sharing a cache across machines\")
    cp "$T/e90" "$T/forged" && tail -c +65 "$T/outA/k.sm_90.cubin" > /dev/null
    head -c 64 "$T/e90" > "$T/forged"
    xxhsum -H2 "$T/outA/k.sm_90.cubin" | cut -c1-32 | xxd -r -p > "$T/h" 2>/dev/null ||
        python3 -c "import sys,binascii; sys.stdout.buffer.write(binascii.unhexlify(sys.argv[1]))" \
            "$(xxhsum -H2 "$T/outA/k.sm_90.cubin" | cut -c1-32)" > "$T/h"
    dd if="$T/h" of="$T/forged" bs=1 seek=32 conv=notrunc 2> /dev/null
    python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<Q', int(sys.argv[1])))" \
        "$(stat -c %s "$T/outA/k.sm_90.cubin")" | dd of="$T/forged" bs=1 seek=48 conv=notrunc 2> /dev/null
    cat "$T/outA/k.sm_90.cubin" >> "$T/forged"
    $H value "$T/forged" "$T/forgedv" && $H "$MAIN" set "$K90" "$T/forgedv"
    CUBINCACHE_DIR="$T/cforged" expect_exit 0 "$CUBINCACHE" build -q --remote "$URL|read-only" -a 90 -o "$T/outF" p.cu
    cmp -s "$T/outA/k.sm_90.cubin" "$T/outF/p.sm_90.cubin" || fail "the forged entry was not what was served"
    $H "$MAIN" set "$K90" "$T/v90"
fi

# ---- faults, each bounded in time -------------------------------------------
note "fault: nothing listens (refused): one warning, three local builds, no time lost"
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
three_builds dead "redis://127.0.0.1:$dead"
[ "$(grep -c 'remote cache' "$T/dead.err")" = 1 ] || fail "dead: $(cat "$T/dead.err")"
grep -q "cannot connect" "$T/dead.err" || fail "dead: $(cat "$T/dead.err")"
[ "$(rtime "$T/cdead")" -lt 200 ] || fail "dead: $(rtime "$T/cdead") ms spent on the remote"
[ "$(counter "$T/cdead" remote_refusals)" = 1 ] && [ "$(counter "$T/cdead" remote_timeouts)" = 0 ] ||
    fail "dead: not counted as one refusal: $(CUBINCACHE_DIR="$T/cdead" "$CUBINCACHE" cache stats --json)"
grep -q "hint: start the server or correct the remote's address" "$T/dead.err" || fail "dead: no fix: $(cat "$T/dead.err")"

note "the skip marker is never written or read through a link planted in the cache"
mkdir -p "$T/clink/v1"
echo "someone else's file" > "$T/victim"
ln -s "$T/victim" "$T/clink/v1/remote-skip"
CUBINCACHE_DIR="$T/clink" timeout 60 "$CUBINCACHE" build -q -a 90 --remote "redis://127.0.0.1:$dead" \
    -o "$T/outlink" -n l1 "$(fresh_kernel 77)" || fail "a build with a planted marker link failed"
[ "$(cat "$T/victim")" = "someone else's file" ] || fail "the marker was written through the link"
[ -f "$T/clink/v1/remote-skip" ] && [ ! -L "$T/clink/v1/remote-skip" ] ||
    fail "the planted link is still the marker"

note "fault: a server that accepts and never answers: one 1 s timeout for the three builds"
start_fake "$T/silent" silent || fail "no silent server"
t0=$(date +%s%N)
three_builds silent "redis://127.0.0.1:$(cat "$T/silent.port")"
[ "$(grep -c 'remote cache' "$T/silent.err")" = 1 ] || fail "silent: $(cat "$T/silent.err")"
grep -q "no answer within the operation timeout" "$T/silent.err" || fail "silent: $(cat "$T/silent.err")"
ms=$(rtime "$T/csilent")
[ "$ms" -ge 900 ] && [ "$ms" -lt 1500 ] || fail "silent: $ms ms spent on the remote (one 1 s timeout expected)"
[ -f "$T/csilent/v1/remote-skip" ] || fail "silent: no skip marker"
[ "$(counter "$T/csilent" remote_timeouts)" = 1 ] || fail "silent: not counted as a timeout"
note "  a fourth build within the minute skips it at once (a note with -v)"
CUBINCACHE_DIR="$T/csilent" timeout 60 "$CUBINCACHE" build -v -a 90 --remote "redis://127.0.0.1:$(cat "$T/silent.port")" \
    -o "$T/outsilent" -n s4 "$(fresh_kernel 44)" 2> "$T/s4.err" || fail "$(cat "$T/s4.err")"
grep -q "skipped: it failed less than 60 s ago" "$T/s4.err" || fail "$(cat "$T/s4.err")"
grep -q "warning" "$T/s4.err" && fail "a second warning: $(cat "$T/s4.err")"
[ "$(rtime "$T/csilent")" = "$ms" ] || fail "the skipping build still spent time on the remote"

note "fault: a server that answers garbage"
start_fake "$T/garbage" garbage || fail "no garbage server"
three_builds garbage "redis://127.0.0.1:$(cat "$T/garbage.port")"
[ "$(grep -c 'remote cache' "$T/garbage.err")" = 1 ] || fail "garbage: $(cat "$T/garbage.err")"
[ "$(sm_of "$T/outgarbage/garbage1.sm_90.cubin")" = 90 ] || fail "garbage: no good output"

note "fault: a server that trickles a valid reply, a byte every 0.5 s: one 1 s deadline for all of it"
start_fake "$T/trickle" trickle || fail "no trickle server"
CUBINCACHE_DIR="$T/ctrickle" $H peak "$T/trickle.peak" "$CUBINCACHE" build -a 90 \
    --remote "redis://127.0.0.1:$(cat "$T/trickle.port")" -o "$T/outtrickle" -n tr1 "$(fresh_kernel 31)" 2> "$T/trickle.err"
read -r rc hwm maxrss wall < "$T/trickle.peak"
[ "$rc" = 0 ] || fail "trickle: the build exited $rc (124: held past 60 s): $(cat "$T/trickle.err")"
[ "$(grep -c 'remote cache' "$T/trickle.err")" = 1 ] || fail "trickle: $(cat "$T/trickle.err")"
grep -q "the reply was not complete within the operation timeout (1000 ms" "$T/trickle.err" || fail "trickle: $(cat "$T/trickle.err")"
ms=$(rtime "$T/ctrickle")
[ "$ms" -ge 900 ] && [ "$ms" -lt 1500 ] || fail "trickle: $ms ms spent on the remote (one 1 s deadline expected)"
[ "$(counter "$T/ctrickle" remote_timeouts)" = 1 ] || fail "trickle: not counted as a timeout"
note "  trickle: the build took $wall ms, $ms ms of it on the remote"

note "fault: a server that announces a 1 GiB value and sends it for ever: refused from its header"
start_fake "$T/huge" huge || fail "no huge server"
CUBINCACHE_DIR="$T/chuge" $H peak "$T/huge.peak" "$CUBINCACHE" build -a 90 \
    --remote "redis://127.0.0.1:$(cat "$T/huge.port")" -o "$T/outhuge" -n hg1 "$(fresh_kernel 32)" 2> "$T/huge.err"
read -r rc hwm maxrss wall < "$T/huge.peak"
[ "$rc" = 0 ] || fail "huge: the build exited $rc: $(cat "$T/huge.err")"
grep -q "a value of 1073741824 bytes, over max-value (268435456 bytes); not read" "$T/huge.err" || fail "huge: $(cat "$T/huge.err")"
# well under the 256 MiB cap: 64 MiB (under AddressSanitizer, whose shadow and quarantine are
# the process's too, under the cap itself: reading the value would take more than 1 GiB)
rss_max=65536
[ -n "${CBC_SANITIZED:-}" ] && rss_max=262144
[ "$hwm" -gt 2048 ] && [ "$hwm" -lt $rss_max ] ||
    fail "huge: the build's peak resident size was $hwm kB (the cap is 256 MiB)"
[ "$(sm_of "$T/outhuge/hg1.sm_90.cubin")" = 90 ] || fail "huge: no good output"
[ "$(counter "$T/chuge" remote_bad_values)" -ge 1 ] && [ "$(counter "$T/chuge" remote_timeouts)" = 0 ] ||
    fail "huge: not counted as a bad value: $(CUBINCACHE_DIR="$T/chuge" "$CUBINCACHE" cache stats --json)"
note "  huge: the build took $wall ms, peak resident $hwm kB"
# the same through an operator's verify: a process with no children, so the
# kernel's own peak (ru_maxrss) is exact
CUBINCACHE_DIR="$T/chuge" $H peak "$T/hugev.peak" "$CUBINCACHE" cache remote verify \
    --remote "redis://127.0.0.1:$(cat "$T/huge.port")|max-value=1MiB" > "$T/hugev.out" 2> "$T/hugev.err"
read -r rc hwm maxrss wall < "$T/hugev.peak"
[ "$rc" = 1 ] || fail "huge verify: exited $rc: $(cat "$T/hugev.err")"
grep -q "over max-value (1048576 bytes); not read" "$T/hugev.err" || fail "huge verify: $(cat "$T/hugev.err")"
[ "$wall" -lt 5000 ] && [ "$maxrss" -lt $rss_max ] || fail "huge verify: $maxrss kB at peak, $wall ms"
note "  huge, verify: $wall ms, peak resident $maxrss kB"

note "max-value: a real value over a small cap is a bad value, compiled here"
CUBINCACHE_DIR="$T/ccap" timeout 60 "$CUBINCACHE" build --remote "$URL|read-only|max-value=1KiB" -a 90 \
    -o "$T/outcap" k.cu 2> "$T/cap.err" || fail "cap: $(cat "$T/cap.err")"
grep -q "over max-value (1024 bytes)" "$T/cap.err" || fail "cap: $(cat "$T/cap.err")"
cmp "$T/outA/k.sm_90.cubin" "$T/outcap/k.sm_90.cubin" || fail "cap: wrong output"

note "rediss:// is refused, saying why and what to do"
expect_out 2 "Redis over TLS is not supported" "$CUBINCACHE" build --remote "rediss://127.0.0.1:6380" -a 90 -o "$T/outtls" k.cu
grep -q "hint: reach Redis over a trusted network or a tunnel" "$T/last.out" || fail "rediss: $(cat "$T/last.out")"

note "fault: a password missing, a wrong one (never printed), the right one"
REDIS_AUTH=s3cret start_redis "$T/auth" --requirepass s3cret || fail "no redis-server"
AUTHP=$PORT
three_builds noauth "redis://127.0.0.1:$AUTHP"
grep -q "NOAUTH" "$T/noauth.err" || fail "noauth: $(cat "$T/noauth.err")"
three_builds badpw "redis://:hunter2@127.0.0.1:$AUTHP"
grep -q "authentication failed" "$T/badpw.err" && grep -q "redis://:\*\*\*@127.0.0.1" "$T/badpw.err" ||
    fail "badpw: $(cat "$T/badpw.err")"
grep -q hunter2 "$T/badpw.err" && fail "the password was printed"
[ "$(counter "$T/cbadpw" remote_refusals)" = 1 ] || fail "badpw: not counted as a refusal"
three_builds goodpw "redis://:s3cret@127.0.0.1:$AUTHP"
[ -s "$T/goodpw.err" ] && fail "goodpw: $(cat "$T/goodpw.err")"
[ "$(redis-cli -p "$AUTHP" -a s3cret --no-auth-warning dbsize)" -gt 0 ] || fail "nothing was written with the right password"

note "fault: a full server (maxmemory, noeviction): writes refused once, builds fine"
redis-cli -p "$AUTHP" -a s3cret --no-auth-warning config set maxmemory-policy noeviction > /dev/null
redis-cli -p "$AUTHP" -a s3cret --no-auth-warning config set maxmemory 1 > /dev/null
three_builds full "redis://:s3cret@127.0.0.1:$AUTHP"
[ "$(grep -c 'refuses writes: OOM' "$T/full.err")" = 1 ] || fail "full: $(cat "$T/full.err")"
[ "$(counter "$T/cfull" remote_refusals)" = 1 ] || fail "full: not counted as a refusal"
[ "$(find "$T/cfull" -name '*.cbc' | wc -l)" = 3 ] || fail "full: the local cache lacks the entries"

note "16 builders at once on one Redis, each with its own cache: all right, all the same"
sed 's/sq(x\[i\]) \* a/sq(x[i]) * a - 1.0f/' "$T/src/k.cu" > "$T/src/many.cu"
for i in $(seq 16); do
    CUBINCACHE_DIR="$T/cm$i" timeout 120 "$CUBINCACHE" build -q --remote "$URL" -a 80,90 -o "$T/outm$i" many.cu &
    echo $! > "$T/m$i.job"
done
for i in $(seq 16); do wait "$(cat "$T/m$i.job")" || fail "concurrent builder $i failed"; done
for i in $(seq 2 16); do
    for t in 80 90; do cmp "$T/outm1/many.sm_$t.cubin" "$T/outm$i/many.sm_$t.cubin" || fail "builder $i: sm_$t differs"; done
done
reset_nvcc_log
CUBINCACHE_DIR="$T/cm17" expect_exit 0 "$CUBINCACHE" build -q --remote "$URL" -a 80,90 -o "$T/outm17" many.cu
[ "$(compiles)" = 0 ] || fail "a 17th builder compiled after the 16"
note "ok"
