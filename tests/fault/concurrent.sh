#!/usr/bin/env bash
# concurrent.sh: 16 builders (four bundles, overlapping targets, one
# shared cache) against `cache trim` running in a loop that keeps evicting
# their entries. Every build succeeds with outputs whose ELF says the right
# SM, every bundle checks OK, and the cache verifies clean afterwards.
. "$(dirname "$0")/../cli/lib.sh"
C="$CUBINCACHE"
make_kernel "$T/src"
cd "$T/src"
expect_exit 0 "$C" build -q -a 80,86,89,90 -o "$T/warm" k.cu
( while [ ! -e "$T/stop" ]; do "$C" cache trim --max-size 20k > /dev/null 2>&1 || touch "$T/trim-failed"; done ) &
trimmer=$!
pids=()
for i in $(seq 1 16); do
    case $((i % 4)) in
        0) arch=80,86 ;; 1) arch=86,89 ;; 2) arch=89,90 ;; 3) arch=80,90 ;;
    esac
    ( for round in 1 2 3; do
          flags=(); [ $(((i + round) % 3)) = 0 ] && flags=(-- -O2) # new keys: misses under trim
          "$C" build -q -j 1 -a "$arch" -o "$T/out$((i % 4))" -n b k.cu "${flags[@]}" \
              >> "$T/b$i.log" 2>&1 || echo "builder $i ($arch) exited $?" >> "$T/failed"
      done
      # the last build of each bundle is without flags, so check compares like with like
      "$C" build -q -j 1 -a "$arch" -o "$T/out$((i % 4))" -n b k.cu >> "$T/b$i.log" 2>&1 ||
          echo "builder $i ($arch) exited $?" >> "$T/failed" ) &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
touch "$T/stop"
wait $trimmer
# builders of one bundle may finish in any order: build each once more, alone
for o in 0 1 2 3; do
    case $o in 0) arch=80,86 ;; 1) arch=86,89 ;; 2) arch=89,90 ;; 3) arch=80,90 ;; esac
    expect_exit 0 "$C" build -q -a "$arch" -o "$T/out$o" -n b k.cu
done
[ ! -e "$T/failed" ] || fail "$(cat "$T/failed"): $(cat "$T"/b*.log)"
[ ! -e "$T/trim-failed" ] || fail "cache trim failed while builders ran"
for o in 0 1 2 3; do
    expect_exit 0 "$C" check "$T/out$o"
    for f in "$T/out$o"/*.cubin; do
        want=$(basename "$f" .cubin); want=${want#b.sm_}
        [ "$(sm_of "$f")" = "$want" ] || fail "$f holds sm_$(sm_of "$f")"
    done
done
expect_out 0 "0 bad" "$C" cache verify
echo ok
