// The clauses RisingWave puts after a table, source or sink definition, which PostgreSQL lacks or
// spells differently: `WITH (connector = 'kafka', properties.bootstrap.server = 'h:p', ...)` with
// dotted keys, `FORMAT PLAIN ENCODE JSON [( key = 'value', ... )]`, `INCLUDE key [AS name]`,
// `APPEND ONLY` and the table-level `ON CONFLICT OVERWRITE | DO NOTHING | ...`. This file reads them from tokens into a ConnectorSpec and blanks them out of the
// text PostgreSQL will parse. A `WITH (...)` without a `connector` key (e.g. `retention = '1 day'`)
// is left to PostgreSQL, with its dotted keys quoted so they arrive as one option name.

import type { ConnectorSpec } from './ast.js';
import { identifierName, isWordToken, literalText, syntaxErrorAt } from './syntax.js';
import type { TextRewrite } from './text-rewrite.js';
import { isSymbol, isWord, matchingClose, type Token } from './tokenizer.js';

export interface OptionList {
  readonly options: Record<string, string>;
  /** Index of the closing parenthesis. */
  readonly close: number;
  /** Token ranges [first, last] of dotted keys (for quoting when PostgreSQL parses the list). */
  readonly dottedKeys: readonly (readonly [number, number])[];
}

/** Reads `( key = value, ... )` with the `(` at tokens[open]. Values: strings, numbers, words. */
export function readOptionList(source: string, tokens: readonly Token[], open: number): OptionList {
  const close = matchingClose(tokens, open);
  if (close < 0) throw syntaxErrorAt(source, tokens, tokens.length);
  const options: Record<string, string> = {};
  const dottedKeys: [number, number][] = [];
  let index = open + 1;
  while (index < close) {
    const keyStart = index;
    if (!isWordToken(tokens[index]) && tokens[index]?.kind !== 'string') throw syntaxErrorAt(source, tokens, index);
    const parts = [literalText(source, tokens[index]!)];
    index++;
    while (isSymbol(tokens[index], '.') && (isWordToken(tokens[index + 1]) || tokens[index + 1]?.kind === 'number')) {
      parts.push(tokens[index + 1]!.kind === 'number' ? source.slice(tokens[index + 1]!.start, tokens[index + 1]!.end) : identifierName(source, tokens[index + 1]!));
      index += 2;
    }
    if (parts.length > 1) dottedKeys.push([keyStart, index - 1]);
    if (!isSymbol(tokens[index], '=')) throw syntaxErrorAt(source, tokens, index);
    index++;
    let value = '';
    const valueToken = tokens[index];
    if (valueToken === undefined || index >= close) throw syntaxErrorAt(source, tokens, index);
    if ((isSymbol(valueToken, '-') || isSymbol(valueToken, '+')) && tokens[index + 1]?.kind === 'number') {
      value = valueToken.upper + source.slice(tokens[index + 1]!.start, tokens[index + 1]!.end);
      index += 2;
    } else {
      value = literalText(source, valueToken);
      index++;
    }
    options[parts.join('.')] = value;
    if (isSymbol(tokens[index], ',')) index++;
    else if (index !== close) throw syntaxErrorAt(source, tokens, index);
  }
  return { options, close, dottedKeys };
}

/** Quotes dotted option keys in place (`a.b.c` becomes `"a.b.c"`) for PostgreSQL's grammar. */
export function quoteDottedKeys(source: string, tokens: readonly Token[], list: OptionList, rewrite: TextRewrite): void {
  for (const [first, last] of list.dottedKeys) {
    const start = tokens[first]!.start;
    const end = tokens[last]!.end;
    rewrite.replace(start, end, `"${source.slice(start, end).replace(/"/g, '')}"`);
  }
}

export interface ConnectorTail {
  readonly connector?: ConnectorSpec;
  readonly appendOnly: boolean;
  /** RisingWave's table-level `ON CONFLICT OVERWRITE | IGNORE | DO NOTHING | DO UPDATE FULL | DO UPDATE IF NOT NULL`, lower-cased. */
  readonly onConflict?: string;
}

const tailKeywords = new Set(['INCLUDE', 'WITH', 'FORMAT', 'ROW', 'APPEND']);

/**
 * Reads oxbow's clauses among tokens[from, to) at parenthesis depth 0 (the tail after a column
 * list), blanking them in `rewrite`. `forceConnector`: a WITH list is connector options even
 * without a `connector` key (CREATE SOURCE, CREATE SINK).
 */
