// String functions, as PostgreSQL 15 with a UTF-8 database: lengths count characters (code
// points), positions are 1-based in characters, and the "any"-typed ones (concat, concat_ws,
// format) print their arguments with each type's output function (booleans as true/false like a
// text cast). Regular expressions go through patterns.ts.

import { SqlError, SqlState } from '../errors.js';
import type { DataType } from '../types.js';
import { arrayOf, type } from '../types.js';
import type { SqlArray, Value } from '../value.js';
import { formatValue } from '../text-format.js';
import { utf8Length } from '../collation.js';
import { createHash } from 'node:crypto';
import { ANY, defineFunction, textArray } from './registry.js';
import { regexMatcher } from './patterns.js';
import type { EvalContext } from '../eval-context.js';

/** Code points of a string (surrogate pairs count once). */
function characters(text: string): string[] {
  return Array.from(text);
}

/** A low surrogate: the second half of a pair, which does not count as a character. */
const LOW_SURROGATE = /[\udc00-\udfff]/;

function characterCount(text: string): number {
  // Most text has no surrogate pair: its length is its UTF-16 length (the regex scans natively,
  // and flattens a concatenated string once, where charCodeAt walks it per character).
  if (!LOW_SURROGATE.test(text)) return text.length;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0xdc00 || code > 0xdfff) count++;
  }
  return count;
}

function isAscii(text: string): boolean {
  return /^[\x00-\x7f]*$/.test(text);
}

/** Characters [start, start + count) with PostgreSQL's substr rules (start may be <= 0). */
function substring(text: string, start: number, count?: number): string {
  if (count !== undefined && count < 0) throw new SqlError(SqlState.substringError, 'negative substring length not allowed');
  let first = start;
  let end = count === undefined ? Infinity : start + count;
  if (first < 1) first = 1;
  if (end <= first) return '';
  if (isAscii(text)) return text.slice(first - 1, end === Infinity ? undefined : end - 1);
  const chars = characters(text);
  return chars.slice(first - 1, end === Infinity ? undefined : end - 1).join('');
}

/** The output function's text of an "any" argument (concat, format: booleans print as t/f). */
function textOf(value: Value, t: DataType, context: EvalContext): string {
  if (t.name === 'unknown' || t.name === 'text' || t.name === 'varchar' || t.name === 'name') return value as string;
  if (t.name === 'bpchar') return value as string;
  return formatValue(value, t, context);
}

for (const name of ['length', 'char_length', 'character_length'] as const) {
  defineFunction(name, { args: ['text'], returns: 'int4', argumentsBorrowed: true, impl: ([a]) => characterCount(a as string) });
  defineFunction(name, { args: ['bpchar'], returns: 'int4', impl: ([a]) => characterCount((a as string).replace(/ +$/, '')) });
}
defineFunction('length', { args: ['bytea'], returns: 'int4', impl: ([a]) => (a as Uint8Array).length });
defineFunction('octet_length', { args: ['text'], returns: 'int4', impl: ([a]) => utf8Length(a as string) });
defineFunction('octet_length', { args: ['bytea'], returns: 'int4', impl: ([a]) => (a as Uint8Array).length });
defineFunction('bit_length', { args: ['text'], returns: 'int4', impl: ([a]) => utf8Length(a as string) * 8 });
// The C locale (ctype) maps case for ASCII letters only, as PostgreSQL with LC_CTYPE=C.
export function asciiLower(text: string): string {
  return text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}
export function asciiUpper(text: string): string {
  return text.replace(/[a-z]+/g, (letters) => letters.toUpperCase());
}
defineFunction('lower', { args: ['text'], returns: 'text', impl: ([a]) => asciiLower(a as string) });
defineFunction('upper', { args: ['text'], returns: 'text', impl: ([a]) => asciiUpper(a as string) });
defineFunction('initcap', { args: ['text'], returns: 'text', impl: ([a]) => {
  let out = '';
  let previousAlphanumeric = false;
  for (const c of a as string) {
    const alphanumeric = /[A-Za-z0-9]/.test(c);
    out += alphanumeric ? (previousAlphanumeric ? asciiLower(c) : asciiUpper(c)) : c;
    previousAlphanumeric = alphanumeric;
  }
  return out;
} });

