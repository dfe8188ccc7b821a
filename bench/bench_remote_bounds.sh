#!/usr/bin/env bash
# bench_remote_bounds.sh: the remote of issue 27 on loopback. Rows:
#  - a remote hit of `cubincache build` (1 source, 1 target; the local
#    cache emptied of entries and records before each run) through Redis
#    and through HTTP (nginx with WebDAV PUT, started here), against
#    ccache 4.14's remote hit (`ccache nvcc -c`, remote only) on the same
#    two servers;
#  - one kernel compiled with no remote, with a remote that trickles a
#    valid reply a byte every 0.5 s, and with one that announces a 1 GiB
#    value and sends it for ever, run alternately: what each costs a build
#    (target: the operation timeout, 1 s, and nothing measurable);
#  - the peak resident size of the build and of `cache remote verify`
#    against the 1 GiB server (target: well under max-value, 256 MiB).
. "$(dirname "$0")/bench_lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/cli/remote_lib.sh"
command -v redis-server > /dev/null || { echo "redis-server is not installed" >&2; exit 77; }
command -v nginx > /dev/null || [ -x /usr/sbin/nginx ] || { echo "nginx is not installed" >&2; exit 77; }
trap 'for p in "$B"/*.pid; do kill "$(cat "$p")" 2>/dev/null; done; rm -rf "$B"' EXIT
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY
start_redis "$B/redis"
URL="redis://127.0.0.1:$PORT"
start_nginx "$B/ngx"
HURL="http://127.0.0.1:$HPORT/cache/"
kernel "$B/src" k
cd "$B/src"

# remote hits, Redis and HTTP
for kind in redis http; do
    spec=$URL
    [ $kind = http ] && spec=$HURL
    C="$B/cache-$kind"
    CUBINCACHE_DIR="$B/writer-$kind" "$CUBINCACHE" build -q -a 90 --remote "$spec" -o "$B/w" k.cu # remote warm
    CUBINCACHE_DIR="$C" "$CUBINCACHE" build -q -a 90 --remote "$spec" -o "$B/o" k.cu # the toolchain's identity
    CUBINCACHE_DIR="$C" measure_prep "cubincache_remote_hit_$kind" 50 \
        "rm -rf $C/v1/objects $C/v1/direct $C/v1/deps" "$CUBINCACHE" build -q -a 90 --remote "$spec" -o "$B/o" k.cu
    CUBINCACHE_DIR="$C" "$CUBINCACHE" cache stats | grep -E "^  remote (hits|misses|errors)" >&2
done
CCACHE=${CCACHE:-$(command -v ccache || true)}
if [ -n "$CCACHE" ] && "$CCACHE" --version | grep -q http-storage; then
    for kind in redis http; do
        spec=$URL
        [ $kind = http ] && spec="http://127.0.0.1:$HPORT/ccache/"
        export CCACHE_DIR="$B/ccache-$kind" CCACHE_REMOTE_STORAGE="$spec" CCACHE_REMOTE_ONLY=true
        "$CCACHE" "$NVCC_REAL" -c -arch=sm_90 -o "$B/k.o" k.cu
        "$CCACHE" -z > /dev/null
        measure "ccache_remote_hit_$kind" 50 5 "$CCACHE" "$NVCC_REAL" -c -arch=sm_90 -o "$B/k.o" k.cu
        "$CCACHE" -s -v | sed -n '/Remote storage/,/Writes/p' >&2
    done
    unset CCACHE_DIR CCACHE_REMOTE_STORAGE CCACHE_REMOTE_ONLY
fi

# what a trickling and a 1 GiB remote cost one compile
start_fake "$B/trickle" trickle
start_fake "$B/huge" huge
TR="redis://127.0.0.1:$(cat "$B/trickle.port")"
HG="redis://127.0.0.1:$(cat "$B/huge.port")"
CB="$B/cache-bad"
CUBINCACHE_DIR="$CB" "$CUBINCACHE" build -q -a 90 --remote none -o "$B/ob" k.cu
clear="rm -rf $CB/v1/objects $CB/v1/direct $CB/v1/deps $CB/v1/remote-skip"
one="$CUBINCACHE build -q -a 90 -o $B/ob k.cu --remote"
CUBINCACHE_DIR="$CB" python3 "$here/alternate.py" 7 \
    "build_1_kernel_no_remote=$one none" --prep "build_1_kernel_no_remote=$clear" \
    "build_1_kernel_trickle_remote=$one $TR" --prep "build_1_kernel_trickle_remote=$clear" \
    "build_1_kernel_huge_remote=$one $HG" --prep "build_1_kernel_huge_remote=$clear"

# the peak resident size against the 1 GiB value (VmHWM of cubincache
# itself; verify has no children, so its ru_maxrss is exact)
$clear
CUBINCACHE_DIR="$CB" $H peak "$B/p1" "$CUBINCACHE" build -q -a 90 --remote "$HG" -o "$B/ob" k.cu 2> /dev/null
CUBINCACHE_DIR="$CB" $H peak "$B/p2" "$CUBINCACHE" cache remote verify --remote "$HG" > /dev/null 2>&1
read -r rc1 hwm1 max1 wall1 < "$B/p1"
read -r rc2 hwm2 max2 wall2 < "$B/p2"
printf '{"bench":"huge_value_peak_rss","build_kb":%d,"build_ms":%d,"verify_kb":%d,"verify_ms":%d,"cap_kb":%d}\n' \
    "$hwm1" "$wall1" "$max2" "$wall2" $((256 * 1024))
