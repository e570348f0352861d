// Records the catalog queries client drivers send, from a PostgreSQL 15 log written with
// log_statement=all, into test/tools/golden/catalog-queries.json for catalog-queries.test.ts.
//
//   node test/tools/record-catalog-queries.mjs LOGFILE PORT > test/tools/golden/catalog-queries.json
//
// How the log was made: a fresh PostgreSQL 15 (log_statement=all, TimeZone=UTC) with databases
// a and b; sqlalchemy_flow.py with postgresql+psycopg:// and asyncpg_flow.py on a, sqlalchemy_flow.py
// with postgresql+psycopg2:// on b. PORT is that server's, still running: an OID of a user table
// in a query (SQLAlchemy passes the OIDs it read) becomes `'name'::regclass::oid`, so the query
// means the same on a server whose OIDs differ; a parameter holding one becomes { "regclass": name },
// which the test turns into that server's OID.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const [logFile, port] = process.argv.slice(2);
const lines = readFileSync(logFile, 'utf8').split('\n');
const entries = [];
let current;
for (const line of lines) {
  const head = /^\S+ \S+ UTC \[\d+\] (LOG|DETAIL|ERROR|STATEMENT):  (.*)$/.exec(line);
  if (head === null) {
    if (current !== undefined && line.startsWith('\t')) current.text += '\n' + line.slice(1);
    continue;
  }
  current = undefined;
  if (head[1] === 'LOG') {
    const statement = /^(?:statement|execute [^:]+): (.*)$/s.exec(head[2]);
    if (statement !== null) entries.push((current = { text: statement[1], params: [] }));
  } else if (head[1] === 'DETAIL' && head[2].startsWith('parameters: ') && entries.length > 0) {
    const params = [];
    const pattern = /\$\d+ = (NULL|'((?:[^']|'')*)')/g;
    let match;
    while ((match = pattern.exec(head[2])) !== null) params.push(match[1] === 'NULL' ? null : match[2].replace(/''/g, "'"));
    entries[entries.length - 1].params = params;
  }
}

const catalogQuery = /\bpg_catalog\.|\bpg_[a-z_]+\b|to_regtype|current_schema\(\)|version\(\)|^\s*show\s/i;
const writing = /^\s*(insert|update|delete|create|drop|copy|begin|commit|rollback|savepoint|release|declare|fetch|close)\b/i;

/** This script's own query (the log may hold it from an earlier run). */
const OWN_QUERY = 'SELECT oid, relname FROM pg_class WHERE oid >= 16384';
function userTables(database) {
  const out = execFileSync('psql', ['-h', '127.0.0.1', '-p', port, '-U', 'postgres', '-d', database, '-Atc', OWN_QUERY], { encoding: 'utf8' });
  return new Map(out.trim().split('\n').filter(Boolean).map((row) => row.split('|')));
}
const oids = new Map([...userTables('a'), ...userTables('b')]);
const regclass = (oid) => `'${oids.get(oid)}'::regclass::oid`;

const seen = new Set();
const queries = [];
for (const entry of entries) {
  if (!catalogQuery.test(entry.text) || writing.test(entry.text) || entry.text === OWN_QUERY) continue;
  let text = entry.text.replace(/\b(\d{5,})\b/g, (whole, oid) => (oids.has(oid) ? regclass(oid) : whole));
  const params = entry.params.map((value) => (value !== null && oids.has(value) ? { regclass: oids.get(value) } : value));
  const key = JSON.stringify([text, params]);
  if (seen.has(key)) continue;
  seen.add(key);
  queries.push({ text, params });
}
process.stdout.write(JSON.stringify(queries, null, 1) + '\n');
