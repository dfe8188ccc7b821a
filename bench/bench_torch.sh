#!/usr/bin/env bash
# bench_torch.sh: bench/bench_torch.py (the deploy gate on the PyPI torch
# wheel's libraries, against cuobjdump), as bench/run_cpu.sh runs each bench.
exec python3 "$(dirname "$0")/bench_torch.py"
