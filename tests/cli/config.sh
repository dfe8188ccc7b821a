#!/usr/bin/env bash
# config.sh: `cubincache config` (and --show-config): every setting with
# its value and where it came from; a bad value named with its source and
# exit 2; `cache trim --max-size` rewrites max_size and keeps the rest of
# the cache's config (it once dropped a configured remote).
. "$(dirname "$0")/lib.sh"
C=$CUBINCACHE
unset CUBINCACHE_MAXSIZE CUBINCACHE_UMASK CUBINCACHE_REMOTE

note "defaults, then the environment, then the cache's config"
expect_out 0 "(default) max_size = 5G" "$C" config
expect_out 0 "(CUBINCACHE_DIR) cache_dir = $CUBINCACHE_DIR" "$C" config
expect_out 0 "(CUBINCACHE_MAXSIZE) max_size = 7G" env CUBINCACHE_MAXSIZE=7G "$C" config max_size
mkdir -p "$CUBINCACHE_DIR/v1"
printf 'remote = redis://127.0.0.1:1|read-only\numask = 002\n' > "$CUBINCACHE_DIR/v1/config"
expect_out 0 "($CUBINCACHE_DIR/v1/config) remote = redis://127.0.0.1:1|read-only" "$C" --show-config
expect_out 0 "($CUBINCACHE_DIR/v1/config) umask = 002" "$C" config umask
expect_out 0 "(CUBINCACHE_UMASK) umask = 022" env CUBINCACHE_UMASK=022 "$C" config umask

note "a bad value: named with where it came from, exit 2"
expect_out 2 "max_size: expected a size" env CUBINCACHE_MAXSIZE=5X "$C" config
expect_out 2 "no setting named 'nope'" "$C" config nope
"$C" config --json > "$T/c.json" || fail "config --json"
python3 - "$T/c.json" <<'PY' || fail "config --json: $(cat "$T/c.json")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {r["name"]: r for r in rows}
assert by["remote"]["from"] == "config" and by["remote"]["env"] == "CUBINCACHE_REMOTE", by["remote"]
assert by["max_size"]["value"] == "5G" and by["max_size"]["from"] == "default"
assert by["libcuda"]["library"] and by["libcuda"]["test_only"]
PY

note "cache trim --max-size keeps the rest of the config"
expect_exit 0 "$C" cache trim --max-size 3G
grep -q '^remote = redis://127.0.0.1:1|read-only$' "$CUBINCACHE_DIR/v1/config" ||
    fail "trim --max-size dropped the remote: $(cat "$CUBINCACHE_DIR/v1/config")"
grep -q '^max_size = 3000000000$' "$CUBINCACHE_DIR/v1/config" || fail "$(cat "$CUBINCACHE_DIR/v1/config")"
expect_out 0 "($CUBINCACHE_DIR/v1/config) max_size = 3000000000" "$C" config max_size
