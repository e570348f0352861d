// A PostgreSQL-compatible tokenizer, used only to FIND oxbow's clauses and statement boundaries
// before PostgreSQL's own grammar (libpg-query) parses the text. It follows PostgreSQL's lexer
// (src/backend/parser/scan.l) for everything that decides where a token starts and ends:
// whitespace, `--` and nested `/* */` comments, '...' strings with '' escapes, E'...' strings with
// backslash escapes, B'', X'', N'', U&'' prefixes, $tag$ dollar quotes, "quoted" identifiers,
// numbers, $n parameters, operators and punctuation. It does not validate: an unterminated string
// or comment simply runs to the end of the input, and PostgreSQL's grammar reports the error later.
// Offsets are 0-based character (UTF-16 code unit) offsets into the text.

export type TokenKind =
  | 'identifier' // a bare word: keyword or identifier (case-folded in `upper`)
  | 'quotedIdentifier' // "..." or U&"..."
  | 'string' // '...', E'...', B'...', X'...', N'...', U&'...', $$...$$
  | 'number'
  | 'parameter' // $1
  | 'operator' // + - * / < > = ~ ! @ # % ^ & | ` ? and runs of them, also :: and :=
  | 'punctuation'; // ( ) [ ] , ; : .

export interface Token {
  readonly kind: TokenKind;
  /** 0-based character offset of the first character. */
  readonly start: number;
  /** 0-based character offset just past the last character. */
  readonly end: number;
  /** For identifiers: the word upper-cased (for keyword tests). For other kinds: the text as written. */
  readonly upper: string;
}

const operatorChars = new Set('+-*/<>=~!@#%^&|`?');

function isIdentifierStart(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95 || code >= 128;
}

function isIdentifierPart(code: number): boolean {
  return isIdentifierStart(code) || (code >= 48 && code <= 57) || code === 36;
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13);
}

/** Offset just past a '...' string starting at `quote` (the opening quote); `backslash` for E''. */
function skipQuoted(text: string, quote: number, quoteChar: string, backslash: boolean): number {
  let index = quote + 1;
  while (index < text.length) {
    const char = text[index]!;
    if (backslash && char === '\\') {
      index += 2;
      continue;
    }
    if (char === quoteChar) {
      if (text[index + 1] === quoteChar) {
        index += 2;
        continue;
      }
      return index + 1;
    }
    index++;
  }
  return text.length;
}

/** Offset just past a nested block comment starting at `start` (the `/`). */
function skipBlockComment(text: string, start: number): number {
  let depth = 0;
  let index = start;
  while (index < text.length) {
    if (text[index] === '/' && text[index + 1] === '*') {
      depth++;
      index += 2;
    } else if (text[index] === '*' && text[index + 1] === '/') {
      depth--;
      index += 2;
      if (depth === 0) return index;
    } else index++;
  }
  return text.length;
}

/** If a dollar-quote delimiter ($$ or $tag$) starts at `start`, its length; otherwise 0. */
function dollarDelimiterLength(text: string, start: number): number {
  let index = start + 1;
  if (text[index] === '$') return 2;
  const first = text.charCodeAt(index);
  if (!isIdentifierStart(first)) return 0;
  index++;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (code === 36) return index - start + 1;
    if (!isIdentifierStart(code) && !isDigit(code)) return 0;
    index++;
  }
  return 0;
}

function scanNumber(text: string, start: number): number {
  let index = start;
  if (text[index] === '0' && /[xXoObB]/.test(text[index + 1] ?? '')) {
    index += 2;
    while (index < text.length && /[0-9a-fA-F_]/.test(text[index]!)) index++;
    return index;
  }
  while (index < text.length && (isDigit(text.charCodeAt(index)) || text[index] === '_')) index++;
  // "1..2" is not a decimal point (PostgreSQL lexes 1 .. 2 for array slices).
  if (text[index] === '.' && text[index + 1] !== '.') {
    index++;
    while (index < text.length && (isDigit(text.charCodeAt(index)) || text[index] === '_')) index++;
  }
  if (text[index] === 'e' || text[index] === 'E') {
    let next = index + 1;
    if (text[next] === '+' || text[next] === '-') next++;
    if (isDigit(text.charCodeAt(next))) {
      index = next;
      while (index < text.length && isDigit(text.charCodeAt(index))) index++;
    }
  }
  return index;
}

/** PostgreSQL's operator rule: a run of operator characters, cut before any `--` or `/*`. */
function scanOperator(text: string, start: number): number {
  let index = start;
  while (index < text.length && operatorChars.has(text[index]!)) {
    if (text[index] === '-' && text[index + 1] === '-') break;
    if (text[index] === '/' && text[index + 1] === '*') break;
    index++;
  }
  return Math.max(index, start + 1);
}

