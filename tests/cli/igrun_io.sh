#!/usr/bin/env bash
# igrun_io.sh: runs igrun_io.py with the Python that has numpy and
# safetensors: $CBC_PYTHON (scripts/run.sh test makes one), else python3.
exec "${CBC_PYTHON:-python3}" "$(dirname "$0")/igrun_io.py"
