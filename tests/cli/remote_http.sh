#!/usr/bin/env bash
# remote_http.sh: the HTTP second-level cache (ccache's HTTP storage
# protocol) against a real nginx with WebDAV PUT on loopback, started here
# with its own config, pid and logs in the test's directory (skipped, 77,
# only when nginx is not installed or this cubincache has no libcurl). Two
# builders share entries through it; a poisoned value is refused; a value
# over max-value is refused from its Content-Length; a dead server and a
# silent one cost one timeout and one warning; read-only writes nothing; a
# server that refuses PUT stops writes, not reads; basic authentication
# (the password never printed); https with the test's own CA (ca=FILE), and
# refused without it; the operator commands that HTTP can and cannot do.
. "$(dirname "$0")/lib.sh"
command -v nginx > /dev/null || [ -x /usr/sbin/nginx ] || { echo "nginx is not installed" >&2; exit 77; }
out=$("$CUBINCACHE" cache remote push --remote "http://127.0.0.1:9/x" 2>&1)
case "$out" in *"built without HTTP support"*) echo "this cubincache has no HTTP support" >&2; exit 77 ;; esac
. "$(dirname "$0")/remote_lib.sh"
trap 'for p in "$T"/*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done; rm -rf "$T"' EXIT
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY

# a CA of the test's own and a certificate it signs for 127.0.0.1
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 \
    -subj "/CN=cubincache test CA" > /dev/null 2>&1 || fail "openssl could not make a CA"
openssl req -newkey rsa:2048 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" -subj "/CN=127.0.0.1" > /dev/null 2>&1
printf 'subjectAltName=IP:127.0.0.1\n' > "$T/san.ext"
openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -out "$T/srv.pem" \
    -days 2 -extfile "$T/san.ext" > /dev/null 2>&1 || fail "openssl could not sign the certificate"
printf 'ci:%s\n' "$(openssl passwd -apr1 s3cret)" > "$T/htpasswd"

start_nginx "$T/ngx" "$T/srv.pem" "$T/srv.key" "$T/htpasswd" || fail "nginx did not start"
W="$T/ngx/www"
mkdir -p "$W/cache" "$W/ro" "$W/auth"
chmod -R a+rwx "$W"
PORT=$HPORT
URL="http://127.0.0.1:$PORT/cache/"
make_counting_nvcc
export NVCC="$T/nvcc-count"
stored() { find "$W/$1" -type f | wc -l | tr -d ' '; }
make_kernel "$T/src"
cd "$T/src"

note "builder A writes through to nginx (PUT), builder B is all remote hits (GET)"
CUBINCACHE_DIR="$T/cA" expect_exit 0 "$CUBINCACHE" build -q --remote "$URL" -a 80,90 -o "$T/outA" k.cu
[ "$(find "$W/cache/v1/objects" -name '*' -type f | wc -l)" = 2 ] || fail "nginx holds: $(find "$W" -type f)"
obj=$(find "$W/cache/v1/objects" -type f | head -1)
case "$obj" in */v1/objects/[0-9a-f][0-9a-f]/[0-9a-f]*) ;; *) fail "not the documented layout: $obj" ;; esac
[ "${#obj}" -gt 30 ] && [ "$(basename "$obj" | wc -c)" = 31 ] || fail "not <2 hex>/<30 hex>: $obj"
head -c 4 "$obj" | grep -q CBCR || fail "the stored value is not a cubincache value"
reset_nvcc_log
CUBINCACHE_DIR="$T/cB" "$CUBINCACHE" build --explain --remote "$URL" -a 80,90 -o "$T/outB" k.cu 2> "$T/b.err" ||
    fail "B: $(cat "$T/b.err")"
