#!/usr/bin/env bash
# Test segstruct on every Python minor version pyproject.toml's requires-python
# claims besides the one CI's main suite runs (python3).
#
# For each version of VERSIONS (default 3.10 3.12 3.13), found as pyenv's
# newest installed patch release or as pythonX.Y on PATH: a fresh virtual
# environment in a temporary folder, a regular install of this repository with
# its newest dependency versions (".[test]"), and the tests most sensitive to
# the interpreter and to numpy / scipy / highspy / OpenCV releases: the
# solvers, the learners and their exact references, data reading, storage,
# scoring, the docstring examples, and one end-to-end command (predict). The
# whole suite runs on python3 in CI, and with the oldest pinned dependencies
# in scripts/oldest_deps.sh.
#
# Usage (from anywhere):  bash scripts/python_versions.sh [VERSION ...]
# Exit status: 0 when every version passed; a version that is missing fails.
# Network: only pip, to fetch the wheels.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.10 3.12 3.13)
tests=(tests/learn tests/inference tests/datasets tests/io tests/evaluate tests/report
       tests/test_doctests.py tests/test_numerics.py tests/test_predict.py)

find_python() {       # the newest pyenv X.Y.Z of X.Y, else pythonX.Y on PATH
  local v="$1" found=""
  if command -v pyenv >/dev/null 2>&1; then
    found="$(ls -d "$(pyenv root)/versions/$v".* 2>/dev/null | sort -V | tail -n 1)"
    [ -n "$found" ] && [ -x "$found/bin/python$v" ] && { echo "$found/bin/python$v"; return; }
  fi
  command -v "python$v" 2>/dev/null || true
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
failed=()
for v in "${versions[@]}"; do
  python="$(find_python "$v")"
  if [ -z "$python" ]; then
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
  if "$venv/bin/pytest" -q -x -p no:cacheprovider "${tests[@]}"; then
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
