#!/usr/bin/env bash
# ldso_secure.sh: the deploy gate finds a set-user-ID (set-group-ID)
# program's libraries where the real ld.so finds them when an ordinary user
# starts it: LD_LIBRARY_PATH is not read, an $ORIGIN of the program's own
# RPATH/RUNPATH is not followed outside the system directories, a library's
# own $ORIGIN is. Each case is run for real (as nobody, through setpriv)
# and `check` must agree: a library the program could not load is MISSING,
# one it loads is judged. Runs as root only (it makes set-ID programs owned
# by root): exit 77 otherwise.
. "$(dirname "$0")/lib.sh"
C="$CUBINCACHE"
[ "$(id -u)" = 0 ] || { echo "needs root, to make set-ID programs" >&2; exit 77; }
command -v setpriv >/dev/null || { echo "needs setpriv (util-linux)" >&2; exit 77; }
chmod 755 "$T"
mkdir -m 755 "$T/w" "$T/w/lib" "$T/w/lib/sub"
cd "$T/w"
printf 'int b(void) { return 0; }\n' > b.c
printf 'int b(void);\nint a(void) { return b(); }\n' > a.c
printf 'int a(void);\nint main(void) { return a(); }\n' > m.c
cc -shared -fPIC -o lib/sub/libb.so b.c || fail "cc libb"
# libA finds libB through its own $ORIGIN
cc -shared -fPIC -o lib/liba.so a.c -Llib/sub -lb -Wl,--enable-new-dtags,-rpath,'$ORIGIN/sub' ||
    fail "cc liba"
cc -o plain m.c -Llib -la -Wl,-rpath-link,lib/sub || fail "cc plain"
cc -o origin m.c -Llib -la -Wl,-rpath-link,lib/sub -Wl,--enable-new-dtags,-rpath,'$ORIGIN/lib' ||
    fail "cc origin"
cc -o absolute m.c -Llib -la -Wl,-rpath-link,lib/sub -Wl,--enable-new-dtags,-rpath,"$T/w/lib" ||
    fail "cc absolute"
for p in plain origin absolute; do
    cp "$p" "$p.suid" && chmod 4755 "$p.suid"
    cp "$p" "$p.sgid" && chmod 2755 "$p.sgid"
done
chmod -R a+rX "$T/w"
# ran: whether program $1 started and returned, as nobody, under LD_LIBRARY_PATH=$2
ran() {
    setpriv --reuid=65534 --regid=65534 --clear-groups env LD_LIBRARY_PATH="$2" "$1" \
        >/dev/null 2>&1
}
# judged: whether check found every library of $1 (no MISSING), same environment
judged() {
    local out
    out=$(LD_LIBRARY_PATH="$2" "$C" check --arch 90 "$1" 2>&1)
    printf '%s\n' "$out" > "$T/last.out"
    case "$out" in *MISSING*) return 1 ;; *) return 0 ;; esac
}
n=0
for p in plain origin absolute; do
    for kind in "" .suid .sgid; do
        for llp in "" "$T/w/lib"; do
            ran "$T/w/$p$kind" "$llp" && r=runs || r=fails
            judged "$T/w/$p$kind" "$llp" && j=runs || j=fails
            note "$p$kind, LD_LIBRARY_PATH='$llp': ld.so $r, check $j"
            [ "$r" = "$j" ] || fail "$p$kind with LD_LIBRARY_PATH='$llp': the program $r, check says it $j: $(cat "$T/last.out")"
            n=$((n + 1))
        done
    done
done
# the cases that differ between a plain program and a set-ID one, named
ran "$T/w/plain" "$T/w/lib" || fail "plain with LD_LIBRARY_PATH did not run"
ran "$T/w/plain.suid" "$T/w/lib" && fail "set-user-ID plain ran through LD_LIBRARY_PATH"
ran "$T/w/origin" "" || fail "origin did not run"
ran "$T/w/origin.sgid" "" && fail "set-group-ID origin ran through its \$ORIGIN"
ran "$T/w/absolute.suid" "" || fail "set-user-ID absolute did not run (libA's own \$ORIGIN)"
expect_out 1 "not read, as ld.so reads no such path for a set-user-ID, set-group-ID or capability program: LD_LIBRARY_PATH $T/w/lib" \
    env LD_LIBRARY_PATH="$T/w/lib" "$C" check --arch 90 "$T/w/plain.suid"
expect_out 1 "not read, as ld.so reads no such path for a set-user-ID, set-group-ID or capability program: \$ORIGIN/lib" \
    env LD_LIBRARY_PATH= "$C" check --arch 90 "$T/w/origin.suid"
echo "ok: $n cases, check agrees with ld.so"
