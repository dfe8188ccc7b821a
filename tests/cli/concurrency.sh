#!/usr/bin/env bash
# concurrency.sh: many builders on one cache; kill -9 of a writer inside
# the publish window; a corrupted entry is detected, dropped and rebuilt;
# builders side by side each run their own CPUs' worth of nvcc, and at
# most one per CPU in total with the opt-in shared_jobs=cpus, unless -j
# says otherwise.
. "$(dirname "$0")/lib.sh"
make_kernel "$T/src"
cd "$T/src"

note "8 builders of the same key at once: identical, valid outputs"
pids=()
for i in 1 2 3 4 5 6 7 8; do
    "$CUBINCACHE" build -q -a 86,90 -o "$T/out$i" k.cu > "$T/b$i.log" 2>&1 &
    pids+=($!)
done
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || fail "builder $((i + 1)) failed: $(cat "$T/b$((i + 1)).log")"
done
for i in 2 3 4 5 6 7 8; do
    cmp -s "$T/out1/k.sm_90.cubin" "$T/out$i/k.sm_90.cubin" || fail "builder $i sm_90 differs"
    cmp -s "$T/out1/k.sm_86.cubin" "$T/out$i/k.sm_86.cubin" || fail "builder $i sm_86 differs"
    cmp -s "$T/out1/k.manifest.json" "$T/out$i/k.manifest.json" || \
        diff <(grep -v '"cwd"' "$T/out1/k.manifest.json") <(grep -v '"cwd"' "$T/out$i/k.manifest.json") >/dev/null || \
        fail "builder $i manifest differs"
done
[ "$(sm_of "$T/out1/k.sm_90.cubin")" = 90 ] && [ "$(sm_of "$T/out1/k.sm_86.cubin")" = 86 ] || fail "ELF SM"
expect_out 0 "0 bad" "$CUBINCACHE" cache verify

note "kill -9 inside the publish window: no partial entry is ever served"
rm -rf "$CUBINCACHE_DIR"
CUBINCACHE_TEST_PUBLISH_DELAY_MS=5000 "$CUBINCACHE" build -q -a 89 -o "$T/killed" k.cu &
victim=$!
for _ in $(seq 1 200); do
    tmp=$(find "$CUBINCACHE_DIR/v1/objects" -name '.*' -type f 2>/dev/null | head -1)
    [ -n "$tmp" ] && break
    sleep 0.05
done
[ -n "$tmp" ] || fail "the writer never reached the publish window"
kill -9 $victim
wait $victim 2>/dev/null
[ -s "$tmp" ] || fail "the temporary should hold the unpublished bytes"
[ "$(count_entries)" = 0 ] || fail "a killed writer published an entry"
[ ! -e "$T/killed/k.manifest.json" ] || fail "a killed build wrote a manifest"
expect_out 0 "1 miss" "$CUBINCACHE" build -v -a 89 -o "$T/killed" k.cu
[ "$(sm_of "$T/killed/k.sm_89.cubin")" = 89 ] || fail "rebuild after kill"
expect_out 0 "0 bad" "$CUBINCACHE" cache verify
touch -d '2 hours ago' "$tmp"
"$CUBINCACHE" cache trim > /dev/null
[ ! -e "$tmp" ] || fail "trim should sweep a writer's temporary older than an hour"

note "a corrupted entry is detected, dropped, reported and rebuilt"
entry=$(find "$CUBINCACHE_DIR/v1/objects" -name '*.cbc' | head -1)
printf '\x00\x01\x02' | dd of="$entry" bs=1 seek=200 conv=notrunc status=none
expect_out 0 "was bad (content hash mismatch); dropped and rebuilt" "$CUBINCACHE" build -a 89 -o "$T/killed" k.cu
[ "$(sm_of "$T/killed/k.sm_89.cubin")" = 89 ] || fail "rebuild after corruption"
expect_out 0 "0 bad" "$CUBINCACHE" cache verify
expect_out 0 "bad entries      1 dropped" "$CUBINCACHE" cache stats

note "cache verify exits 1 when it had to drop something"
entry=$(find "$CUBINCACHE_DIR/v1/objects" -name '*.cbc' | head -1)
printf 'XXXX' | dd of="$entry" bs=1 seek=16 conv=notrunc status=none
expect_out 1 "1 bad" "$CUBINCACHE" cache verify
[ ! -e "$entry" ] || fail "verify kept an entry filed under the wrong key"

note "... and when it found a file that is not the cache's, which it leaves alone"
mkdir -p "$CUBINCACHE_DIR/v1/objects/00"
printf 'not ours' > "$CUBINCACHE_DIR/v1/objects/00/000000000000000000000000000000.cbc"
expect_out 1 "1 file that is not the cache's, left alone" "$CUBINCACHE" cache verify
[ -e "$CUBINCACHE_DIR/v1/objects/00/000000000000000000000000000000.cbc" ] || fail "verify deleted a foreign file"
rm "$CUBINCACHE_DIR/v1/objects/00/000000000000000000000000000000.cbc"

note "4 builders of 4 targets side by side: each its own CPUs' worth, unless shared_jobs says otherwise"
cat > "$T/nvcc-par" <<EOF2
#!/bin/bash
# counts the compiles running at once (not the toolchain's identification):
# one directory each while it runs
case " \$* " in *cubincache-probe*) exec "$NVCC_REAL" "\$@" ;; *" -cubin "*) ;; *) exec "$NVCC_REAL" "\$@" ;; esac
d=\$(mktemp -d "$T/running/r.XXXXXX")
n=\$(ls "$T/running" | wc -l)
echo "\$n" >> "$T/par.log"
"$NVCC_REAL" "\$@"; rc=\$?
rmdir "\$d"
exit \$rc
EOF2
chmod +x "$T/nvcc-par"
par_run() { # ARGS for every build: the most nvcc processes seen at once
    rm -rf "$T/running" "$T/par.log" "$CUBINCACHE_DIR"
    mkdir -p "$T/running"
    local pids=()
    for i in 1 2 3 4; do
        sed "s/scale/scale$i/" k.cu > "p$i.cu"
        NVCC="$T/nvcc-par" "$CUBINCACHE" build -q "$@" -a 75,80,86,90 -o "$T/par$i" "p$i.cu" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || fail "a parallel builder failed"; done
    sort -n "$T/par.log" | tail -1
}
cpus=$(nproc)
most=$(par_run)
[ "$most" -gt "$cpus" ] || fail "only $most nvcc ran at once for 4 builders: do builds wait on each other?"
most_shared=$(CUBINCACHE_SHARED_JOBS=cpus par_run)
[ "$most_shared" -le "$cpus" ] || fail "$most_shared nvcc ran at once on $cpus CPUs with shared_jobs=cpus"
most_j=$(CUBINCACHE_SHARED_JOBS=cpus par_run -j 4)
[ "$most_j" -gt "$cpus" ] || fail "with -j 4 each, only $most_j ran at once: -j should bypass shared_jobs"
note "  (at most $most at once; $most_shared with shared_jobs=cpus; $most_j with -j 4 per builder)"
echo ok
