#!/usr/bin/env bash
# bench_remote.sh: the Redis second-level cache on loopback (redis-server
# started here, in the temp dir). Rows:
#  - a remote hit of `cubincache build` (1 source, 1 target; the local
#    cache emptied of entries and records before each run, the toolchain's
#    identity kept), against a local hit and against ccache 4.14's remote
#    hit (`ccache nvcc -c`, CCACHE_REMOTE_STORAGE=redis://, remote only);
#  - a cold runner: 20 kernels x 4 targets built one `cubincache build`
#    after another, from a warm Redis, against compiling them (no cache);
#  - 20 kernels (1 target, compiled: the local cache empty) with a dead and
#    with a silent remote against none, run alternately: what a bad remote
#    adds to a whole build.
# Targets (issue 15): remote hit <= 0.5x ccache's; cold runner <= 5% of the
# compile; a dead or silent Redis adds <= 1 s to the 20-kernel build.
. "$(dirname "$0")/bench_lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v redis-server > /dev/null || { echo "redis-server is not installed" >&2; exit 77; }
trap 'kill $(cat "$B"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$B"' EXIT
for try in 1 2 3 4 5; do
    PORT=$((20000 + RANDOM % 40000))
    redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$B" --daemonize yes \
        --pidfile "$B/redis.pid" --logfile "$B/redis.log" > /dev/null 2>&1 || continue
    for i in $(seq 50); do redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break 2; sleep 0.1; done
done
redis-cli -p "$PORT" ping | grep -q PONG || { echo "redis-server did not start" >&2; exit 1; }
URL="redis://127.0.0.1:$PORT"
kernel "$B/src" k
cd "$B/src"

# one source, one target
"$CUBINCACHE" build -q -a 90 --remote "$URL" -o "$B/o1" k.cu # local and Redis warm
CR="$B/cache-remote"
CUBINCACHE_DIR="$CR" "$CUBINCACHE" build -q -a 90 --remote "$URL" -o "$B/or" k.cu
clear_local="rm -rf $CR/v1/objects $CR/v1/direct $CR/v1/deps"
CUBINCACHE_DIR="$CR" measure_prep cubincache_remote_hit_1_target 100 "$clear_local" \
    "$CUBINCACHE" build -q -a 90 --remote "$URL" -o "$B/or" k.cu
CUBINCACHE_DIR="$CR" "$CUBINCACHE" cache stats | grep -E "^  remote (hits|misses|errors)" >&2
measure cubincache_local_hit_1_target 100 10 "$CUBINCACHE" build -q -a 90 --remote "$URL" -o "$B/o1" k.cu
CCACHE=${CCACHE:-$(command -v ccache || true)}
if [ -n "$CCACHE" ] && "$CCACHE" --version | grep -q redis-storage; then
    export CCACHE_DIR="$B/ccache" CCACHE_REMOTE_STORAGE="$URL" CCACHE_REMOTE_ONLY=true
    "$CCACHE" "$NVCC_REAL" -c -arch=sm_90 -o "$B/k.o" k.cu
    "$CCACHE" -z > /dev/null
    measure ccache_remote_hit_1_target 100 10 "$CCACHE" "$NVCC_REAL" -c -arch=sm_90 -o "$B/k.o" k.cu
    "$CCACHE" -s -v | grep -iE "remote storage|hits|misses" | head -6 >&2
    unset CCACHE_REMOTE_STORAGE CCACHE_REMOTE_ONLY
fi

# a cold runner: 20 kernels x 4 targets
for i in $(seq -w 1 20); do kernel "$B/many" "k$i"; done
cat > "$B/loop.sh" <<LOOP
#!/bin/sh
# loop.sh ARCH REMOTE: the 20 kernels, one build after another
cd "$B/many" || exit 1
for i in \$(seq -w 1 20); do
    "$CUBINCACHE" build -q -a "\$1" --remote "\$2" -o "$B/many-out/k\$i" "k\$i.cu" || exit 1
done
LOOP
chmod +x "$B/loop.sh"
CUBINCACHE_DIR="$B/cache-writer" "$B/loop.sh" 75,80,89,90 "$URL" # Redis warm
CC="$B/cache-cold"
CUBINCACHE_DIR="$CC" "$B/loop.sh" 75,80,89,90 none # the toolchain's identity, cached
CUBINCACHE_DIR="$CC" measure_prep cold_runner_20_kernels_x_4_targets_warm_redis 5 \
    "rm -rf $CC/v1/objects $CC/v1/direct $CC/v1/deps" "$B/loop.sh" 75,80,89,90 "$URL"
CUBINCACHE_DISABLE=1 measure compile_20_kernels_x_4_targets 2 0 "$B/loop.sh" 75,80,89,90 none

# a bad remote: dead (nothing listens) and silent (accepts, never answers)
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$here/../tests/cli/redis_helpers.py" fake "$B/silent.port" silent & echo $! > "$B/silent.pid"
for i in $(seq 50); do [ -f "$B/silent.port" ] && break; sleep 0.1; done
CB="$B/cache-bad"
CUBINCACHE_DIR="$CB" "$B/loop.sh" 90 none
clear="rm -rf $CB/v1/objects $CB/v1/direct $CB/v1/deps $CB/v1/remote-skip"
CUBINCACHE_DIR="$CB" python3 "$here/alternate.py" 5 \
    "build_20_kernels_no_remote=$B/loop.sh 90 none" --prep "build_20_kernels_no_remote=$clear" \
    "build_20_kernels_dead_remote=$B/loop.sh 90 redis://127.0.0.1:$dead" \
    --prep "build_20_kernels_dead_remote=$clear" \
    "build_20_kernels_silent_remote=$B/loop.sh 90 redis://127.0.0.1:$(cat "$B/silent.port")" \
    --prep "build_20_kernels_silent_remote=$clear"
