#!/usr/bin/env bash
# children.sh: what the build starts dies with it. A wrapper nvcc records
# its pid and starts a grandchild (as nvcc starts cicc and ptxas), both
# long-lived; kill -9 of the build must take them all down within seconds.
# A build also waits only for its own children: a program that spawned
# other children before calling cubincache keeps them.
. "$(dirname "$0")/../cli/lib.sh"
C="$CUBINCACHE"
make_kernel "$T/src"
cd "$T/src"
cat > "$T/slow-nvcc" <<EOS
#!/bin/sh
case " \$* " in *cubincache-probe*) ;; *" -cubin "*)
    echo \$\$ >> "$T/pids"
    sleep 300 &
    echo \$! >> "$T/pids"
    wait ;;
esac
exec "$NVCC_REAL" "\$@"
EOS
chmod +x "$T/slow-nvcc"
sleep 1.1 # let the wrapper's stamps age, so its identity is cached as usual
NVCC="$T/slow-nvcc" "$C" build -q -a 86,90 -o "$T/out" k.cu &
pid=$!
for _ in $(seq 1 100); do
    [ "$(cat "$T/pids" 2>/dev/null | wc -l)" -ge 4 ] && break
    sleep 0.1
done
[ "$(wc -l < "$T/pids")" -ge 4 ] || fail "the wrapper never started its children"
kill -9 $pid
wait $pid 2>/dev/null
alive=""
for _ in $(seq 1 50); do
    alive=""
    for p in $(cat "$T/pids"); do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
    [ -z "$alive" ] && break
    sleep 0.1
done
[ -z "$alive" ] || fail "processes outlived the killed build:$alive ($(ps -o pid,args -p ${alive// /,} | tail -n +2))"
ls -A "$T/out" 2>/dev/null | grep -vq cubincache && fail "a killed build published: $(ls -A "$T/out")"

note "a build reaps only its own children"
cat > "$T/host.sh" <<EOS
sleep 2 &
other=\$!
"$C" build -q -a 90 -o "$T/out2" "$T/src/k.cu" || exit 10
wait \$other
echo "other child: \$?"
EOS
out=$(bash "$T/host.sh" 2>&1)
[ "$out" = "other child: 0" ] || fail "the host's own child was reaped by the build: $out"
echo ok
