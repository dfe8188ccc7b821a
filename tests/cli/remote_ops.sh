#!/usr/bin/env bash
# remote_ops.sh: what a fleet's Redis needs beyond hits (issue 27), against
# a real redis-server on loopback (skipped, 77, only when it is not
# installed): reshare refills a Redis that lost its data from local hits and
# never rewrites a key it has; a remote hit refreshes the time to live
# (|expire), a read-only one does not; namespaces keep fleets apart; and
# the operator's `cache remote stats|push|verify` with their exit codes.
. "$(dirname "$0")/lib.sh"
command -v redis-server > /dev/null || { echo "redis-server is not installed" >&2; exit 77; }
. "$(dirname "$0")/remote_lib.sh"
trap 'for p in "$T"/*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done; rm -rf "$T"' EXIT
start_redis "$T/redis" || fail "no redis-server"
URL="redis://127.0.0.1:$PORT"
rcli() { redis-cli -p "$PORT" "$@"; }
make_counting_nvcc
export NVCC="$T/nvcc-count"
make_kernel "$T/src"
cd "$T/src"
build() { # CACHE SPEC [build args]: a quiet build of k.cu for sm_80 and sm_90
    local c=$1 spec=$2; shift 2
    CUBINCACHE_DIR="$T/$c" timeout 60 "$CUBINCACHE" build -q --remote "$spec" -a 80,90 -o "$T/out$c" "$@" k.cu ||
        fail "build in $c with $spec failed"
}

note "reshare: a Redis that lost its data is filled again by local hits"
build cA "$URL"
n=$(rcli dbsize)
[ "$n" -ge 3 ] || fail "the first build stored $n keys"
rcli flushall > /dev/null
build cA "$URL"
[ "$(rcli dbsize)" = 0 ] || fail "without reshare a local hit wrote to Redis: $(rcli keys "*")"
build cA "$URL|reshare"
[ "$(rcli dbsize)" = "$n" ] || fail "reshare wrote $(rcli dbsize) of the $n keys back"
[ "$(counter "$T/cA" remote_reshared)" = "$n" ] || fail "reshared counted $(counter "$T/cA" remote_reshared)"
reset_nvcc_log
build cB "$URL|read-only"
[ "$(compiles)" = 0 ] || fail "a builder after the reshare compiled"
cmp "$T/outcA/k.sm_90.cubin" "$T/outcB/k.sm_90.cubin" || fail "the reshared entry differs"
note "  reshare never rewrites a key the remote has"
key=$(rcli --scan --pattern 'cubincache:v1:objects:*' | head -1)
rcli set "$key" "held by someone else" > /dev/null
build cA "$URL|reshare"
[ "$(rcli get "$key")" = "held by someone else" ] || fail "reshare rewrote a key Redis had"
rcli del "$key" > /dev/null
build cA "$URL|reshare"
rcli get "$key" | head -c 4 | grep -q CBCR || fail "a deleted key was not reshared"
[ "$(counter "$T/cA" remote_reshared)" = "$((n + 1))" ] || fail "reshared counted $(counter "$T/cA" remote_reshared)"
note "  reshare to a read-only remote writes nothing"
rcli flushall > /dev/null
build cA "$URL|reshare|read-only"
[ "$(rcli dbsize)" = 0 ] || fail "a read-only reshare wrote"

note "expire: a remote hit refreshes the time to live; a read-only one does not"
rcli flushall > /dev/null
build cE "$URL|expire=1h"
key=$(rcli --scan --pattern 'cubincache:v1:objects:*' | head -1)
t=$(rcli ttl "$key")
[ "$t" -gt 3500 ] && [ "$t" -le 3600 ] || fail "stored with a ttl of $t"
for k in $(rcli --scan --pattern 'cubincache:v1:*'); do rcli expire "$k" 100 > /dev/null; done
build cE2 "$URL|expire=1h|read-only"
[ "$(rcli ttl "$key")" -le 100 ] || fail "a read-only hit refreshed the ttl"
build cE3 "$URL|expire=1h"
[ "$(rcli ttl "$key")" -gt 3500 ] || fail "a hit left the ttl at $(rcli ttl "$key")"
note "  with reshare and expire, a local hit refreshes it too"
for k in $(rcli --scan --pattern 'cubincache:v1:*'); do rcli expire "$k" 100 > /dev/null; done
build cE3 "$URL|expire=1h|reshare"
[ "$(rcli ttl "$key")" -gt 3500 ] || fail "a reshared local hit left the ttl at $(rcli ttl "$key")"

