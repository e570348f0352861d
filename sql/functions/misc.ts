// Functions the parser rewrites into (like_escape for LIKE ... ESCAPE, similar_to_escape for
// SIMILAR TO) and small utilities: encode/decode (hex, base64, escape), num_nulls/num_nonnulls.

import { SqlError, SqlState } from '../errors.js';
import { formatBytea, parseBytea } from '../text-format.js';
import { ANY, defineFunction } from './registry.js';

/** LIKE ... ESCAPE e: rewrites the pattern to use backslash as the escape character. */
function likeEscape(pattern: string, escape: string): string {
  const chars = Array.from(escape);
  if (chars.length > 1) throw new SqlError(SqlState.invalidEscapeSequence, 'invalid escape string', { hint: 'Escape string must be empty or one character.' });
  let out = '';
  const patternChars = Array.from(pattern);
  for (let i = 0; i < patternChars.length; i++) {
    const c = patternChars[i]!;
    if (chars.length === 0) {
      // no escape character: backslashes are literal
      out += c === '\\' ? '\\\\' : c;
    } else if (c === chars[0]) {
      const next = patternChars[i + 1];
      // a trailing escape stays (LIKE itself rejects it later)
      out += '\\' + (next ?? '');
      i++;
    } else {
      out += c === '\\' ? '\\\\' : c;
    }
  }
  return out;
}
defineFunction('like_escape', { args: ['text', 'text'], returns: 'text', impl: ([p, e]) => likeEscape(p as string, e as string) });

/** SIMILAR TO's pattern as a POSIX regular expression (PostgreSQL's similar_to_escape). */
function similarToRegex(pattern: string, escape: string | null): string {
  const escapeChar = escape === null ? '\\' : escape;
  if (Array.from(escapeChar).length > 1) throw new SqlError(SqlState.invalidEscapeSequence, 'invalid escape string', { hint: 'Escape string must be empty or one character.' });
  let out = '^(?:';
  let inBracket = false;
  const chars = Array.from(pattern);
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (escapeChar !== '' && c === escapeChar) {
      const next = chars[i + 1];
      if (next === undefined) throw new SqlError(SqlState.invalidEscapeSequence, 'invalid escape string');
      out += /[A-Za-z0-9]/.test(next) ? next : '\\' + next;
      i++;
      continue;
    }
    if (inBracket) {
      if (c === ']') inBracket = false;
      out += c === '\\' ? '\\\\' : c;
      continue;
    }
    switch (c) {
      case '[': inBracket = true; out += c; break;
      // SIMILAR TO groups do not capture (PostgreSQL emits (?: ... ))
      case '(': out += chars[i + 1] === '?' ? c : '(?:'; break;
      case '%': out += '.*'; break;
      case '_': out += '.'; break;
      case '.': case '^': case '$': out += '\\' + c; break;
      case '\\': out += '\\\\'; break;
      default: out += c;
    }
  }
  return out + ')$';
}
defineFunction('similar_to_escape', { args: ['text'], returns: 'text', impl: ([p]) => similarToRegex(p as string, null) });
defineFunction('similar_to_escape', { args: ['text', 'text'], returns: 'text', impl: ([p, e]) => similarToRegex(p as string, e as string) });

defineFunction('encode', { args: ['bytea', 'text'], returns: 'text', impl: ([data, format]) => {
  const bytes = data as Uint8Array;
  switch ((format as string).toLowerCase()) {
    case 'hex': return formatBytea(bytes).slice(2);
    case 'base64': return (Buffer.from(bytes).toString('base64').match(/.{1,76}/g) ?? ['']).join('\n');
    case 'escape': {
      let out = '';
      for (const byte of bytes) {
        if (byte === 0x5c) out += '\\\\';
        else if (byte === 0 || byte >= 0x80) out += '\\' + byte.toString(8).padStart(3, '0');
        else out += String.fromCharCode(byte);
      }
      return out;
    }
    default: throw new SqlError(SqlState.invalidParameterValue, `unrecognized encoding: "${format as string}"`);
  }
} });
defineFunction('decode', { args: ['text', 'text'], returns: 'bytea', impl: ([text, format]) => {
  const input = text as string;
  switch ((format as string).toLowerCase()) {
    case 'hex': return parseBytea('\\x' + input);
    case 'base64': {
      const compact = input.replace(/\s/g, '');
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) throw new SqlError(SqlState.invalidParameterValue, 'invalid base64 end sequence', { hint: 'Input data is missing padding, is truncated, or is otherwise corrupted.' });
      return new Uint8Array(Buffer.from(compact, 'base64'));
    }
    case 'escape': return parseBytea(input);
    default: throw new SqlError(SqlState.invalidParameterValue, `unrecognized encoding: "${format as string}"`);
  }
} });

defineFunction('num_nulls', { args: [], variadic: ANY, returns: 'int4', strict: false, impl: (args) => args.filter((a) => a === null).length });
defineFunction('num_nonnulls', { args: [], variadic: ANY, returns: 'int4', strict: false, impl: (args) => args.filter((a) => a !== null).length });
