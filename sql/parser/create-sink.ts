// `CREATE SINK [IF NOT EXISTS] name FROM relation WITH (...) [FORMAT x ENCODE y [( ... )]]` and
// `CREATE SINK [IF NOT EXISTS] name AS query WITH (...) [FORMAT ...]`, RisingWave's syntax. The
// options list is the last `WITH (` at depth 0 (a query never ends with one); the query between
// AS and it is parsed as a statement of its own, so FOR SYSTEM_TIME and the rest work inside.

import type { Node, OxbowCreateSink } from './ast.js';
import { readConnectorTail } from './connector-clause.js';
import { parsePostgresStatement, type StatementSlice } from './postgres-statement.js';
import { rangeVarOf, readQualifiedName, syntaxErrorAt } from './syntax.js';
import { TextRewrite } from './text-rewrite.js';
import { isSymbol, isWord } from './tokenizer.js';

export function parseCreateSink(slice: StatementSlice, sinkWordIndex: number): { OxbowCreateSink: OxbowCreateSink } {
  const { source, tokens, end } = slice;
  let index = sinkWordIndex + 1;
  let ifNotExists = false;
  if (isWord(tokens[index], 'IF') && isWord(tokens[index + 1], 'NOT') && isWord(tokens[index + 2], 'EXISTS')) {
    ifNotExists = true;
    index += 3;
  }
  const name = readQualifiedName(source, tokens, index);
  index = name.next;
  let withIndex = -1;
  let depth = 0;
  for (let scan = index; scan < end; scan++) {
    const token = tokens[scan]!;
    if (isSymbol(token, '(')) depth++;
    else if (isSymbol(token, ')')) depth--;
    else if (depth === 0 && isWord(token, 'WITH') && isSymbol(tokens[scan + 1], '(')) withIndex = scan;
  }
  if (withIndex < 0) throw syntaxErrorAt(source, tokens, end, slice.to);
  // The tail's clauses are only read here; the rewrite is discarded.
  const tail = readConnectorTail(source, tokens, withIndex, end, new TextRewrite(source, slice.from, slice.to), true);
  const sink: { name: OxbowCreateSink['name']; ifNotExists: boolean; from?: OxbowCreateSink['from']; query?: Node; connector: OxbowCreateSink['connector'] } = {
    name: rangeVarOf(name),
    ifNotExists,
    connector: tail.connector!,
  };
  if (isWord(tokens[index], 'FROM')) {
    const relation = readQualifiedName(source, tokens, index + 1);
    if (relation.next !== withIndex) throw syntaxErrorAt(source, tokens, relation.next);
    sink.from = rangeVarOf(relation);
  } else if (isWord(tokens[index], 'AS')) {
    if (index + 1 >= withIndex) throw syntaxErrorAt(source, tokens, withIndex);
    const querySlice: StatementSlice = {
      source,
      tokens,
      first: index + 1,
      end: withIndex,
      from: tokens[index + 1]!.start,
      to: tokens[withIndex - 1]!.end,
    };
    sink.query = parsePostgresStatement(querySlice).node;
  } else {
    throw syntaxErrorAt(source, tokens, index);
  }
  return { OxbowCreateSink: sink };
}
