# lib.sh: helpers for the command-line tests, sourced by each tests/cli/*.sh.
# Meson passes CUBINCACHE (the built binary), SRCDIR and BUILDDIR. Each test
# gets a private temporary directory and cache, removed on exit.
set -u
: "${CUBINCACHE:?run through meson test}"
T=$(mktemp -d /tmp/cbc-cli.XXXXXX)
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
export CUBINCACHE_DIR="$T/cache" NO_COLOR=1
# each test its own compile slots (build's one-nvcc-per-CPU limit), so tests
# running side by side do not throttle each other
mkdir -m 700 "$T/xdg"
export XDG_RUNTIME_DIR="$T/xdg"
unset CUDA_COMPUTE_CAP NVCC NVCC_PREPEND_FLAGS NVCC_APPEND_FLAGS CUBINCACHE_DISABLE CUBINCACHE_BASEDIR
NVCC_REAL=${NVCC_REAL:-/usr/local/cuda/bin/nvcc}

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "# $*"; }

# expect_exit CODE CMD...: the exact exit code; a signal is always a failure
# (git's t/README: a crash is never "it failed as expected").
expect_exit() {
    local want=$1; shift
    "$@"
    local got=$?
    [ $got -lt 128 ] || fail "'$*' died of signal $((got - 128))"
    [ $got -eq "$want" ] || fail "'$*' exited $got, expected $want"
}

# expect_out CODE NEEDLE CMD...: exit code, and NEEDLE in stdout+stderr.
expect_out() {
    local want=$1 needle=$2; shift 2
    local out
    out=$("$@" 2>&1)
    local got=$?
    printf '%s\n' "$out" > "$T/last.out"
    [ $got -lt 128 ] || fail "'$*' died of signal $((got - 128)): $out"
    [ $got -eq "$want" ] || fail "'$*' exited $got, expected $want: $out"
    case "$out" in *"$needle"*) ;; *) fail "'$*' output lacks '$needle': $out" ;; esac
}

# SM of a cubin read straight from its ELF e_flags (no tool of ours involved).
sm_of() {
    local abi
    abi=$(od -An -tu1 -j8 -N1 "$1" | tr -d ' ')
    if [ "$abi" -ge 8 ]; then od -An -tu1 -j49 -N1 "$1" | tr -d ' '
    else od -An -tu1 -j48 -N1 "$1" | tr -d ' '; fi
}

mtime_of() { stat -c %Y.%y "$1"; }

# A small kernel with a header, in directory $1.
make_kernel() {
    mkdir -p "$1"
    cat > "$1/kh.cuh" <<'CU'
__device__ inline float sq(float v) { return v * v; }
CU
    cat > "$1/k.cu" <<'CU'
#include "kh.cuh"
extern "C" __global__ void scale(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = sq(x[i]) * a;
}
CU
}

# An nvcc wrapper that logs every run to $T/nvcc.log; export NVCC to use it.
# The sleep lets its stamps age past the racy window, so the toolchain
# identity cached on first use is trusted afterwards.
make_counting_nvcc() {
    cat > "$T/nvcc-count" <<EOF2
#!/bin/sh
echo "\$*" >> "$T/nvcc.log"
exec "$NVCC_REAL" "\$@"
EOF2
    chmod +x "$T/nvcc-count"
    : > "$T/nvcc.log"
    sleep 1.1
}
nvcc_runs() { wc -l < "$T/nvcc.log" | tr -d ' '; }
reset_nvcc_log() { : > "$T/nvcc.log"; }
count_entries() { find "$CUBINCACHE_DIR" -name '*.cbc' 2>/dev/null | wc -l | tr -d ' '; }