grep -q "sm_90: remote hit (http://127.0.0.1:$PORT/cache/)" "$T/b.err" || fail "B: $(cat "$T/b.err")"
[ "$(compiles)" = 0 ] || fail "B compiled: $(cat "$T/nvcc.log")"
for t in 80 90; do cmp "$T/outA/k.sm_$t.cubin" "$T/outB/k.sm_$t.cubin" || fail "sm_$t differs"; done
[ "$(counter "$T/cB" remote_hits)" = 2 ] || fail "B's remote hits: $(counter "$T/cB" remote_hits)"

note "read-only: a miss compiles and writes nothing"
sed 's/sq(x\[i\]) \* a/sq(x[i]) + a/' k.cu > ro.cu
n0=$(stored cache)
CUBINCACHE_DIR="$T/cR" expect_exit 0 "$CUBINCACHE" build -q --remote "$URL|read-only" -a 90 -o "$T/outR" ro.cu
[ "$(stored cache)" = "$n0" ] || fail "a read-only client wrote to nginx"

note "a poisoned value (a byte of the cubin flipped, re-wrapped) is refused and compiled here"
for f in $(find "$W/cache/v1/objects" -type f); do
    $H unvalue "$f" "$T/e" && [ "$(od -An -tu2 -j14 -N2 "$T/e" | tr -d ' ')" = 90 ] && { V90=$f; cp "$f" "$T/v90"; }
done
[ -n "${V90:-}" ] || fail "no sm_90 entry in nginx"
$H unvalue "$V90" "$T/bad" && printf '\xff' | dd of="$T/bad" bs=1 seek=200 conv=notrunc 2> /dev/null
$H value "$T/bad" "$V90"
reset_nvcc_log
CUBINCACHE_DIR="$T/cP" "$CUBINCACHE" build --remote "$URL|read-only" -a 80,90 -o "$T/outP" k.cu 2> "$T/p.err" ||
    fail "poison: $(cat "$T/p.err")"
grep -q "ignored a bad entry (.*content hash mismatch" "$T/p.err" || fail "poison: $(cat "$T/p.err")"
[ "$(compiles)" = 1 ] || fail "poison: compiled $(compiles) times, expected sm_90 alone"
cmp "$T/outA/k.sm_90.cubin" "$T/outP/k.sm_90.cubin" || fail "poison: wrong sm_90 output"
cp "$T/v90" "$V90"

note "max-value: refused from the Content-Length, compiled here"
CUBINCACHE_DIR="$T/cM" timeout 60 "$CUBINCACHE" build --remote "$URL|read-only|max-value=1KiB" -a 90 -o "$T/outM" k.cu 2> "$T/m.err" ||
    fail "max-value: $(cat "$T/m.err")"
grep -q "over max-value (1024 bytes) by its Content-Length; not read" "$T/m.err" || fail "max-value: $(cat "$T/m.err")"
[ "$(counter "$T/cM" remote_bad_values)" -ge 1 ] || fail "max-value: not counted as a bad value"

note "a dead server: one warning, three builds, no time lost"
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
three_builds dead "http://127.0.0.1:$dead/cache"
[ "$(grep -c 'remote cache' "$T/dead.err")" = 1 ] || fail "dead: $(cat "$T/dead.err")"
grep -q "cannot connect" "$T/dead.err" || fail "dead: $(cat "$T/dead.err")"
[ "$(rtime "$T/cdead")" -lt 200 ] || fail "dead: $(rtime "$T/cdead") ms spent on the remote"
[ "$(counter "$T/cdead" remote_refusals)" = 1 ] || fail "dead: not counted as a refusal"

note "a silent server (accepts, never answers): one 1 s timeout for the three builds"
start_fake "$T/silent" silent || fail "no silent server"
three_builds silent "http://127.0.0.1:$(cat "$T/silent.port")/cache"
[ "$(grep -c 'remote cache' "$T/silent.err")" = 1 ] || fail "silent: $(cat "$T/silent.err")"
grep -q "no answer within the operation timeout (1000 ms)" "$T/silent.err" || fail "silent: $(cat "$T/silent.err")"
ms=$(rtime "$T/csilent")
[ "$ms" -ge 900 ] && [ "$ms" -lt 1500 ] || fail "silent: $ms ms spent on the remote (one 1 s timeout expected)"
[ "$(counter "$T/csilent" remote_timeouts)" = 1 ] || fail "silent: not counted as a timeout"

