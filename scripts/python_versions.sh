#!/usr/bin/env bash
# Test segstruct on the Python minor versions pyproject.toml's requires-python
# claims between the two that CI runs the whole suite on: the newest (3.13,
# .ci/run's main suite, newest dependencies) and the oldest (3.10, with the
# oldest pinned dependencies: scripts/oldest_deps.sh).
#
# For each version of VERSIONS (default 3.11 3.12), found by
# scripts/find_python.sh: a fresh virtual environment in a temporary folder, a
# regular install of this repository with its newest dependency versions
# (".[test]"), and every test not marked slow (pytest -m "not slow": the
# solvers, the learners and their exact references, data reading, storage,
# scoring, the docstring examples, the command line; the slow ones are
# end-to-end runs on the real data sets and long fits).
#
# Usage (from anywhere):  bash scripts/python_versions.sh [VERSION ...]
# Exit status: 0 when every version passed; a version that is missing fails.
# Network: only pip, to fetch the wheels.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.11 3.12)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
failed=()
for v in "${versions[@]}"; do
  if ! python="$(bash scripts/find_python.sh "$v")"; then
    echo "--- Python $v: not found (pyenv versions, or python$v on PATH)"
    failed+=("$v (missing)")
    continue
  fi
  echo "--- Python $v: $("$python" --version 2>&1) at $python"
  venv="$tmp/venv-$v"
  "$python" -m venv "$venv"
  if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$root[test]"; then
    failed+=("$v (install)")
    continue
  fi
  "$venv/bin/python" -m pip freeze --disable-pip-version-check \
    | grep -iE '^(numpy|scipy|highspy|pymaxflow|scikit-image|opencv-python-headless)==' \
    | tr '\n' ' '; echo
  # a private cache per version; the installed copy is tested (the venv's
  # pytest script: `python -m pytest` would import the checkout instead)
  export SEGSTRUCT_CACHE="$tmp/cache-$v"
  mkdir -p "$SEGSTRUCT_CACHE"
  start=$SECONDS
  # the venv's bin first on PATH, as in an activated venv: the tests run the
  # installed console script (segstruct)
  if PATH="$venv/bin:$PATH" "$venv/bin/pytest" -q -x -p no:cacheprovider -m "not slow"; then
    echo "--- Python $v: passed in $((SECONDS - start)) s"
  else
    failed+=("$v (tests)")
  fi
  rm -rf "$venv"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "--- failed on Python: ${failed[*]}"
  exit 1
fi
echo "--- passed on Python ${versions[*]}"
