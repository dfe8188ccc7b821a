#!/usr/bin/env bash
# bench_check.sh: `cubincache check` of a bundle directory of 1000 cubins
# (250 manifests x 4 targets): every image read, hashed and its ELF checked,
# every key recomputed from the sources. The peer, when xxhsum is
# installed: reading and hashing the same 1000 cubins and 250 manifests
# with `xxhsum -H2` (XXH128), the floor of any check that reads them.
. "$(dirname "$0")/bench_lib.sh"
kernel "$B/src" k
cd "$B/src"
"$CUBINCACHE" build -q -a 75,80,89,90 -o "$B/one" -n k k.cu
D="$B/bundle"
mkdir -p "$D"
for i in $(seq -w 1 250); do
    for t in 75 80 89 90; do cp "$B/one/k.sm_$t.cubin" "$D/k$i.sm_$t.cubin"; done
    sed -e "s/\"name\":	\"k\"/\"name\":	\"k$i\"/" -e "s/\"k\.sm_/\"k$i.sm_/" "$B/one/k.manifest.json" > "$D/k$i.manifest.json"
done
"$CUBINCACHE" check -q "$D" > "$B/check.out" || { cat "$B/check.out" >&2; exit 1; }
[ "$(grep -c '^OK' "$B/check.out")" = 1000 ] || { echo "expected 1000 OK lines" >&2; exit 1; }
measure check_1000_cubins 20 3 "$CUBINCACHE" check -q "$D"
if command -v xxhsum > /dev/null; then
    measure xxhsum_1000_cubins 20 3 xxhsum -H2 "$D"/*
fi
