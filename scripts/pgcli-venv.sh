#!/usr/bin/env bash
# Installs pgcli (pinned, from PyPI) into a Python virtual environment of its own, .cache/pgcli-venv,
# and prints the venv's python: what test/tools/pgcli.test.ts runs pgcli's own code with, and what
# a user can try oxbow with (`.cache/pgcli-venv/bin/pgcli postgres://oxbow@127.0.0.1:6543/oxbow`).
# Needs python3 with its venv module (Debian: apt-get install -y python3-venv).
# Usage: scripts/pgcli-venv.sh        (prints the python path; installs the first time)
set -euo pipefail
PGCLI_VERSION=4.3.0
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${OXBOW_PGCLI_VENV:-$root/.cache/pgcli-venv}"
python="$venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c "import pgcli, sys; sys.exit(0 if pgcli.__version__ == '$PGCLI_VERSION' else 1)" 2>/dev/null; then
  command -v python3 >/dev/null 2>&1 || { echo "pgcli-venv: python3 not found (Debian: apt-get install -y python3 python3-venv)" >&2; exit 1; }
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || { echo "pgcli-venv: python3 -m venv failed (Debian: apt-get install -y python3-venv)" >&2; exit 1; }
  "$python" -m pip install -q --disable-pip-version-check "pgcli==$PGCLI_VERSION" >&2 \
    || { echo "pgcli-venv: pip could not install pgcli==$PGCLI_VERSION" >&2; exit 1; }
fi
echo "$python"
