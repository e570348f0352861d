#!/usr/bin/env bash
# Resolves the PostgreSQL JDBC driver (pgjdbc) from Maven Central into .cache/jdbc/ and prints the
# jar's path: what the pgjdbc metadata test (test/tools/jdbc.test.ts) and a user trying a JDBC tool
# against oxbow run. Needs a JDK 17+ (javac: the test runs a single-file Java program) and Maven:
#   Debian: apt-get install -y openjdk-17-jdk-headless maven
# Usage: scripts/jdbc-tools.sh        (prints the jar path; downloads it the first time)
set -euo pipefail
PGJDBC_VERSION=42.7.4
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${OXBOW_JDBC_CACHE:-$root/.cache/jdbc}"
jar="$dir/postgresql-$PGJDBC_VERSION.jar"
if [ ! -s "$jar" ]; then
  for tool in javac mvn; do
    command -v "$tool" >/dev/null 2>&1 || { echo "jdbc-tools: $tool not found: a JDK 17+ and Maven are required (Debian: apt-get install -y openjdk-17-jdk-headless maven)" >&2; exit 1; }
  done
  mkdir -p "$dir"
  mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="org.postgresql:postgresql:$PGJDBC_VERSION:jar" -DoutputDirectory="$dir" >&2 \
    || { echo "jdbc-tools: mvn could not resolve org.postgresql:postgresql:$PGJDBC_VERSION" >&2; exit 1; }
fi
echo "$jar"
