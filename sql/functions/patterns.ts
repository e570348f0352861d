// Pattern matching: SQL LIKE/ILIKE patterns and POSIX regular expressions (PostgreSQL's ARE
// flavour) translated to JavaScript RegExps, compiled once per pattern and cached. Translation:
// LIKE's % and _ become .* and . (the escape character, backslash by default, quotes the next
// character); POSIX bracket classes ([[:alpha:]], [[:digit:]], ...) become explicit ranges, \m \M
// \y become \b, and '.' matches newlines as in PostgreSQL (the 's' flag). An invalid pattern is a
// SqlError 2201B.

import { SqlError, SqlState } from '../errors.js';

const CACHE_LIMIT = 1000;
const likeCache = new Map<string, RegExp>();
const regexCache = new Map<string, RegExp>();

function remember(cache: Map<string, RegExp>, key: string, value: RegExp): RegExp {
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(key, value);
  return value;
}

const special = /[\\^$.*+?()[\]{}|/]/g;

function bothCases(c: string): string {
  if (c >= 'a' && c <= 'z') return `[${c}${c.toUpperCase()}]`;
  if (c >= 'A' && c <= 'Z') return `[${c.toLowerCase()}${c}]`;
  return c;
}

/**
 * LIKE (ILIKE when caseInsensitive: ASCII letters only, as the C locale); `escape` '' disables
 * escaping.
 */
export function likeMatcher(pattern: string, caseInsensitive: boolean, escape: string): RegExp {
  const key = `${caseInsensitive ? 'i' : 'c'}${escape}\u0000${pattern}`;
  const cached = likeCache.get(key);
  if (cached !== undefined) return cached;
  let source = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (escape !== '' && c === escape) {
      i++;
      if (i >= pattern.length) {
        throw new SqlError(SqlState.invalidEscapeSequence, 'LIKE pattern must not end with escape character');
      }
      const quoted = pattern[i]!;
      source += caseInsensitive ? bothCases(quoted).replace(/^[^[].*$/, (x) => x.replace(special, '\\$&')) : quoted.replace(special, '\\$&');
    } else if (c === '%') {
      source += '.*';
    } else if (c === '_') {
      source += '.';
    } else {
      source += caseInsensitive && /[A-Za-z]/.test(c) ? bothCases(c) : c.replace(special, '\\$&');
    }
  }
  source += '$';
  return remember(likeCache, key, new RegExp(source, 'su'));
}

const posixClasses: Record<string, string> = {
  alpha: 'a-zA-Z',
  digit: '0-9',
  alnum: 'a-zA-Z0-9',
  upper: 'A-Z',
  lower: 'a-z',
  space: ' \\t\\n\\r\\f\\v',
  blank: ' \\t',
  punct: '!-\\/:-@\\[-`{-~',
  xdigit: '0-9A-Fa-f',
  word: 'a-zA-Z0-9_',
  cntrl: '\\x00-\\x1f\\x7f',
  print: '\\x20-\\x7e',
  graph: '\\x21-\\x7e',
};

/**
 * Translates a PostgreSQL ARE to JavaScript RegExp source; `caseInsensitive` folds ASCII letters
 * only (the C locale), by spelling both cases out.
 */
export function translateRegex(pattern: string, caseInsensitive = false): string {
  let out = '';
  let inBracket = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (inBracket) {
      if (c === '[' && pattern[i + 1] === ':') {
        const end = pattern.indexOf(':]', i + 2);
        if (end > 0) {
          const name = pattern.slice(i + 2, end);
          const replacement = caseInsensitive && (name === 'upper' || name === 'lower') ? 'a-zA-Z' : posixClasses[name];
          if (replacement === undefined) throw new SqlError(SqlState.invalidRegularExpression, 'invalid regular expression: invalid character class');
          out += replacement;
          i = end + 1;
          continue;
        }
      }
      if (c === ']' ) {
        inBracket = false;
        out += c;
        continue;
      }
      if (c === '\\') {
        out += c + (pattern[i + 1] ?? '');
        i++;
        continue;
      }
      if (c === '[' || c === '/') {
        out += '\\' + c;
        continue;
      }
      if (caseInsensitive && /[A-Za-z]/.test(c)) {
        // a range a-z becomes a-zA-Z; a single letter gets its other case
        if (pattern[i + 1] === '-' && /[A-Za-z]/.test(pattern[i + 2] ?? '')) {
          const end = pattern[i + 2]!;
          out += `${c}-${end}${c.toLowerCase() === c ? c.toUpperCase() : c.toLowerCase()}-${end.toLowerCase() === end ? end.toUpperCase() : end.toLowerCase()}`;
          i += 2;
          continue;
        }
        out += c.toLowerCase() + c.toUpperCase();
        continue;
      }
      out += c;
      continue;
    }
    if (c === '[') {
      inBracket = true;
      out += c;
      if (pattern[i + 1] === '^') {
        out += '^';
        i++;
      }
      if (pattern[i + 1] === ']') {
        out += '\\]';
        i++;
      }
      continue;
    }
    if (c === '\\') {
      const next = pattern[i + 1];
      if (next === 'm' || next === 'M' || next === 'y') {
        out += '\\b';
        i++;
        continue;
      }
      if (next === 'Y') {
        out += '\\B';
        i++;
        continue;
      }
      if (next === 'A') {
        out += '^';
        i++;
        continue;
      }
      if (next === 'Z') {
        out += '$';
        i++;
        continue;
      }
      out += c + (next ?? '');
      i++;
      continue;
    }
    out += caseInsensitive ? bothCases(c) : c;
  }
  return out;
}

/** PostgreSQL's wording for the common regular expression errors. */
function regexErrorMessage(pattern: string, jsMessage: string): string {
  if (/Unterminated group|Unmatched '\)'/.test(jsMessage)) return 'parentheses () not balanced';
  if (/Unterminated character class|Missing \//.test(jsMessage)) return 'brackets [] not balanced';
  if (/numbers out of order/.test(jsMessage)) return 'invalid repetition count(s)';
  if (/Nothing to repeat/.test(jsMessage)) return 'quantifier operand invalid';
  if (/\\ at end of pattern/.test(jsMessage)) return 'invalid escape \\ sequence';
  void pattern;
  return jsMessage.replace(/^Invalid regular expression: \/.*\/[a-z]*: /, '').toLowerCase();
}

/** A POSIX regular expression with flags ('i' for case-insensitive, 'g' for global). */
export function regexMatcher(pattern: string, flags: string): RegExp {
  const key = `${flags}\u0000${pattern}`;
  const cached = regexCache.get(key);
  if (cached !== undefined) {
    cached.lastIndex = 0;
    return cached;
  }
  try {
    const caseInsensitive = flags.includes('i');
    return remember(regexCache, key, new RegExp(translateRegex(pattern, caseInsensitive), `s${flags.replace('i', '')}`));
  } catch (error) {
    if (error instanceof SqlError) throw error;
    throw new SqlError(SqlState.invalidRegularExpression, `invalid regular expression: ${regexErrorMessage(pattern, (error as Error).message)}`);
  }
}
