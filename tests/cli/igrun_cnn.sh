#!/usr/bin/env bash
# igrun_models.sh: runs igrun_cnn.py with the Python that has numpy:
# $CBC_PYTHON (scripts/run.sh test makes one), else python3.
exec "${CBC_PYTHON:-python3}" "$(dirname "$0")/igrun_cnn.py"