export function readConnectorTail(
  source: string,
  tokens: readonly Token[],
  from: number,
  to: number,
  rewrite: TextRewrite,
  forceConnector: boolean,
): ConnectorTail {
  let options: Record<string, string> | undefined;
  let format: string | undefined;
  let encode: string | undefined;
  let encodeOptions: Record<string, string> | undefined;
  const include: { what: string; alias?: string }[] = [];
  let appendOnly = false;
  let onConflict: string | undefined;
  let fromSource: { source: string; table: string } | undefined;
  let index = from;
  while (index < to) {
    const token = tokens[index]!;
    if (isSymbol(token, '(') || isSymbol(token, '[')) {
      index = matchingClose(tokens, index) + 1 || to;
      continue;
    }
    if (isWord(token, 'APPEND') && isWord(tokens[index + 1], 'ONLY')) {
      appendOnly = true;
      rewrite.blank(token.start, tokens[index + 1]!.end);
      index += 2;
      continue;
    }
    if (isWord(token, 'ON') && isWord(tokens[index + 1], 'CONFLICT')) {
      let next = index + 2;
      const words: string[] = [];
      while (next < to && tokens[next]!.kind === 'identifier' && !tailKeywords.has(tokens[next]!.upper)) words.push(tokens[next++]!.upper.toLowerCase());
      if (words.length === 0) throw syntaxErrorAt(source, tokens, next);
      onConflict = words.join(' ');
      rewrite.blank(token.start, tokens[next - 1]!.end);
      index = next;
      continue;
    }
    if (isWord(token, 'FROM') && isWordToken(tokens[index + 1]) && isWord(tokens[index + 2], 'TABLE') && tokens[index + 3]?.kind === 'string') {
      // RisingWave's table of a shared CDC source: FROM source TABLE 'schema.table'.
      fromSource = { source: identifierName(source, tokens[index + 1]!), table: literalText(source, tokens[index + 3]!) };
      rewrite.blank(token.start, tokens[index + 3]!.end);
      index += 4;
      continue;
    }
    if (isWord(token, 'INCLUDE')) {
      let next = index + 1;
      if (!isWordToken(tokens[next])) throw syntaxErrorAt(source, tokens, next);
      const what = identifierName(source, tokens[next]!);
      next++;
      // INCLUDE header 'name' [type]: everything up to AS or the next clause belongs to it.
      while (next < to && !isWord(tokens[next], 'AS') && !tailKeywords.has(tokens[next]!.upper)) next++;
      let alias: string | undefined;
      if (isWord(tokens[next], 'AS')) {
        if (!isWordToken(tokens[next + 1])) throw syntaxErrorAt(source, tokens, next + 1);
        alias = identifierName(source, tokens[next + 1]!);
        next += 2;
      }
      include.push(alias === undefined ? { what } : { what, alias });
      rewrite.blank(token.start, tokens[next - 1]!.end);
      index = next;
      continue;
    }
    if (isWord(token, 'WITH') && isSymbol(tokens[index + 1], '(')) {
      const list = readOptionList(source, tokens, index + 1);
      if (forceConnector || 'connector' in list.options) {
        options = list.options;
        rewrite.blank(token.start, tokens[list.close]!.end);
      } else quoteDottedKeys(source, tokens, list, rewrite);
      index = list.close + 1;
      continue;
    }
    const rowFormat = isWord(token, 'ROW') && isWord(tokens[index + 1], 'FORMAT');
    if (isWord(token, 'FORMAT') || rowFormat) {
      let next = rowFormat ? index + 2 : index + 1;
      if (!isWordToken(tokens[next])) throw syntaxErrorAt(source, tokens, next);
      format = identifierName(source, tokens[next]!).toUpperCase();
      next++;
      if (isWord(tokens[next], 'ENCODE')) {
        if (!isWordToken(tokens[next + 1])) throw syntaxErrorAt(source, tokens, next + 1);
        encode = identifierName(source, tokens[next + 1]!).toUpperCase();
        next += 2;
        if (isSymbol(tokens[next], '(')) {
          const list = readOptionList(source, tokens, next);
          encodeOptions = list.options;
          next = list.close + 1;
        }
      }
      rewrite.blank(token.start, tokens[next - 1]!.end);
      index = next;
      continue;
    }
    index++;
  }
  if (options === undefined && (format !== undefined || include.length > 0 || fromSource !== undefined)) options = {};
  if (options === undefined) return onConflict === undefined ? { appendOnly } : { appendOnly, onConflict };
  const connector: {
    options: Record<string, string>;
    format?: string;
    encode?: string;
    encodeOptions?: Record<string, string>;
    include?: { what: string; alias?: string }[];
    fromSource?: { source: string; table: string };
  } = { options };
  if (fromSource !== undefined) connector.fromSource = fromSource;
  if (format !== undefined) connector.format = format;
  if (encode !== undefined) connector.encode = encode;
  if (encodeOptions !== undefined) connector.encodeOptions = encodeOptions;
  if (include.length > 0) connector.include = include;
  return onConflict === undefined ? { connector, appendOnly } : { connector, appendOnly, onConflict };
}
