#!/usr/bin/env bash
# Runs a Python test file with Debian's interpreter (the one python3-torch is installed for),
# whatever python3 comes first on PATH.
set -euo pipefail
export PYTHONPATH="$PWD/tests/python${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 "$@"
