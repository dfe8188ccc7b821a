#!/usr/bin/env bash
# ccache_cmds.sh: what a ccache user types first. -s/-z/-p/-V as ccache
# spells them; the read_only and recache settings; log_file and debug,
# which say per launcher call and per build target hit or miss and why
# (the first input that differs from the last compile of that output).
. "$(dirname "$0")/lib.sh"
C=$CUBINCACHE
N=$NVCC_REAL
make_kernel "$T/src"
cd "$T/src"

note "-V, -p, -s are --version, config, cache stats"
[ "$("$C" -V)" = "$("$C" --version)" ] || fail "-V differs from --version"
"$C" -V | grep -q '^cubincache [0-9]' || fail "-V: $("$C" -V)"
[ "$("$C" -p)" = "$("$C" config)" ] || fail "-p differs from config"
[ "$("$C" --show-config)" = "$("$C" config)" ] || fail "--show-config differs from config"
expect_exit 0 "$C" build -q -a 86,90 -o "$T/o" k.cu
[ "$("$C" -s)" = "$("$C" cache stats)" ] || fail "-s differs from cache stats"
[ "$("$C" --show-stats --json)" = "$("$C" cache --json stats)" ] || fail "-s --json"
expect_out 0 "misses           2" "$C" -s
expect_out 2 "unknown option '-Q'" "$C" -Q

note "-z sets the counters to 0 and keeps the entries"
entries=$(count_entries)
expect_out 0 "statistics zeroed in $CUBINCACHE_DIR/v1" "$C" -z
expect_out 0 "misses           0" "$C" -s
expect_out 0 "hits             0" "$C" --show-stats
[ "$(count_entries)" = "$entries" ] && [ "$entries" -gt 0 ] || fail "-z changed the entries"
expect_out 0 "1 hit" "$C" build -v -a 90 -o "$T/o2" k.cu
expect_out 0 "hits             1" "$C" -s
expect_out 0 "statistics zeroed" "$C" --zero-stats --cache-dir "$CUBINCACHE_DIR"
expect_out 2 "unexpected argument 'x'" "$C" -z x

note "read_only: hits are served, nothing is stored"
rm -rf "$CUBINCACHE_DIR"
CUBINCACHE_READONLY=1 expect_out 0 "2 miss" "$C" build -v -a 86,90 -o "$T/ro" k.cu
[ "$(sm_of "$T/ro/k.sm_90.cubin")" = 90 ] || fail "read_only: the build wrote no sm_90"
[ "$(count_entries)" = 0 ] || fail "read_only stored $(count_entries) entries"
expect_out 0 "2 miss" "$C" build -v -a 86,90 -o "$T/ro" k.cu
mkdir -p "$CUBINCACHE_DIR/v1" && echo 'read_only = 1' >> "$CUBINCACHE_DIR/v1/config"
expect_out 0 "2 hit" "$C" build -v -a 86,90 -o "$T/ro2" k.cu
echo '// read-only edit' >> k.cu
before=$(count_entries)
expect_out 0 "1 miss" "$C" build -v -a 90 -o "$T/ro3" k.cu
[ "$(count_entries)" = "$before" ] || fail "read_only in v1/config stored an entry"
rm "$CUBINCACHE_DIR/v1/config"

note "recache: every target compiles again and is stored"
expect_exit 0 "$C" build -q -a 86,90 -o "$T/rc" k.cu
make_counting_nvcc
CUBINCACHE_RECACHE=1 NVCC="$T/nvcc-count" expect_out 0 "sm_90: miss: recache is set" "$C" build --explain -a 86,90 -o "$T/rc" k.cu
n=$(grep -v cubincache-probe "$T/nvcc.log" | grep -c -- "-cubin"); [ "$n" = 2 ] || fail "recache compiled $n targets, not 2: $(cat "$T/nvcc.log")"
NVCC="$T/nvcc-count" expect_out 0 "2 hit" "$C" build -v -a 86,90 -o "$T/rc" k.cu

note "log_file: each launcher call, hit or miss and the first input that differs"
export CUBINCACHE_LOGFILE="$T/log"
G=(-arch=sm_80)
launch() { "$C" "$N" "${G[@]}" "$@" -c k.cu -o k.o 2> "$T/l.err" || fail "launcher: $(cat "$T/l.err")"; }
last() { tail -1 "$T/log"; }
want() { last | grep -qF -- "$1" || fail "log: expected '$1', got: $(last)"; }
launch
want "nvcc: 'k.o': miss: no earlier compile of 'k.o' in '$T/src' is recorded in this cache"
[ ! -s "$T/l.err" ] || fail "the log is no reason to print: $(cat "$T/l.err")"
launch; want "nvcc: 'k.o': hit"
echo '// edited' >> kh.cuh
launch; want "'k.o': miss: dependency '$T/src/kh.cuh' changed"
launch -O2; want "'k.o': miss: flags changed:"
want "-arch=sm_80 -O2 -c k.cu"
mkdir -p inc1 inc2 && echo '#define Q 1' > inc2/q.h
sed -i '1i #include "q.h"' k.cu
launch -Iinc1 -Iinc2; want "'k.o': miss: source '$T/src/k.cu' changed"
launch -Iinc1 -Iinc2; want "'k.o': hit"
echo '#define Q 2' > inc1/q.h
launch -Iinc1 -Iinc2; want "'k.o': miss: '$T/src/inc1/q.h' now exists"
NVCC_APPEND_FLAGS=-DX launch -Iinc1 -Iinc2; want "'k.o': miss: NVCC_APPEND_FLAGS changed: unset -> '-DX'"
"$C" "$N" -E k.cu -Iinc1 -Iinc2 > /dev/null 2>&1
want "nvcc: running nvcc as it is:"
grep -q '^[0-9-]*T[0-9:.]* \[[0-9]*\] nvcc: ' "$T/log" || fail "log lines lack the time and pid: $(head -1 "$T/log")"

note "log_file: each build target"
make_kernel "$T/b" && cd "$T/b"
expect_exit 0 "$C" build -q -a 86,90 -o "$T/lb" k.cu
grep -q "build k.cu -> $T/lb: sm_90: miss: no previous build of 'k' in '$T/lb'" "$T/log" ||
    fail "no build line: $(tail -3 "$T/log")"
expect_exit 0 "$C" build -q -a 86,90 -o "$T/lb" k.cu
last | grep -q "build k.cu -> $T/lb: sm_90: hit" || fail "build hit: $(last)"

note "debug (here from v1/config): the same lines on stderr"
unset CUBINCACHE_LOGFILE
cd "$T/src"
echo 'debug = 1' > "$CUBINCACHE_DIR/v1/config"
"$C" "$N" "${G[@]}" -Iinc1 -Iinc2 -c k.cu -o k.o 2> "$T/d.err" || fail "launcher with debug"
grep -q "^cubincache: note: nvcc: 'k.o': hit$" "$T/d.err" || fail "debug: $(cat "$T/d.err")"
rm "$CUBINCACHE_DIR/v1/config"
CUBINCACHE_LOGFILE=relative expect_out 0 "CUBINCACHE_LOGFILE='relative': expected an absolute path" \
    "$C" "$N" "${G[@]}" -Iinc1 -Iinc2 -c k.cu -o k.o
CUBINCACHE_LOGFILE=/nonexistent/dir/log expect_out 0 "cannot open the log file '/nonexistent/dir/log'" \
    "$C" "$N" "${G[@]}" -Iinc1 -Iinc2 -c k.cu -o k.o
echo ok