note "a server that refuses PUT (no dav_methods): writes stop once, reads go on"
cp -r "$W/cache/v1" "$W/ro/"
chmod -R a+rwx "$W/ro"
reset_nvcc_log
three_builds ro "http://127.0.0.1:$PORT/ro"
[ "$(grep -c 'refuses writes: PUT refused: HTTP 405' "$T/ro.err")" = 1 ] || fail "ro: $(cat "$T/ro.err")"
CUBINCACHE_DIR="$T/cro" "$CUBINCACHE" build --explain --remote "http://127.0.0.1:$PORT/ro" -a 90 -o "$T/outro" k.cu 2> "$T/ro2.err"
grep -q "sm_90: remote hit" "$T/ro2.err" || fail "ro: reads stopped too: $(cat "$T/ro2.err")"

note "basic authentication: a wrong password refused (never printed), the right one works"
three_builds badpw "http://ci:hunter2@127.0.0.1:$PORT/auth"
grep -q "HTTP 401" "$T/badpw.err" && grep -q "http://ci:\*\*\*@127.0.0.1" "$T/badpw.err" || fail "badpw: $(cat "$T/badpw.err")"
grep -q hunter2 "$T/badpw.err" && fail "the password was printed"
three_builds goodpw "http://ci:s3cret@127.0.0.1:$PORT/auth"
[ -s "$T/goodpw.err" ] && fail "goodpw: $(cat "$T/goodpw.err")"
[ "$(stored auth)" -gt 0 ] || fail "nothing was written with the right password"

note "https with the test's CA (ca=FILE): hits; without it: refused, built anyway"
reset_nvcc_log
CUBINCACHE_DIR="$T/cS" "$CUBINCACHE" build --explain --remote "https://127.0.0.1:$TPORT/cache/|ca=$T/ca.pem" -a 80,90 \
    -o "$T/outS" k.cu 2> "$T/s.err" || fail "https: $(cat "$T/s.err")"
grep -q "sm_90: remote hit (https://127.0.0.1:$TPORT/cache/)" "$T/s.err" || fail "https: $(cat "$T/s.err")"
[ "$(compiles)" = 0 ] || fail "https: compiled"
CUBINCACHE_DIR="$T/cS2" "$CUBINCACHE" build -a 90 --remote "https://127.0.0.1:$TPORT/cache/" -o "$T/outS2" k.cu 2> "$T/s2.err" ||
    fail "https without the CA: $(cat "$T/s2.err")"
grep -q "TLS: .*ca=FILE" "$T/s2.err" || fail "https without the CA: $(cat "$T/s2.err")"

note "layout=flat: one name per value under the path"
CUBINCACHE_DIR="$T/cF" expect_exit 0 "$CUBINCACHE" build -q --remote "http://127.0.0.1:$PORT/cache/flat|layout=flat|namespace=n1" -a 90 -o "$T/outF" k.cu
ls "$W/cache/flat" | grep -q '^v1-n1-objects-[0-9a-f]\{32\}$' || fail "flat: $(ls "$W/cache/flat")"

note "operators: push works over HTTP, listing does not (exit 2)"
rm -rf "$W/cache/v1"
expect_out 0 "pushed 5 entries and records" "$CUBINCACHE" cache --cache-dir "$T/cA" remote push --remote "$URL"
[ "$(find "$W/cache/v1" -type f | wc -l)" = 5 ] || fail "push: $(find "$W/cache/v1" -type f)"
expect_out 2 "cannot list what it holds" "$CUBINCACHE" cache remote stats --remote "$URL"
expect_out 2 "cannot list what it holds" "$CUBINCACHE" cache remote verify --remote "$URL"
note "ok"
