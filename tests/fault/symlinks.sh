#!/usr/bin/env bash
# symlinks.sh: a symlink planted at every path the cache and the out
# directory use, pointing at a victim file or directory outside them. After
# every command (build, hit, check, cache stats/trim/verify/clean) the
# victims are unchanged: nothing is read, written or deleted through a link.
# Outputs replace a link at their name; cache paths behind a link are
# refused or skipped.
. "$(dirname "$0")/../cli/lib.sh"
C="$CUBINCACHE"
make_kernel "$T/src"
cd "$T/src"
mkdir -p "$T/victim/dir/ab"
echo "victim file" > "$T/victim/file"
echo "victim in dir" > "$T/victim/dir/ab/0123456789abcdef0123456789abcd.cbc"
touch -d '3 hours ago' "$T/victim/dir/ab/0123456789abcdef0123456789abcd.cbc"
snapshot() { (cd "$T/victim" && find . -printf '%p %s %T@\n' | sort && cat file dir/ab/*); }
clean_victim=$(snapshot)
exercise() { # runs every command; none may crash, and the victims must survive
    local out="$1"
    for cmd in "build -q -a 86,90 -o $out -n k k.cu" "build -q -a 86,90 -o $out -n k k.cu" \
               "build -q -a 89 -o $out -n k --depfile $out/k.d k.cu" "check $out" \
               "cache stats" "cache verify" "cache trim --max-size 1" "cache clean"; do
        $C $cmd > "$T/cmd.out" 2>&1
        local rc=$?
        [ $rc -lt 128 ] || fail "'$cmd' crashed ($rc) with $2"
        [ "$(snapshot)" = "$clean_victim" ] || fail "'$cmd' changed a victim through $2: $(cat "$T/cmd.out")"
    done
}
plant() { # plant PATH: a link to the victim file (files) or directory (dirs)
    rm -rf "$1"
    mkdir -p "$(dirname "$1")"
    case "$2" in d) ln -s "$T/victim/dir" "$1" ;; f) ln -s "$T/victim/file" "$1" ;; esac
}
n=0
for spec in v1:d v1/objects:d v1/direct:d v1/deps:d v1/tools:d v1/stats:f v1/config:f \
            v1/objects/SHARD:d v1/objects/SHARD/ENTRY:f; do
    rm -rf "$CUBINCACHE_DIR" "$T/out"
    expect_exit 0 "$C" build -q -a 86,90 -o "$T/out" -n k k.cu
    path=${spec%:*}
    entry=$(cd "$CUBINCACHE_DIR/v1/objects" && ls */* | head -1)
    path=${path/SHARD/${entry%%/*}}
    path=${path/ENTRY/${entry##*/}}
    plant "$CUBINCACHE_DIR/$path" "${spec##*:}"
    exercise "$T/out" "cache $path"
    n=$((n + 1))
done
for spec in k.manifest.json:f k.sm_90.cubin:f k.sm_86.cubin:f k.d:f; do
    rm -rf "$CUBINCACHE_DIR" "$T/out"
    expect_exit 0 "$C" build -q -a 86,90 -o "$T/out" -n k k.cu
    plant "$T/out/${spec%:*}" "${spec##*:}"
    exercise "$T/out" "out/${spec%:*}"
    [ -L "$T/out/k.sm_90.cubin" ] && fail "an output is still a link after builds: out/${spec%:*}"
    n=$((n + 1))
done
note "$n planted links, 8 commands each: no victim touched"
echo ok