note "namespaces: keys under cubincache:v1:NAME:, fleets apart"
rcli flushall > /dev/null
build cN1 "$URL|namespace=team-a"
[ "$(rcli --scan --pattern 'cubincache:v1:team-a:objects:*' | wc -l)" = 2 ] || fail "keys: $(rcli keys '*')"
[ "$(rcli --scan --pattern 'cubincache:v1:objects:*' | wc -l)" = 0 ] || fail "a namespaced build wrote default keys"
reset_nvcc_log
build cN2 "$URL|namespace=team-b"
[ "$(compiles)" = 2 ] || fail "another namespace hit: $(compiles) compiles"
reset_nvcc_log
build cN3 "$URL|namespace=team-a|read-only"
[ "$(compiles)" = 0 ] || fail "the same namespace missed"
reset_nvcc_log
build cN4 "$URL|read-only"
[ "$(compiles)" = 2 ] || fail "no namespace hit a namespaced key"

note "cache remote stats: keys per namespace, bytes, the server"
rcli set cubincache:v1:weird x > /dev/null
expect_exit 0 "$CUBINCACHE" cache remote stats --remote "$URL" > "$T/rs.out"
grep -q "^server           redis [0-9]" "$T/rs.out" || fail "$(cat "$T/rs.out")"
grep -q "^  team-a  *2 entries, 2 records, 1 dependency lists, 0 leases" "$T/rs.out" || fail "$(cat "$T/rs.out")"
grep -q "^  team-b  *2 entries" "$T/rs.out" || fail "$(cat "$T/rs.out")"
grep -q "^  1 keys cubincache does not write" "$T/rs.out" || fail "$(cat "$T/rs.out")"
"$CUBINCACHE" cache remote stats --json --remote "$URL" > "$T/rs.json"
python3 - "$T/rs.json" "$PORT" <<'PY' || fail "stats --json: $(cat "$T/rs.json")"
import json, subprocess, sys
j = json.load(open(sys.argv[1]))
keys = subprocess.run(["redis-cli", "-p", sys.argv[2], "--scan", "--pattern", "cubincache:v1:*"],
                      capture_output=True, text=True).stdout.split()
size = sum(int(subprocess.run(["redis-cli", "-p", sys.argv[2], "strlen", k], capture_output=True,
                              text=True).stdout) for k in keys)
assert j["keys"] == len(keys) == 11, (j, len(keys))
assert j["bytes"] == size, (j["bytes"], size)
assert j["complete"] is True and j["foreign"] == 1
ns = {n["namespace"]: n for n in j["namespaces"]}
assert set(ns) == {"team-a", "team-b"}, ns
assert ns["team-a"]["objects"] == 2 and ns["team-a"]["deps"] == 1
PY
note "  --max-keys bounds it, and says so"
"$CUBINCACHE" cache remote stats --json --max-keys 3 --remote "$URL" > "$T/rs3.json" 2> "$T/rs3.err"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["keys"]==3 and not j["complete"], j' "$T/rs3.json" ||
    fail "$(cat "$T/rs3.json")"
grep -q "stopped before the end of the key space" "$T/rs3.err" || fail "$(cat "$T/rs3.err")"

note "cache remote push: a Redis refilled from a local cache; then all hits"
rcli flushall > /dev/null
expect_exit 0 "$CUBINCACHE" cache --cache-dir "$T/cA" remote push --remote "$URL" > "$T/push.out"
grep -q "^pushed $n entries and records" "$T/push.out" || fail "$(cat "$T/push.out")"
[ "$(rcli dbsize)" = "$n" ] || fail "push stored $(rcli dbsize) of $n"
[ "$(rcli --scan --pattern 'cubincache:v1:tools:*' | wc -l)" = 0 ] || fail "push sent a toolchain identity"
reset_nvcc_log
build cP "$URL|read-only"
[ "$(compiles)" = 0 ] || fail "a builder after the push compiled"
note "  a damaged local entry is not pushed"
f=$(find "$T/cA/v1/objects" -name '*.cbc' | head -1)
printf '\xff' | dd of="$f" bs=1 seek=200 conv=notrunc 2> /dev/null
rcli flushall > /dev/null
expect_exit 0 "$CUBINCACHE" cache --cache-dir "$T/cA" remote push --remote "$URL" > "$T/push2.out" 2> "$T/push2.err"
grep -q "content hash mismatch" "$T/push2.err" || fail "$(cat "$T/push2.err")"
[ "$(rcli dbsize)" = "$((n - 1))" ] || fail "a damaged entry was pushed"
expect_out 2 "read-only" "$CUBINCACHE" cache --cache-dir "$T/cA" remote push --remote "$URL|read-only"
expect_out 2 "no remote cache is named" env -u CUBINCACHE_REMOTE "$CUBINCACHE" cache --cache-dir "$T/cA" remote push

