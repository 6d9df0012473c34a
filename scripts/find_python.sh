#!/usr/bin/env bash
# Print the path of a Python X.Y interpreter: pyenv's newest installed X.Y.Z
# when pyenv is there, else pythonX.Y on PATH; exit status 1 (and nothing
# printed) when there is neither.
#
# Usage:  python="$(bash scripts/find_python.sh 3.13)" || exit 1
# Used by .ci/run (the main suite on the newest Python requires-python
# allows), scripts/oldest_deps.sh (the oldest) and scripts/python_versions.sh.
set -uo pipefail
v="${1:?usage: find_python.sh X.Y}"
if command -v pyenv >/dev/null 2>&1; then
  found="$(ls -d "$(pyenv root)/versions/$v".* 2>/dev/null | sort -V | tail -n 1)"
  if [ -n "$found" ] && [ -x "$found/bin/python$v" ]; then
    echo "$found/bin/python$v"
    exit 0
  fi
fi
command -v "python$v" 2>/dev/null || exit 1
