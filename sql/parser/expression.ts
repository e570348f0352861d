// Parses one scalar expression that sits inside an oxbow clause (the `e` of `FOR SYSTEM_TIME AS OF
// e`, a WATERMARK's expression) with PostgreSQL's grammar, by parsing ` SELECT <e>` and taking the
// single target, locations mapped back to the original text. RisingWave's interval shorthand
// `'5' SECOND` (a string followed by a unit, meaning `INTERVAL '5' SECOND`) is accepted here.

import type { Node } from './ast.js';
import { parseWithGrammar } from './postgres-grammar.js';
import { syntaxErrorAt } from './syntax.js';
import { TextRewrite } from './text-rewrite.js';
import { isWord, tokenize, type Token } from './tokenizer.js';

const intervalUnits = new Set(['YEAR', 'YEARS', 'MONTH', 'MONTHS', 'DAY', 'DAYS', 'HOUR', 'HOURS', 'MINUTE', 'MINUTES', 'SECOND', 'SECONDS']);

/** Tokens of source[from, to), offsets in `source`. */
export function tokenizeRange(source: string, from: number, to: number): Token[] {
  const tokens = tokenize(source.slice(from, to));
  if (from === 0) return tokens;
  return tokens.map((token) => ({ kind: token.kind, start: token.start + from, end: token.end + from, upper: token.upper }));
}

/**
 * The expression source[from, to). `followingToken` is the token after the range (for the error
 * when the range is empty); `statementEnd` is where the statement's text ends.
 */
export function parseExpressionRange(
  source: string,
  from: number,
  to: number,
  context: { readonly tokensAfter: readonly Token[]; readonly intervalShorthand: boolean },
): Node {
  const tokens = tokenizeRange(source, from, to);
  if (tokens.length === 0) throw syntaxErrorAt(source, context.tokensAfter, 0);
  const rewrite = new TextRewrite(source, from, to).insert(from, ' SELECT ');
  if (context.intervalShorthand) {
    for (let index = 0; index + 1 < tokens.length; index++) {
      const token = tokens[index]!;
      const unit = tokens[index + 1]!;
      if (token.kind !== 'string' || unit.kind !== 'identifier' || !intervalUnits.has(unit.upper)) continue;
      if (isWord(tokens[index - 1], 'INTERVAL')) continue;
      rewrite.insert(token.start, 'INTERVAL ');
    }
  }
  const nodes = parseWithGrammar(rewrite.build(), source);
  const select = (nodes[0] as { SelectStmt?: Record<string, unknown> } | undefined)?.SelectStmt;
  const targets = select?.targetList as { ResTarget: { val: Node; location?: number } }[] | undefined;
  if (nodes.length !== 1 || select === undefined || targets === undefined || targets.length !== 1) {
    // A comma or clause keyword inside the range: report the first token PostgreSQL would not take.
    const second = targets?.[1]?.ResTarget.location;
    const index = second === undefined ? 0 : tokens.findIndex((token) => token.start >= second) - 1;
    throw syntaxErrorAt(source, tokens, Math.max(index, 0));
  }
  const extra = Object.keys(select).filter((key) => key !== 'targetList' && key !== 'limitOption' && key !== 'op');
  if (extra.length > 0) throw syntaxErrorAt(source, tokens, 0);
  // `e word` parses as `e AS word` in a SELECT list; here a trailing word is an error, at that word.
  if ((targets[0]!.ResTarget as { name?: string }).name !== undefined) throw syntaxErrorAt(source, tokens, tokens.length - 1);
  return targets[0]!.ResTarget.val;
}
