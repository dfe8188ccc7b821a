#!/usr/bin/env bash
# docs_install.sh: the manual page is made from the help texts at build
# time and says what the program says; bash completion completes commands,
# options and setting names from the program itself; `meson install`
# installs both where man and bash-completion look.
. "$(dirname "$0")/lib.sh"
C=$CUBINCACHE
MAN="$BUILDDIR/tools/cubincache.1"
COMPLETION="$SRCDIR/tools/completion/cubincache.bash"

note "the manual page holds every command's help and every setting"
[ -s "$MAN" ] || fail "no $MAN"
head -1 "$MAN" | grep -q "^\.TH CUBINCACHE 1 .*cubincache $("$C" -V | cut -d' ' -f2)" || fail "title: $(head -1 "$MAN")"
plain=$(sed 's/\\-/-/g; s/\\e/\\/g' "$MAN")
for cmd in $("$C" --help | awk '/^commands:/ { on = 1; next } on && /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }'); do
    [ "$cmd" = nvcc ] && continue
    grep -q "^\.SS $cmd$" "$MAN" || fail "no section for '$cmd'"
    # every line of the command's help is in the page, as the help says it
    while IFS= read -r line; do
        [ -z "$line" ] && continue
        grep -qF -- "$line" <<< "$plain" || fail "'$cmd --help' line missing from the page: $line"
    done < <("$C" "$cmd" --help)
done
"$C" config --json | sed -n 's/.*"env":"\([A-Z_]*\)".*/\1/p' | while read -r v; do
    grep -q "^\.B $v$" "$MAN" || fail "setting $v is not in the page"
done
if command -v man > /dev/null; then
    MANWIDTH=100 man -l "$MAN" > "$T/man.txt" 2> "$T/man.err" || fail "man cannot render the page: $(cat "$T/man.err")"
    [ ! -s "$T/man.err" ] || fail "man warns: $(cat "$T/man.err")"
    grep -q -- "--jobs N" "$T/man.txt" || fail "the rendered page lacks build's options"
fi

note "bash completion: commands, options, setting names, cache actions"
complete_words() { # WORD... : the completions of the last one
    COMP_WORDS=("$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _cubincache
    printf '%s\n' "${COMPREPLY[@]}"
}
# shellcheck source=/dev/null
. "$COMPLETION"
complete -p cubincache | grep -q -- "-F _cubincache" || fail "the script registers no completion"
[ "$(complete_words "$C" bu)" = build ] || fail "'bu' -> $(complete_words "$C" bu)"
complete_words "$C" c | grep -qx check && complete_words "$C" c | grep -qx config ||
    fail "'c' -> $(complete_words "$C" c)"
[ "$(complete_words "$C" build --exp)" = --explain ] || fail "'build --exp' -> $(complete_words "$C" build --exp)"
complete_words "$C" build -- | grep -qx -- --jobs || fail "build's options lack --jobs"
complete_words "$C" -- | grep -qx -- --show-stats || fail "no --show-stats at the top"
[ "$(complete_words "$C" config shared)" = shared_jobs ] || fail "'config shared' -> $(complete_words "$C" config shared)"
[ "$(complete_words "$C" cache tr)" = trim ] || fail "'cache tr' -> $(complete_words "$C" cache tr)"
complete_words "$C" build -a 9 | grep -qx 90a || fail "-a 9 lacks 90a"

note "meson install puts the page and the completion where man and bash-completion look"
inst="$T/inst"
meson install -C "$BUILDDIR" --no-rebuild --quiet --destdir "$inst" > "$T/install.out" 2>&1 ||
    fail "meson install: $(tail -5 "$T/install.out")"
page=$(find "$inst" -path '*/man1/cubincache.1' | head -1)
[ -n "$page" ] && cmp -s "$page" "$MAN" || fail "no installed man1/cubincache.1"
comp=$(find "$inst" -path '*/bash-completion/completions/cubincache' | head -1)
[ -n "$comp" ] && cmp -s "$comp" "$COMPLETION" || fail "no installed bash-completion/completions/cubincache"
echo ok