note "cache remote verify: every value checked as a local file is; --delete"
rcli flushall > /dev/null
expect_exit 0 "$CUBINCACHE" cache --cache-dir "$T/cB" remote push --remote "$URL" > /dev/null
expect_exit 0 "$CUBINCACHE" cache remote verify --remote "$URL" > "$T/v.out"
grep -q "^verified $n values in $URL: 0 bad$" "$T/v.out" || fail "$(cat "$T/v.out")"
good=$(rcli --scan --pattern 'cubincache:v1:objects:*' | head -1)
$H "$PORT" get "$good" "$T/gv" && $H unvalue "$T/gv" "$T/ge"
printf '\xff' | dd of="$T/ge" bs=1 seek=300 conv=notrunc 2> /dev/null
$H value "$T/ge" "$T/bv" && $H "$PORT" set "$good" "$T/bv"     # a flipped byte, re-wrapped
rcli set cubincache:v1:deps:00000000000000000000000000000000 garbage > /dev/null
rcli lpush cubincache:v1:direct:11111111111111111111111111111111 x > /dev/null
rcli set cubincache:v1:lease:22222222222222222222222222222222 token > /dev/null
rcli set cubincache:v1:notours x > /dev/null
rcli set cubincache:v1:other-ns:objects:33333333333333333333333333333333 junk > /dev/null
expect_exit 1 "$CUBINCACHE" cache remote verify --remote "$URL" > "$T/v.out" 2> "$T/v.err"
grep -q "^verified $((n + 2)) values in $URL: 3 bad; 1 key cubincache does not write, left alone$" "$T/v.out" ||
    fail "$(cat "$T/v.out") $(cat "$T/v.err")"
grep -q "$good.*content hash mismatch" "$T/v.err" || fail "$(cat "$T/v.err")"
grep -q "deps:00000000000000000000000000000000.*bad magic" "$T/v.err" || fail "$(cat "$T/v.err")"
grep -q "direct:11111111111111111111111111111111.*WRONGTYPE" "$T/v.err" || fail "$(cat "$T/v.err")"
expect_exit 2 "$CUBINCACHE" cache remote verify --delete --remote "$URL|read-only" 2> /dev/null
expect_exit 1 "$CUBINCACHE" cache remote verify --delete --remote "$URL" > "$T/v.out" 2> /dev/null
grep -q "3 bad, deleted" "$T/v.out" || fail "$(cat "$T/v.out")"
[ -z "$(rcli exists "$good" | grep 1)" ] || fail "the bad value is still there"
[ "$(rcli exists cubincache:v1:lease:22222222222222222222222222222222)" = 1 ] || fail "verify deleted a lease"
[ "$(rcli exists cubincache:v1:notours)" = 1 ] || fail "verify deleted a key that is not its own"
[ "$(rcli exists cubincache:v1:other-ns:objects:33333333333333333333333333333333)" = 1 ] ||
    fail "verify touched another namespace"
rcli del cubincache:v1:notours > /dev/null
expect_exit 0 "$CUBINCACHE" cache remote verify --remote "$URL" > "$T/v.out"
note "  a dead remote: exit 4, naming it"
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
expect_out 4 "remote cache redis://127.0.0.1:$dead: list: cannot connect" "$CUBINCACHE" cache remote verify --remote "redis://127.0.0.1:$dead"
expect_out 2 "'remote' needs stats, push or verify" "$CUBINCACHE" cache remote
expect_out 2 "--delete goes with 'remote verify'" "$CUBINCACHE" cache remote stats --delete --remote "$URL"
expect_out 2 "go with 'remote'" "$CUBINCACHE" cache stats --remote "$URL"
note "ok"