/** Tokenizes `text` (comments and whitespace are dropped). */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  const length = text.length;
  while (index < length) {
    const code = text.charCodeAt(index);
    const char = text[index]!;
    if (isSpace(code)) {
      index++;
      continue;
    }
    if (char === '-' && text[index + 1] === '-') {
      while (index < length && text[index] !== '\n' && text[index] !== '\r') index++;
      continue;
    }
    if (char === '/' && text[index + 1] === '*') {
      index = skipBlockComment(text, index);
      continue;
    }
    const start = index;
    const next = text[index + 1];
    if (char === "'") {
      index = skipQuoted(text, index, "'", false);
      tokens.push({ kind: 'string', start, end: index, upper: text.slice(start, index) });
      continue;
    }
    if ((char === 'e' || char === 'E') && next === "'") {
      index = skipQuoted(text, index + 1, "'", true);
      tokens.push({ kind: 'string', start, end: index, upper: text.slice(start, index) });
      continue;
    }
    if ((char === 'b' || char === 'B' || char === 'x' || char === 'X' || char === 'n' || char === 'N') && next === "'") {
      index = skipQuoted(text, index + 1, "'", false);
      tokens.push({ kind: 'string', start, end: index, upper: text.slice(start, index) });
      continue;
    }
    if ((char === 'u' || char === 'U') && next === '&' && (text[index + 2] === "'" || text[index + 2] === '"')) {
      const quote = text[index + 2]!;
      index = skipQuoted(text, index + 2, quote, false);
      tokens.push({ kind: quote === "'" ? 'string' : 'quotedIdentifier', start, end: index, upper: text.slice(start, index) });
      continue;
    }
    if (char === '"') {
      index = skipQuoted(text, index, '"', false);
      tokens.push({ kind: 'quotedIdentifier', start, end: index, upper: text.slice(start, index) });
      continue;
    }
    if (char === '$') {
      if (isDigit(text.charCodeAt(index + 1))) {
        index++;
        while (index < length && isDigit(text.charCodeAt(index))) index++;
        tokens.push({ kind: 'parameter', start, end: index, upper: text.slice(start, index) });
        continue;
      }
      const delimiterLength = dollarDelimiterLength(text, index);
      if (delimiterLength > 0) {
        const delimiter = text.slice(index, index + delimiterLength);
        const close = text.indexOf(delimiter, index + delimiterLength);
        index = close < 0 ? length : close + delimiterLength;
        tokens.push({ kind: 'string', start, end: index, upper: text.slice(start, index) });
        continue;
      }
    }
    if (isIdentifierStart(code)) {
      index++;
      while (index < length && isIdentifierPart(text.charCodeAt(index))) index++;
      tokens.push({ kind: 'identifier', start, end: index, upper: text.slice(start, index).toUpperCase() });
      continue;
    }
    if (isDigit(code) || (char === '.' && isDigit(text.charCodeAt(index + 1)))) {
      index = scanNumber(text, index);
      tokens.push({ kind: 'number', start, end: index, upper: text.slice(start, index) });
      continue;
    }
    if (char === ':' && (next === ':' || next === '=')) {
      index += 2;
      tokens.push({ kind: 'operator', start, end: index, upper: text.slice(start, index) });
      continue;
    }
    if (char === '.' && next === '.') {
      index += 2;
      tokens.push({ kind: 'punctuation', start, end: index, upper: '..' });
      continue;
    }
    if ('()[],;:.'.includes(char)) {
      index++;
      tokens.push({ kind: 'punctuation', start, end: index, upper: char });
      continue;
    }
    if (operatorChars.has(char)) {
      index = scanOperator(text, index);
      tokens.push({ kind: 'operator', start, end: index, upper: text.slice(start, index) });
      continue;
    }
    // Anything else (a stray character): one token, PostgreSQL's grammar will judge it.
    index++;
    tokens.push({ kind: 'operator', start, end: index, upper: char });
  }
  return tokens;
}

/** True when `token` is the bare word `word` (upper case). */
export function isWord(token: Token | undefined, word: string): boolean {
  return token !== undefined && token.kind === 'identifier' && token.upper === word;
}

/** True when `token` is the punctuation or operator `symbol`. */
export function isSymbol(token: Token | undefined, symbol: string): boolean {
  return token !== undefined && (token.kind === 'punctuation' || token.kind === 'operator') && token.upper === symbol;
}

/** Index of the token closing the bracket opened at `open` (a `(` or `[`), or -1. */
export function matchingClose(tokens: readonly Token[], open: number): number {
  let depth = 0;
  for (let index = open; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.kind !== 'punctuation') continue;
    if (token.upper === '(' || token.upper === '[') depth++;
    else if (token.upper === ')' || token.upper === ']') {
      depth--;
      if (depth === 0) return index;
    }
  }
  return -1;
}
