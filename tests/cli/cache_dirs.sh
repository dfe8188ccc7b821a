#!/usr/bin/env bash
# cache_dirs.sh: a read-only or full cache degrades to compiling without
# caching, with a warning and a correct result; the cache subcommands.
. "$(dirname "$0")/lib.sh"
make_kernel "$T/src"
cd "$T/src"

note "cache directory that cannot be created: warning, correct build"
expect_out 0 "compiling without the cache" env CUBINCACHE_DIR=/proc/version/cache "$CUBINCACHE" build -a 90 -o "$T/o1" k.cu
[ "$(sm_of "$T/o1/k.sm_90.cubin")" = 90 ] || fail "build without cache"

if ! unshare -m true 2>/dev/null; then
    echo "unshare -m is not permitted here: cannot mount a read-only or full cache" >&2
    exit 77
fi

note "read-only cache: hits still served, misses compiled with a warning"
expect_exit 0 "$CUBINCACHE" build -a 90 -o "$T/o2" k.cu
cat > "$T/ro.sh" <<EOF2
set -e
mount --bind "$CUBINCACHE_DIR" "$CUBINCACHE_DIR"
mount -o remount,bind,ro "$CUBINCACHE_DIR"
"$CUBINCACHE" build -v -a 90 -o "$T/o3" k.cu > "$T/ro-hit.log" 2>&1
"$CUBINCACHE" build -a 86 -o "$T/o4" k.cu > "$T/ro-miss.log" 2>&1
EOF2
unshare -m sh "$T/ro.sh" || fail "read-only cache build failed: $(cat "$T"/ro-*.log)"
grep -q "1 hit" "$T/ro-hit.log" || fail "read-only cache: no hit: $(cat "$T/ro-hit.log")"
grep -q "cannot write to the cache" "$T/ro-miss.log" || fail "no warning: $(cat "$T/ro-miss.log")"
[ "$(sm_of "$T/o4/k.sm_86.cubin")" = 86 ] || fail "read-only cache miss output"

note "full cache disk: warning, correct build"
cat > "$T/full.sh" <<EOF2
set -e
mkdir -p "$T/full"
mount -t tmpfs -o size=16k tmpfs "$T/full"
CUBINCACHE_DIR="$T/full/c" "$CUBINCACHE" build -a 86,90 -o "$T/o5" k.cu > "$T/full.log" 2>&1
EOF2
unshare -m sh "$T/full.sh" || fail "full cache build failed: $(cat "$T/full.log")"
grep -q "cannot write to the cache" "$T/full.log" || fail "no warning: $(cat "$T/full.log")"
[ "$(sm_of "$T/o5/k.sm_86.cubin")" = 86 ] && [ "$(sm_of "$T/o5/k.sm_90.cubin")" = 90 ] || fail "full disk outputs"

note "cache stats, trim and clean"
expect_exit 0 "$CUBINCACHE" build -a 75,80,86 -o "$T/o6" k.cu
expect_out 0 '"entries":' "$CUBINCACHE" cache stats --json
odd="$T/a \"quoted\" \\ dir"
mkdir -p "$odd"
"$CUBINCACHE" cache --cache-dir "$odd" stats --json > "$T/odd.json" || fail "stats in '$odd'"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["cache_dir"] == sys.argv[2] + "/v1", d' \
    "$T/odd.json" "$odd" || fail "stats --json is not JSON for '$odd': $(cat "$T/odd.json")"
expect_out 0 "removed" "$CUBINCACHE" cache trim --max-size 1
[ "$(count_entries)" = 0 ] || fail "trim to 1 byte left entries"
expect_out 0 "limit 1 B" "$CUBINCACHE" cache trim
expect_exit 0 "$CUBINCACHE" cache trim --max-size 5G
expect_exit 0 "$CUBINCACHE" build -a 75 -o "$T/o7" k.cu
expect_out 0 "removed 1 entries" "$CUBINCACHE" cache clean
expect_out 2 "unknown action" "$CUBINCACHE" cache frob
expect_out 2 "expected a size" "$CUBINCACHE" cache trim --max-size lots
echo ok