for (const name of ['substr', 'substring'] as const) {
  defineFunction(name, { args: ['text', 'int4'], returns: 'text', impl: ([a, b]) => substring(a as string, b as number) });
  defineFunction(name, { args: ['text', 'int4', 'int4'], returns: 'text', impl: ([a, b, c]) => substring(a as string, b as number, c as number) });
  defineFunction(name, { args: ['bytea', 'int4'], returns: 'bytea', impl: ([a, b]) => (a as Uint8Array).slice(Math.max(0, (b as number) - 1)) });
  defineFunction(name, { args: ['bytea', 'int4', 'int4'], returns: 'bytea', impl: ([a, b, c]) => {
    if ((c as number) < 0) throw new SqlError(SqlState.substringError, 'negative substring length not allowed');
    const start = b as number;
    const end = start + (c as number);
    return (a as Uint8Array).slice(Math.max(0, start - 1), Math.max(0, end - 1));
  } });
}
// substring(text from pattern): the first match, or its first parenthesized group
defineFunction('substring', { args: ['text', 'text'], returns: 'text', impl: ([a, b]) => {
  const match = regexMatcher(b as string, '').exec(a as string);
  if (match === null) return null;
  return match.length > 1 ? (match[1] ?? null) : match[0];
} });

function strpos(text: string, search: string): number {
  const index = text.indexOf(search);
  if (index < 0) return 0;
  return characterCount(text.slice(0, index)) + 1;
}
defineFunction('strpos', { args: ['text', 'text'], returns: 'int4', impl: ([a, b]) => strpos(a as string, b as string) });
// POSITION(substring IN string) is parsed as position(string, substring)
defineFunction('position', { args: ['text', 'text'], returns: 'int4', impl: ([a, b]) => strpos(a as string, b as string) });

function trimCharacters(text: string, set: string, leading: boolean, trailing: boolean): string {
  const chars = characters(text);
  const remove = new Set(characters(set));
  let start = 0;
  let end = chars.length;
  if (leading) while (start < end && remove.has(chars[start]!)) start++;
  if (trailing) while (end > start && remove.has(chars[end - 1]!)) end--;
  return chars.slice(start, end).join('');
}
for (const [name, leading, trailing] of [['btrim', true, true], ['ltrim', true, false], ['rtrim', false, true]] as const) {
  defineFunction(name, { args: ['text'], returns: 'text', impl: ([a]) => trimCharacters(a as string, ' ', leading, trailing) });
  defineFunction(name, { args: ['text', 'text'], returns: 'text', impl: ([a, b]) => trimCharacters(a as string, b as string, leading, trailing) });
}

const MAX_RESULT_CHARACTERS = 256 * 1024 * 1024;

function pad(text: string, length: number, fill: string, left: boolean): string {
  if (length > MAX_RESULT_CHARACTERS) throw new SqlError(SqlState.programLimitExceeded, 'requested length too large');
  const chars = characters(text);
  if (length <= 0) return '';
  if (chars.length >= length) return chars.slice(0, length).join('');
  const fillChars = characters(fill);
  if (fillChars.length === 0) return text;
  const needed = length - chars.length;
  let padding = '';
  for (let i = 0; i < needed; i++) padding += fillChars[i % fillChars.length];
  return left ? padding + text : text + padding;
}
for (const [name, left] of [['lpad', true], ['rpad', false]] as const) {
  defineFunction(name, { args: ['text', 'int4'], returns: 'text', impl: ([a, b]) => pad(a as string, b as number, ' ', left) });
  defineFunction(name, { args: ['text', 'int4', 'text'], returns: 'text', impl: ([a, b, c]) => pad(a as string, b as number, c as string, left) });
}

/** Every occurrence of `from` in `text` (left to right, not overlapping) replaced by `to`, taken literally. */
function replaceText(text: string, from: string, to: string): string {
  if (from === '') return text;
  // replaceAll reads `$&`, `$1`... in a replacement string: one with a `$` goes through split/join.
  return to.includes('$') ? text.split(from).join(to) : text.replaceAll(from, to);
}
defineFunction('replace', { args: ['text', 'text', 'text'], returns: 'text', argumentsBorrowed: true, impl: ([a, b, c]) => replaceText(a as string, b as string, c as string) });
defineFunction('translate', { args: ['text', 'text', 'text'], returns: 'text', impl: ([a, b, c]) => {
  const from = characters(b as string);
  const to = characters(c as string);
  let out = '';
  for (const ch of a as string) {
    const index = from.indexOf(ch);
    if (index < 0) out += ch;
    else if (index < to.length) out += to[index];
  }
  return out;
} });
/**
 * The field-th field of `text` split at `delimiter` (PostgreSQL's split_part). A field counted from
 * the start is found by walking the delimiters up to it, without splitting the rest of the text;
 * one counted from the end (field < 0) splits it, as the fields are cut from the left.
 */
