#!/usr/bin/env bash
# Makes the Python venv the client-tool tests (test/tools/) run their scripts in: SQLAlchemy 2 with
# psycopg 3 and psycopg2, asyncpg, and pgcli (test/tools/pgcli.test.ts runs pgcli's own code; a
# user can try oxbow with `.cache/python-tools/bin/pgcli postgres://oxbow@127.0.0.1:6543/oxbow`),
# pinned to the releases oxbow is tested against and installed from PyPI. .ci/run calls it; a
# developer runs it once (`bash scripts/python-tools.sh`). It prints the venv's python and is a
# no-op when the venv already holds these pins (scripts/python-venv.sh).
#
# Where: $OXBOW_PYTHON_VENV, else .cache/python-tools in the repository. psycopg[binary] and
# psycopg2-binary ship their own libpq: no Debian libpq-dev needed.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/python-venv.sh "${OXBOW_PYTHON_VENV:-$PWD/.cache/python-tools}" python \
  "sqlalchemy==2.0.58" \
  "psycopg[binary]==3.2.13" \
  "psycopg2-binary==2.9.13" \
  "asyncpg==0.32.0" \
  "pgcli==4.3.0"
