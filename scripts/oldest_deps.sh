#!/usr/bin/env bash
# Test segstruct against the OLDEST dependency versions it claims to support.
#
# Makes a fresh virtual environment of the oldest Python requires-python
# allows (3.10, found by scripts/find_python.sh) in a temporary folder,
# installs the repository this script lives in (a regular, not editable, install) with the
# pins of .ci/oldest-constraints.txt, shows the installed versions and runs
# the test suite. Exit status: pytest's.
#
# Usage (from anywhere):  bash scripts/oldest_deps.sh [extra pytest args]
# (SEGSTRUCT_SHARED_DATA=/path/to/data runs the shared-data tests too; they
# are skipped when ../shared/data is absent.)
# Network: only pip, to fetch the pinned wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
constraints="$root/.ci/oldest-constraints.txt"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
venv="$tmp/venv"
oldest_python="$(bash scripts/find_python.sh 3.10)" \
  || { echo "Python 3.10 not found (pyenv versions, or python3.10 on PATH)" >&2; exit 1; }
"$oldest_python" -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"

# A non-editable install into the fresh venv, built in pip's isolated build env.
python -m pip install --quiet --disable-pip-version-check -c "$constraints" ".[test]"

echo "--- $(python --version 2>&1); pinned packages as installed:"
pins="$(grep -oE '^[A-Za-z0-9_.-]+==' "$constraints" | sed 's/==$//' | tr 'A-Z_.' 'a-z--')"
python -m pip freeze --disable-pip-version-check \
  | while IFS= read -r line; do
      name="$(printf '%s' "${line%%==*}" | tr 'A-Z_.' 'a-z--')"
      if printf '%s\n' "$pins" | grep -qxF "$name"; then printf '%s\n' "$line"; fi
    done
echo "--- full pip freeze:"
python -m pip freeze --disable-pip-version-check | tr '\n' ' '; echo

# A private cache folder, so no stale entry from an earlier run can hide a bug;
# one BLAS/OpenMP thread (docs/design.md, "Measurements behind the design":
# OpenBLAS spins with default threads on 2 cores).
export SEGSTRUCT_CACHE="$tmp/cache"
mkdir -p "$SEGSTRUCT_CACHE"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# The venv's `pytest` script, not `python -m pytest`: the latter would put the
# checkout on sys.path and import its source tree instead of the installed copy
# (pyproject.toml sets --import-mode=importlib, which adds nothing to sys.path).
status=0
"$venv/bin/pytest" -q -x -p no:cacheprovider "$@" || status=$?
exit "$status"
