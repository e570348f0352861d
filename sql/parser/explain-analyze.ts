// EXPLAIN of an existing view, RisingWave's forms:
//   EXPLAIN ANALYZE [MATERIALIZED VIEW] name    the running view's operators with their counters
//   EXPLAIN [MATERIALIZED VIEW] name            the view's plan (a materialized view's streaming plan)
// become OxbowExplainAnalyzeView (`analyze: false` for the second). Only a (qualified) name through
// the end of the statement takes this path; `EXPLAIN [ANALYZE] SELECT ...` and every other
// statement stay PostgreSQL's ExplainStmt.

import type { OxbowExplainAnalyzeView } from './ast.js';
import type { StatementSlice } from './postgres-statement.js';
import { isNameToken, rangeVarOf, readQualifiedName, syntaxErrorAt } from './syntax.js';
import { isWord } from './tokenizer.js';

export function parseExplainAnalyzeView(slice: StatementSlice): { OxbowExplainAnalyzeView: OxbowExplainAnalyzeView } | undefined {
  const { tokens, first, end, source } = slice;
  if (!isWord(tokens[first], 'EXPLAIN')) return undefined;
  const analyze = isWord(tokens[first + 1], 'ANALYZE');
  let index = analyze ? first + 2 : first + 1;
  const explicit = isWord(tokens[index], 'MATERIALIZED') && isWord(tokens[index + 1], 'VIEW');
  if (explicit) index += 2;
  if (!isNameToken(tokens[index])) {
    if (explicit) throw syntaxErrorAt(source, tokens, index);
    return undefined;
  }
  const name = readQualifiedName(source, tokens, index);
  if (name.next < end) {
    if (explicit) throw syntaxErrorAt(source, tokens, name.next);
    return undefined;
  }
  return { OxbowExplainAnalyzeView: analyze ? { relation: rangeVarOf(name) } : { relation: rangeVarOf(name), analyze: false } };
}