function splitPart(text: string, delimiter: string, field: number): string {
  if (field === 0) throw new SqlError(SqlState.invalidParameterValue, 'field position must not be zero');
  if (delimiter === '') return field === 1 || field === -1 ? text : '';
  if (field < 0) {
    const parts = text.split(delimiter);
    const index = parts.length + field;
    return index >= 0 ? parts[index]! : '';
  }
  let start = 0;
  for (let n = 1; n < field; n++) {
    const at = text.indexOf(delimiter, start);
    if (at < 0) return '';
    start = at + delimiter.length;
  }
  const end = text.indexOf(delimiter, start);
  return end < 0 ? text.slice(start) : text.slice(start, end);
}
defineFunction('split_part', { args: ['text', 'text', 'int4'], returns: 'text', argumentsBorrowed: true, impl: ([a, b, c]) => splitPart(a as string, b as string, c as number) });
defineFunction('left', { args: ['text', 'int4'], returns: 'text', impl: ([a, b]) => {
  const chars = characters(a as string);
  const n = b as number;
  return (n >= 0 ? chars.slice(0, n) : chars.slice(0, Math.max(0, chars.length + n))).join('');
} });
defineFunction('right', { args: ['text', 'int4'], returns: 'text', impl: ([a, b]) => {
  const chars = characters(a as string);
  const n = b as number;
  return (n >= 0 ? chars.slice(Math.max(0, chars.length - n)) : chars.slice(Math.min(chars.length, -n))).join('');
} });
defineFunction('repeat', { args: ['text', 'int4'], returns: 'text', impl: ([a, b]) => {
  const count = b as number;
  if (count <= 0) return '';
  if ((a as string).length * count > 256 * 1024 * 1024) throw new SqlError(SqlState.programLimitExceeded, 'requested length too large');
  return (a as string).repeat(count);
} });
defineFunction('reverse', { args: ['text'], returns: 'text', impl: ([a]) => characters(a as string).reverse().join('') });
defineFunction('md5', { args: ['text'], returns: 'text', impl: ([a]) => createHash('md5').update(a as string, 'utf8').digest('hex') });
defineFunction('md5', { args: ['bytea'], returns: 'text', impl: ([a]) => createHash('md5').update(a as Uint8Array).digest('hex') });
defineFunction('sha256', { args: ['bytea'], returns: 'bytea', impl: ([a]) => new Uint8Array(createHash('sha256').update(a as Uint8Array).digest()) });
defineFunction('starts_with', { args: ['text', 'text'], returns: 'bool', impl: ([a, b]) => (a as string).startsWith(b as string) });
defineFunction('to_hex', { args: ['int4'], returns: 'text', impl: ([a]) => ((a as number) >>> 0).toString(16) });
defineFunction('to_hex', { args: ['int8'], returns: 'text', impl: ([a]) => BigInt.asUintN(64, a as bigint).toString(16) });
defineFunction('chr', { args: ['int4'], returns: 'text', impl: ([a]) => {
  const code = a as number;
  if (code < 0) throw new SqlError(SqlState.invalidParameterValue, 'character number must be positive');
  if (code === 0) throw new SqlError(SqlState.programLimitExceeded, 'null character not permitted');
  if (code > 0x10ffff) throw new SqlError(SqlState.programLimitExceeded, 'requested character too large for encoding: ' + code);
  if (code >= 0xd800 && code <= 0xdfff) throw new SqlError(SqlState.programLimitExceeded, 'requested character not valid for encoding: ' + code);
  return String.fromCodePoint(code);
} });
defineFunction('ascii', { args: ['text'], returns: 'int4', impl: ([a]) => ((a as string).length === 0 ? 0 : (a as string).codePointAt(0)!) });

