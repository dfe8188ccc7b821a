# remote_lib.sh: what the remote cache's tests (remote.sh, remote_ops.sh,
# remote_http.sh) and benchmarks (bench/bench_remote*.sh) share, sourced
# after lib.sh or bench_lib.sh: servers on free loopback ports, each in a
# directory of its own with its pid file, and the counters a cache keeps.
# Every server started here is stopped by the caller's trap, which kills
# the pid in each DIR/*.pid.
REMOTE_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
H="python3 $REMOTE_LIB_DIR/redis_helpers.py"

# start_redis DIR [redis-server options...]: a redis-server with its data
# and log in DIR, pid in DIR.pid; sets PORT. Returns 1 when none starts.
# REDIS_AUTH: the password the ping needs.
start_redis() {
    local dir=$1; shift
    mkdir -p "$dir"
    for try in 1 2 3 4 5 6 7 8; do
        PORT=$((20000 + RANDOM % 40000))
        redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
            --daemonize yes --pidfile "$dir.pid" --logfile "$dir/log" "$@" > /dev/null 2>&1 || continue
        for i in $(seq 50); do
            redis-cli -p "$PORT" ${REDIS_AUTH:+-a "$REDIS_AUTH" --no-auth-warning} ping 2>/dev/null | grep -q PONG && return 0
            sleep 0.1
        done
    done
    echo "redis-server did not start: $(tail -3 "$dir/log" 2>/dev/null)" >&2
    return 1
}

# start_nginx DIR [CERT KEY HTPASSWD]: nginx serving DIR/www, its config,
# logs and temporaries in DIR, pid in DIR.pid; sets HPORT (and with a
# certificate TPORT, https). Locations: / takes PUT and DELETE (WebDAV,
# create_full_put_path); /ro/ only GET and HEAD; /auth/ as / behind basic
# authentication (HTPASSWD). Returns 1 when it does not start.
start_nginx() {
    local dir=$1 cert=${2:-} key=${3:-} htpasswd=${4:-} ngx
    ngx=$(command -v nginx || ls /usr/sbin/nginx 2> /dev/null) || return 1
    mkdir -p "$dir/www" "$dir/tmp"
    chmod -R a+rwx "$dir"
    chmod a+x "$(dirname "$dir")"
    for try in 1 2 3 4 5 6 7 8; do
        HPORT=$((20000 + RANDOM % 40000))
        TPORT=$((HPORT + 1))
        {
            echo "worker_processes 1; pid $dir.pid; error_log $dir/error.log;"
            echo "events { worker_connections 64; }"
            echo "http { access_log off; client_max_body_size 64m;"
            for t in client_body proxy fastcgi uwsgi scgi; do echo "  ${t}_temp_path $dir/tmp/$t;"; done
            echo "  server { listen 127.0.0.1:$HPORT; root $dir/www;"
            [ -n "$cert" ] && echo "    listen 127.0.0.1:$TPORT ssl; ssl_certificate $cert; ssl_certificate_key $key;"
            echo "    location / { dav_methods PUT DELETE; create_full_put_path on; dav_access user:rw group:rw all:rw; }"
            echo "    location /ro/ { }"
            [ -n "$htpasswd" ] && echo "    location /auth/ { auth_basic cache; auth_basic_user_file $htpasswd;" \
                "dav_methods PUT DELETE; create_full_put_path on; dav_access user:rw group:rw all:rw; }"
            echo "  }"
            echo "}"
        } > "$dir/nginx.conf"
        "$ngx" -e "$dir/error.log" -p "$dir" -c "$dir/nginx.conf" 2> "$dir/start.err" || continue
        for i in $(seq 50); do
            curl -s -o /dev/null "http://127.0.0.1:$HPORT/" && return 0
            sleep 0.1
        done
    done
    echo "nginx did not start: $(tail -3 "$dir/start.err" "$dir/error.log" 2>/dev/null)" >&2
    return 1
}

# start_fake DIR MODE: a fake server of redis_helpers.py (silent, garbage,
# trickle, huge); its port in DIR.port, pid in DIR.pid.
start_fake() {
    $H fake "$1.port" "$2" & echo $! > "$1.pid"
    for i in $(seq 50); do [ -f "$1.port" ] && return 0; sleep 0.1; done
    echo "the $2 server did not start" >&2
    return 1
}

# counter CACHE NAME: one counter of `cache stats --json`; rtime CACHE: the
# time spent on the remote, in ms
counter() {
    CUBINCACHE_DIR="$1" "$CUBINCACHE" cache stats --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"
}
rtime() { echo $(($(counter "$1" remote_time_us) / 1000)); }

# the tests' own (lib.sh's T, fail, make_kernel's k.cu)
compiles() { grep -v -c -e '^--version' -e '^--list-gpu-code' -e 'cubincache-probe' "$T/nvcc.log" || true; }
fresh_kernel() { sed "s/sq(x\[i\]) \* a/sq(x[i]) * a + $1.0f/" "$T/src/k.cu" > "$T/src/f$1.cu"; echo "f$1.cu"; }
# three_builds NAME SPEC: three fresh kernels built one after another, as
# ninja would, in cache $T/cNAME, their stderr in $T/NAME.err
three_builds() {
    local i rc
    : > "$T/$1.err"
    for i in 1 2 3; do
        rc=0
        CUBINCACHE_DIR="$T/c$1" timeout 60 "$CUBINCACHE" build -a 90 --remote "$2" -o "$T/out$1" \
            -n "$1$i" "$(fresh_kernel "$RANDOM$i")" 2>> "$T/$1.err" || rc=$?
        [ $rc = 0 ] || fail "$1: build $i exited $rc: $(cat "$T/$1.err")"
    done
}
