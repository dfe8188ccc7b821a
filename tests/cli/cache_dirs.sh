#!/usr/bin/env bash
# cache_dirs.sh: a cache directory that cannot be created degrades to
# compiling without caching, with a warning and a correct result; the cache
# subcommands. (Read-only and full caches: tests/fault/mounts.sh.)
. "$(dirname "$0")/lib.sh"
make_kernel "$T/src"
cd "$T/src"

note "cache directory that cannot be created: warning, correct build"
expect_out 0 "compiling without the cache" env CUBINCACHE_DIR=/proc/version/cache "$CUBINCACHE" build -a 90 -o "$T/o1" k.cu
[ "$(sm_of "$T/o1/k.sm_90.cubin")" = 90 ] || fail "build without cache"

# A read-only or full cache needs mounts: tests/fault/mounts.sh (root)
# covers those; everything here runs anywhere.

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
