#!/usr/bin/env bash
# Makes the Python venv test/tools/dbt.test.ts runs dbt from: dbt-core with dbt-postgres, both
# ~=1.9.0, from PyPI (later dbt-core releases fetch a wheel from outside the package registries at
# install). .ci/run calls it; a developer runs it once (`bash scripts/dbt-venv.sh`). It prints the
# venv's dbt and is a no-op when the venv already holds these pins.
#
# Where: $OXBOW_DBT_VENV, else .cache/dbt in the repository. A venv of its own: dbt pins its
# dependencies (protobuf, jinja2 ...) tighter than the client-tool venv's libraries need.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${OXBOW_DBT_VENV:-$PWD/.cache/dbt}"
pins=(
  "dbt-core~=1.9.0"
  "dbt-postgres~=1.9.0"
)
stamp="$venv/.oxbow-pins"
want="$(printf '%s\n' "${pins[@]}")"
if [ -x "$venv/bin/dbt" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "$venv/bin/dbt"
  exit 0
fi
python="${PYTHON:-$(command -v python3 || true)}"
if [ -z "$python" ]; then
  echo "dbt-venv: python3 is not installed (apt-get install python3 python3-venv)" >&2
  exit 1
fi
"$python" -m venv "$venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}" >&2
printf '%s\n' "$want" > "$stamp"
echo "$venv/bin/dbt"
