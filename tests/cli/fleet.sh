#!/usr/bin/env bash
# fleet.sh: builders sharing one Redis compile each set of units once. A
# builder that finds another holding the lease on the targets it is about
# to compile waits for that builder's results and uses them (no nvcc of its
# own), its bundle byte for byte the holder's; a holder whose compile
# fails releases the lease, and the waiter compiles (and fails) itself;
# builders of other targets never wait on each other.
. "$(dirname "$0")/lib.sh"
command -v redis-server > /dev/null || { echo "redis-server is not installed" >&2; exit 77; }
. "$(dirname "$0")/remote_lib.sh"
trap 'for p in "$T"/*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done; rm -rf "$T"' EXIT
start_redis "$T/redis" || fail "no redis-server"
URL="redis://127.0.0.1:$PORT"
rcli() { redis-cli -p "$PORT" "$@"; }
# an nvcc slow enough that the second builder starts while the first compiles
cat > "$T/nvcc-slow" <<EOF2
#!/bin/sh
case "\$*" in -cubin*) echo "\$*" >> "$T/nvcc.log"; sleep 3 ;; esac
exec "$NVCC_REAL" "\$@"
EOF2
chmod +x "$T/nvcc-slow"
touch -d '1 hour ago' "$T/nvcc-slow"
export NVCC="$T/nvcc-slow"
: > "$T/nvcc.log"
make_kernel "$T/src"
cd "$T/src"
touch -d '1 hour ago' k.cu kh.cuh
b() { # CACHE OUT [args]: a build of k.cu for sm_80 and sm_90 through the Redis
    local c=$1 o=$2; shift 2
    CUBINCACHE_DIR="$T/$c" timeout 120 "$CUBINCACHE" build --remote "$URL" -a 80,90 -o "$T/$o" k.cu "$@"
}
wait_lease() { # until a builder holds a lease
    for i in $(seq 100); do [ -n "$(rcli --scan --pattern '*lease*')" ] && return 0; sleep 0.1; done
    fail "no builder took a lease: $(rcli keys '*')"
}

note "two cold builders, one compile: the second waits for the first's results"
b c1 o1 > "$T/b1.out" 2>&1 &
p1=$!
wait_lease
b c2 o2 -v > "$T/b2.out" 2>&1 || fail "builder 2: $(cat "$T/b2.out")"
wait "$p1" || fail "builder 1: $(cat "$T/b1.out")"
grep -q "another builder is compiling these targets" "$T/b2.out" || fail "builder 2 did not wait: $(cat "$T/b2.out"); compiles: $(cat "$T/nvcc.log")"
n=$(grep -c -- '-cubin' "$T/nvcc.log")
[ "$n" = 2 ] || fail "two builders ran $n compiles for 2 targets: $(cat "$T/nvcc.log")"
for f in "$T"/o1/*; do cmp "$f" "$T/o2/$(basename "$f")" || fail "builder 2's $(basename "$f") differs"; done
[ -z "$(rcli --scan --pattern '*lease*')" ] || fail "a lease outlived the builds"

note "a holder whose compile fails releases the lease; the waiter compiles and fails on its own"
: > "$T/nvcc.log"
echo 'this is not CUDA' >> k.cu
touch -d '1 hour ago' k.cu
b c3 o3 > "$T/b3.out" 2>&1 &
p3=$!
wait_lease
expect_exit 1 b c4 o4
wait "$p3" && fail "builder 3 built a broken source"
n=$(grep -c -- '-cubin' "$T/nvcc.log")
[ "$n" -ge 3 ] || fail "the waiter did not compile after the holder failed: $n compiles"
[ -z "$(rcli --scan --pattern '*lease*')" ] || fail "a failed holder kept its lease"

note "other targets: no wait"
sed -i '$d' k.cu
touch -d '1 hour ago' k.cu
b c5 o5 -- -DV=5 > "$T/b5.out" 2>&1 &
p5=$!
wait_lease
CUBINCACHE_DIR="$T/c6" timeout 120 "$CUBINCACHE" build --remote "$URL" -a 86 -o "$T/o6" k.cu -- -DV=5 > "$T/b6.out" 2>&1 ||
    fail "builder 6: $(cat "$T/b6.out")"
wait "$p5" || fail "builder 5: $(cat "$T/b5.out")"
grep -q "another builder" "$T/b6.out" && fail "a build of other targets waited: $(cat "$T/b6.out")"
echo ok