// quoting
const reservedWords = new Set(['all', 'analyse', 'analyze', 'and', 'any', 'array', 'as', 'asc', 'asymmetric', 'both', 'case', 'cast', 'check', 'collate', 'column', 'constraint', 'create', 'current_catalog', 'current_date', 'current_role', 'current_time', 'current_timestamp', 'current_user', 'default', 'deferrable', 'desc', 'distinct', 'do', 'else', 'end', 'except', 'false', 'fetch', 'for', 'foreign', 'from', 'grant', 'group', 'having', 'in', 'initially', 'intersect', 'into', 'lateral', 'leading', 'limit', 'localtime', 'localtimestamp', 'not', 'null', 'offset', 'on', 'only', 'or', 'order', 'placing', 'primary', 'references', 'returning', 'select', 'session_user', 'some', 'symmetric', 'table', 'then', 'to', 'trailing', 'true', 'union', 'unique', 'user', 'using', 'variadic', 'when', 'where', 'window', 'with']);
export function quoteIdentifier(name: string): string {
  if (/^[a-z_][a-z0-9_$]*$/.test(name) && !reservedWords.has(name)) return name;
  return '"' + name.replace(/"/g, '""') + '"';
}
export function quoteLiteral(text: string): string {
  const escaped = text.replace(/'/g, "''");
  if (text.includes('\\')) return "E'" + escaped.replace(/\\/g, '\\\\') + "'";
  return "'" + escaped + "'";
}
defineFunction('quote_ident', { args: ['text'], returns: 'text', impl: ([a]) => quoteIdentifier(a as string) });
defineFunction('quote_literal', { args: ['text'], returns: 'text', impl: ([a]) => quoteLiteral(a as string) });
defineFunction('quote_nullable', { args: ['text'], returns: 'text', strict: false, impl: ([a]) => (a === null ? 'NULL' : quoteLiteral(a as string)) });

// "any"-typed variadic functions
defineFunction('concat', {
  args: [], variadic: ANY, returns: 'text', strict: false, impl: () => '',
  specialize: (types) => ({
    impl: (args, context) => {
      let out = '';
      for (let i = 0; i < args.length; i++) if (args[i] !== null) out += textOf(args[i]!, types[i]!, context);
      return out;
    },
  }),
});
defineFunction('concat_ws', {
  args: ['text'], variadic: ANY, returns: 'text', strict: false, impl: () => null,
  specialize: (types) => ({
    impl: (args, context) => {
      if (args[0] === null) return null;
      const parts: string[] = [];
      for (let i = 1; i < args.length; i++) if (args[i] !== null) parts.push(textOf(args[i]!, types[i]!, context));
      return parts.join(args[0] as string);
    },
  }),
});

/** format(): %s, %I, %L, %% with optional argument positions (%2$s) and widths (%-10s, %*s). */
function formatString(template: string, args: readonly Value[], types: readonly DataType[], context: EvalContext): string {
  let out = '';
  let next = 0;
  for (let i = 0; i < template.length; i++) {
    const c = template[i]!;
    if (c !== '%') {
      out += c;
      continue;
    }
    const spec = /^(?:(\d+)\$)?(-)?(\d+|\*(?:\d+\$)?)?([sIL%])/.exec(template.slice(i + 1));
    if (spec === null) {
      if (i + 1 >= template.length) throw new SqlError(SqlState.invalidParameterValue, 'unterminated format() type specifier', { hint: 'For a single "%" use "%%".' });
      throw new SqlError(SqlState.invalidParameterValue, `unrecognized format() type specifier "${template[i + 1]}"`, { hint: 'For a single "%" use "%%".' });
    }
    i += spec[0].length;
    if (spec[4] === '%') {
      out += '%';
      continue;
    }
    let width = 0;
    let leftAlign = spec[2] === '-';
    if (spec[3] !== undefined) {
      if (spec[3].startsWith('*')) {
        const widthIndex = spec[3].length > 1 ? Number(spec[3].slice(1, -1)) - 1 : next++;
        const widthValue = args[widthIndex];
        width = widthValue === null || widthValue === undefined ? 0 : Number(widthValue);
        if (width < 0) {
          leftAlign = true;
          width = -width;
        }
      } else width = Number(spec[3]);
    }
    const index = spec[1] !== undefined ? Number(spec[1]) - 1 : next;
    if (spec[1] === undefined) next++;
    else next = index + 1;
    if (index >= args.length) throw new SqlError(SqlState.invalidParameterValue, 'too few arguments for format()');
    const value = args[index]!;
    let text: string;
    if (spec[4] === 'I') {
      if (value === null) throw new SqlError(SqlState.nullValueNotAllowed, 'null values cannot be formatted as an SQL identifier');
      text = quoteIdentifier(textOf(value, types[index]!, context));
    } else if (spec[4] === 'L') {
      text = value === null ? 'NULL' : quoteLiteral(textOf(value, types[index]!, context));
    } else {
      text = value === null ? '' : textOf(value, types[index]!, context);
    }
    const length = characterCount(text);
    if (length < width) text = leftAlign ? text + ' '.repeat(width - length) : ' '.repeat(width - length) + text;
    out += text;
  }
  return out;
}
defineFunction('format', {
  args: ['text'], variadic: ANY, returns: 'text', strict: false, impl: () => null,
  specialize: (types) => ({
    impl: (args, context) => (args[0] === null ? null : formatString(args[0] as string, args.slice(1), types.slice(1), context)),
  }),
});

// regular expressions
function flagsOf(flags: string | undefined): { flags: string; global: boolean } {
  let out = '';
  let global = false;
  for (const flag of flags ?? '') {
    if (flag === 'g') global = true;
    else if (flag === 'i') out += 'i';
    else if (flag === 'c') continue;
    else if (flag === 'n' || flag === 'm') out += 'm';
    else if (flag === 'x' || flag === 's' || flag === 'p' || flag === 'w' || flag === 'q') continue;
    else throw new SqlError(SqlState.invalidParameterValue, `invalid regular expression option: "${flag}"`);
  }
  return { flags: out, global };
}
function translateReplacement(replacement: string): string {
  // PostgreSQL: \1..\9 are groups, \& the whole match; JavaScript: $1, $&
  return replacement.replace(/\$/g, '$$$$').replace(/\\(\d|&|\\)/g, (_, group: string) => (group === '&' ? '$&' : group === '\\' ? '\\' : `$${group}`));
}
defineFunction('regexp_replace', { args: ['text', 'text', 'text'], returns: 'text', impl: ([a, b, c]) => (a as string).replace(regexMatcher(b as string, ''), translateReplacement(c as string)) });
defineFunction('regexp_replace', { args: ['text', 'text', 'text', 'text'], returns: 'text', impl: ([a, b, c, d]) => {
  const { flags, global } = flagsOf(d as string);
  return (a as string).replace(regexMatcher(b as string, flags + (global ? 'g' : '')), translateReplacement(c as string));
} });
function regexpMatch(text: string, pattern: string, flags: string): Value {
  const { flags: jsFlags, global } = flagsOf(flags);
  if (global) throw new SqlError(SqlState.invalidParameterValue, 'regexp_match() does not support the "global" option', { hint: 'Use the regexp_matches function instead.' });
  const match = regexMatcher(pattern, jsFlags).exec(text);
  if (match === null) return null;
  const elements = match.length > 1 ? match.slice(1).map((group) => group ?? null) : [match[0]];
  return { kind: 'array', elements } as SqlArray;
}
defineFunction('regexp_match', { args: ['text', 'text'], returns: textArray, impl: ([a, b]) => regexpMatch(a as string, b as string, '') });
defineFunction('regexp_match', { args: ['text', 'text', 'text'], returns: textArray, impl: ([a, b, c]) => regexpMatch(a as string, b as string, c as string) });
defineFunction('regexp_like', { args: ['text', 'text'], returns: 'bool', impl: ([a, b]) => regexMatcher(b as string, '').test(a as string) });
defineFunction('regexp_count', { args: ['text', 'text'], returns: 'int4', impl: ([a, b]) => ((a as string).match(regexMatcher(b as string, 'g')) ?? []).length });
defineFunction('string_to_array', { args: ['text', 'text'], returns: textArray, impl: ([a, b]) => {
  if (a === null) return null;
  const text = a as string;
  if (text === '') return { kind: 'array', elements: [] } as SqlArray;
  const elements = b === null ? characters(text) : (b as string) === '' ? [text] : text.split(b as string);
  return { kind: 'array', elements } as SqlArray;
}, strict: false });
defineFunction('array_to_string', { args: [textArray, 'text'], returns: 'text', impl: ([a, b]) => (a as SqlArray).elements.filter((e) => e !== null).join(b as string) });
defineFunction('array_to_string', { args: [arrayOf(type('int4')), 'text'], returns: 'text', impl: ([a, b]) => (a as SqlArray).elements.filter((e) => e !== null).join(b as string) });
defineFunction('array_to_string', { args: [arrayOf(type('int8')), 'text'], returns: 'text', impl: ([a, b]) => (a as SqlArray).elements.filter((e) => e !== null).join(b as string) });
defineFunction('array_to_string', { args: [arrayOf(type('oid')), 'text'], returns: 'text', impl: ([a, b]) => (a as SqlArray).elements.filter((e) => e !== null).join(b as string) });
// RisingWave's name for array_to_string (streaming/join/join.slt: array_join(array[a, b], '_')).
for (const element of [textArray, arrayOf(type('int4')), arrayOf(type('int8'))]) {
  defineFunction('array_join', { args: [element, 'text'], returns: 'text', impl: ([a, b]) => (a as SqlArray).elements.filter((e) => e !== null).join(b as string) });
}
