# bash completion for cubincache (installed by `meson install` into
# DATADIR/bash-completion/completions). The commands, their options and the
# setting names are read from the program itself (`cubincache --help`,
# `cubincache CMD --help`, `cubincache config --json`), so they are always
# those of the cubincache being completed.
_cubincache()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local prog=${COMP_WORDS[0]} cmd=${COMP_WORDS[1]}
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "-s --show-stats -z --zero-stats -p --show-config -V --version --help" -- "$cur"))
        else
            local cmds
            cmds=$("$prog" --help 2>/dev/null | awk '/^commands:/ { on = 1; next } on && /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }')
            COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
        fi
        return
    fi
    case $cmd in
    nvcc | */nvcc) # nvcc's own arguments: files
        COMPREPLY=($(compgen -f -- "$cur"))
        return ;;
    esac
    case $prev in
    -a | --arch)
        COMPREPLY=($(compgen -W "auto native all all-major 75 80 86 89 90 90a 100 100f 120 +PTX" -- "$cur"))
        return ;;
    -o | --out-dir | --cache-dir | -L)
        COMPREPLY=($(compgen -d -- "$cur"))
        return ;;
    --emit)
        COMPREPLY=($(compgen -W "cargo" -- "$cur"))
        return ;;
    esac
    if [[ $cur == -* ]]; then
        local opts
        opts=$("$prog" "$cmd" --help 2>/dev/null | grep -oE '(^|[ ,\[|])(--[a-z][a-z-]*|-[a-zA-Z])\b' | tr -d ' ,[|' | sort -u)
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    case $cmd in
    config)
        COMPREPLY=($(compgen -W "$("$prog" config --json 2>/dev/null | sed -n 's/^{"name":"\([a-z_]*\)".*/\1/p')" -- "$cur"))
        return ;;
    cache)
        COMPREPLY=($(compgen -W "stats clean trim verify" -- "$cur"))
        return ;;
    esac
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _cubincache cubincache
