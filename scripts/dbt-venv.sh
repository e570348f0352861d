#!/usr/bin/env bash
# Makes the Python venv test/tools/dbt.test.ts runs dbt from: dbt-core with dbt-postgres, both
# ~=1.9.0, from PyPI (later dbt-core releases fetch a wheel from outside the package registries at
# install). .ci/run calls it; a developer runs it once (`bash scripts/dbt-venv.sh`). It prints the
# venv's dbt and is a no-op when the venv already holds these pins (scripts/python-venv.sh).
#
# Where: $OXBOW_DBT_VENV, else .cache/dbt in the repository. A venv of its own: dbt pins its
# dependencies (protobuf, jinja2 ...) tighter than the client-tool venv's libraries need.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/python-venv.sh "${OXBOW_DBT_VENV:-$PWD/.cache/dbt}" dbt \
  "dbt-core~=1.9.0" \
  "dbt-postgres~=1.9.0"
