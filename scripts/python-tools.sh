#!/usr/bin/env bash
# Makes the Python venv the client-tool tests (test/tools/) run their scripts in: SQLAlchemy 2 with
# psycopg 3 and psycopg2, asyncpg, and pgcli (test/tools/pgcli.test.ts runs pgcli's own code; a
# user can try oxbow with `.cache/python-tools/bin/pgcli postgres://oxbow@127.0.0.1:6543/oxbow`), pinned to the releases oxbow is tested against and installed
# from PyPI. .ci/run calls it; a developer runs it once (`bash scripts/python-tools.sh`). It prints
# the venv's python and is a no-op when the venv already holds these pins.
#
# Where: $OXBOW_PYTHON_VENV, else .cache/python-tools in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${OXBOW_PYTHON_VENV:-$PWD/.cache/python-tools}"
# psycopg[binary] and psycopg2-binary ship their own libpq: no Debian libpq-dev needed.
pins=(
  "sqlalchemy==2.0.58"
  "psycopg[binary]==3.2.13"
  "psycopg2-binary==2.9.13"
  "asyncpg==0.32.0"
  "pgcli==4.3.0"
)
stamp="$venv/.oxbow-pins"
want="$(printf '%s\n' "${pins[@]}")"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "$venv/bin/python"
  exit 0
fi
python="${PYTHON:-$(command -v python3 || true)}"
if [ -z "$python" ]; then
  echo "python-tools: python3 is not installed (apt-get install python3 python3-venv)" >&2
  exit 1
fi
"$python" -m venv "$venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}" >&2
printf '%s\n' "$want" > "$stamp"
echo "$venv/bin/python"
