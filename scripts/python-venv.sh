#!/usr/bin/env bash
# Makes a Python venv at VENV holding exactly the pinned PyPI packages PIN..., and prints the path
# of its bin/PROGRAM. A no-op when the venv already holds these pins (a stamp file in the venv
# records them). The venvs of the tests are made by python-tools.sh and dbt-venv.sh through it.
# Usage: scripts/python-venv.sh VENV PROGRAM PIN...    ($PYTHON: the python3 that makes the venv)
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: scripts/python-venv.sh VENV PROGRAM PIN..." >&2
  exit 2
fi
venv="$1"
program="$2"
shift 2
stamp="$venv/.oxbow-pins"
want="$(printf '%s\n' "$@")"
if [ -x "$venv/bin/$program" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "$venv/bin/$program"
  exit 0
fi
python="${PYTHON:-$(command -v python3 || true)}"
if [ -z "$python" ]; then
  echo "python-venv: python3 is not installed (apt-get install python3 python3-venv)" >&2
  exit 1
fi
"$python" -m venv "$venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2
printf '%s\n' "$want" > "$stamp"
echo "$venv/bin/$program"
