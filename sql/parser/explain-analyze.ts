// EXPLAIN ANALYZE of a running materialized view, RisingWave's form:
//   EXPLAIN ANALYZE [MATERIALIZED VIEW] name
// becomes OxbowExplainAnalyzeView. Only a (qualified) name through the end of the statement takes
// this path; `EXPLAIN ANALYZE SELECT ...` and every other statement stay PostgreSQL's ExplainStmt.

import type { OxbowExplainAnalyzeView } from './ast.js';
import type { StatementSlice } from './postgres-statement.js';
import { isNameToken, rangeVarOf, readQualifiedName, syntaxErrorAt } from './syntax.js';
import { isWord } from './tokenizer.js';

export function parseExplainAnalyzeView(slice: StatementSlice): { OxbowExplainAnalyzeView: OxbowExplainAnalyzeView } | undefined {
  const { tokens, first, end, source } = slice;
  if (!isWord(tokens[first], 'EXPLAIN') || !isWord(tokens[first + 1], 'ANALYZE')) return undefined;
  let index = first + 2;
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
  return { OxbowExplainAnalyzeView: { relation: rangeVarOf(name) } };
}
