// The shape of an `INSERT INTO name [(columns)] VALUES (literal, ...)[, (...)]` statement: its
// text with every plain literal lifted into a parameter ($1, $2, ...), and the literals with the
// type PostgreSQL gives each. Two statements that differ only in their literals have the same
// shape, so a session plans the shape once and runs it with the literals as parameters (the
// executor's plan cache). A cheap hand-written pass over the text, no grammar call: it accepts only
// the narrow form above and answers `undefined` for anything else (RETURNING, ON CONFLICT, an
// expression, a typed or escaped string, a comment, several statements), which then takes the
// ordinary path through the parser.
//
// Literals lifted: integers (`42`, `-7`), decimals and exponents (`1.5`, `-.5e3`), standard strings
// (`'it''s'`), NULL, TRUE and FALSE. `DEFAULT` stays in the text. Integers are typed as PostgreSQL
// types an integer constant: int4 when it fits, else int8, else numeric; a decimal is numeric; a
// string or NULL is of unknown type (its column decides, as for a literal).

export type LiteralKind = 'int4' | 'int8' | 'numeric' | 'string' | 'null' | 'bool';

export interface ShapeLiteral {
  readonly kind: LiteralKind;
  /** The literal's text as a parameter's text value: digits with their sign, a string unquoted, 'true'/'false'; '' for NULL. */
  readonly text: string;
}

export interface InsertValuesShape {
  /** The statement with `$n` in place of each literal (what is parsed and planned once). */
  readonly parameterizedText: string;
  /** The cache key: the parameterized text and the literal kinds. */
  readonly key: string;
  readonly literals: readonly ShapeLiteral[];
}

/** Literals per statement above which the shape is not worth caching (a bulk INSERT parses once anyway). */
const MAX_LITERALS = 1000;

/** One letter per literal kind in the cache key. */
const KIND_LETTERS: Readonly<Record<LiteralKind, string>> = { int4: '4', int8: '8', numeric: 'n', string: 's', null: '0', bool: 'b' };

const INT4_MAX = 2147483647n;
const INT8_MAX = 9223372036854775807n;

function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13);
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

function isIdentifierStart(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || code === 95 || code >= 128;
}

function isIdentifierPart(code: number): boolean {
  return isIdentifierStart(code) || isDigit(code) || code === 36;
}

/** The recognizer's cursor over one statement's text. */
class Cursor {
  position = 0;
  constructor(readonly text: string) {}

  skipSpace(): void {
    const text = this.text;
    while (this.position < text.length && isSpace(text.charCodeAt(this.position))) this.position++;
  }

  /** Consumes `word` (case-insensitive) when it is the next whole word. */
  keyword(word: string): boolean {
    this.skipSpace();
    const end = this.position + word.length;
    if (end > this.text.length || this.text.slice(this.position, end).toLowerCase() !== word) return false;
    if (end < this.text.length && isIdentifierPart(this.text.charCodeAt(end))) return false;
    this.position = end;
    return true;
  }

  punctuation(code: number): boolean {
    this.skipSpace();
    if (this.text.charCodeAt(this.position) !== code) return false;
    this.position++;
    return true;
  }

  /** A plain or double-quoted identifier (no U&"..."); false otherwise. */
  identifier(): boolean {
    this.skipSpace();
    const text = this.text;
    const code = text.charCodeAt(this.position);
    if (code === 34) {
      const close = text.indexOf('"', this.position + 1);
      if (close < 0) return false;
      // A doubled quote inside the name: leave such names to the parser.
      if (text.charCodeAt(close + 1) === 34) return false;
      this.position = close + 1;
      return true;
    }
    if (!isIdentifierStart(code)) return false;
    // U&"..." and U&'...' are Unicode-escaped names and strings.
    if ((code === 85 || code === 117) && text.charCodeAt(this.position + 1) === 38) return false;
    this.position++;
    while (this.position < text.length && isIdentifierPart(text.charCodeAt(this.position))) this.position++;
    return true;
  }

  /** `name` or `schema.name` (a catalog.schema.name is left to the parser). */
  qualifiedName(): boolean {
    if (!this.identifier()) return false;
    const save = this.position;
    if (this.punctuation(46)) {
      if (!this.identifier()) return false;
    } else {
      this.position = save;
    }
    return true;
  }
}

/** The end of a literal must be a separator: `,` or `)` after optional spaces. */
function separatorFollows(text: string, position: number): boolean {
  while (position < text.length && isSpace(text.charCodeAt(position))) position++;
  const code = text.charCodeAt(position);
  return code === 44 || code === 41;
}

function integerKind(digits: string): LiteralKind {
  // The magnitude decides, as PostgreSQL's lexer types the constant before any minus sign.
  if (digits.length <= 9) return 'int4';
  const magnitude = BigInt(digits);
  if (magnitude <= INT4_MAX) return 'int4';
  if (magnitude <= INT8_MAX) return 'int8';
  return 'numeric';
}

/**
 * Reads one VALUES element at the cursor: a literal (pushed to `literals`, `$n` appended to `out`)
 * or DEFAULT (appended as it is). False for anything else.
 */
function element(cursor: Cursor, literals: ShapeLiteral[], out: string[]): boolean {
  cursor.skipSpace();
  const text = cursor.text;
  const start = cursor.position;
  const code = text.charCodeAt(start);
  if (code === 39) {
    // A standard string: '' is a quote; standard_conforming_strings leaves backslashes alone.
    let value = '';
    let position = start + 1;
    for (;;) {
      const close = text.indexOf("'", position);
      if (close < 0) return false;
      value += text.slice(position, close);
      if (text.charCodeAt(close + 1) === 39) {
        value += "'";
        position = close + 2;
        continue;
      }
      position = close + 1;
      break;
    }
    // 'a' 'b' (adjacent strings joined across a newline) is left to the parser.
    if (!separatorFollows(text, position)) return false;
    literals.push({ kind: 'string', text: value });
    out.push(`$${literals.length}`);
    cursor.position = position;
    return true;
  }
  if (code === 45 || isDigit(code) || code === 46) {
    let position = start;
    if (code === 45) position++;
    const digitsStart = position;
    while (isDigit(text.charCodeAt(position))) position++;
    const integerDigits = position - digitsStart;
    let decimal = false;
    if (text.charCodeAt(position) === 46) {
      decimal = true;
      position++;
      const fractionStart = position;
      while (isDigit(text.charCodeAt(position))) position++;
      if (integerDigits === 0 && position === fractionStart) return false;
    } else if (integerDigits === 0) {
      return false;
    }
    const exponent = text.charCodeAt(position);
    if (exponent === 101 || exponent === 69) {
      decimal = true;
      position++;
      const sign = text.charCodeAt(position);
      if (sign === 43 || sign === 45) position++;
      const exponentStart = position;
      while (isDigit(text.charCodeAt(position))) position++;
      if (position === exponentStart) return false;
    }
    // 0x1F, 1_000, 12abc and the like are left to the parser.
    if (position < text.length && (isIdentifierPart(text.charCodeAt(position)) || text.charCodeAt(position) === 46)) return false;
    if (!separatorFollows(text, position)) return false;
    const literal = text.slice(start, position);
    const kind = decimal ? 'numeric' : integerKind(text.slice(digitsStart, position));
    literals.push({ kind, text: literal });
    out.push(`$${literals.length}`);
    cursor.position = position;
    return true;
  }
  for (const [word, kind, value] of [
    ['null', 'null', ''],
    ['true', 'bool', 'true'],
    ['false', 'bool', 'false'],
    ['default', undefined, undefined],
  ] as const) {
    if (!cursor.keyword(word)) continue;
    if (!separatorFollows(text, cursor.position)) return false;
    if (kind === undefined) {
      out.push('DEFAULT');
    } else {
      literals.push({ kind, text: value });
      out.push(`$${literals.length}`);
    }
    return true;
  }
  return false;
}

/** The shape of `sql` when it is one INSERT ... VALUES of plain literals; otherwise undefined. */
export function insertValuesShape(sql: string): InsertValuesShape | undefined {
  // Comments, dollar quotes and parameters are left to the parser (they could hide anything).
  if (sql.includes('--') || sql.includes('/*') || sql.includes('$') || sql.includes('\0')) return undefined;
  const cursor = new Cursor(sql);
  if (!cursor.keyword('insert') || !cursor.keyword('into')) return undefined;
  const tableStart = cursor.position;
  if (!cursor.qualifiedName()) return undefined;
  if (cursor.punctuation(40)) {
    do {
      if (!cursor.identifier()) return undefined;
    } while (cursor.punctuation(44));
    if (!cursor.punctuation(41)) return undefined;
  }
  if (!cursor.keyword('values')) return undefined;
  const out: string[] = [sql.slice(0, tableStart), sql.slice(tableStart, cursor.position), ' '];
  const literals: ShapeLiteral[] = [];
  do {
    if (!cursor.punctuation(40)) return undefined;
    out.push('(');
    let first = true;
    do {
      if (!first) out.push(', ');
      first = false;
      if (!element(cursor, literals, out)) return undefined;
      if (literals.length > MAX_LITERALS) return undefined;
    } while (cursor.punctuation(44));
    if (!cursor.punctuation(41)) return undefined;
    out.push(')');
    if (cursor.punctuation(44)) out.push(', ');
    else break;
  } while (true);
  cursor.punctuation(59);
  cursor.skipSpace();
  if (cursor.position !== sql.length) return undefined;
  if (literals.length === 0) return undefined;
  const parameterizedText = out.join('');
  let kinds = '';
  for (const literal of literals) kinds += KIND_LETTERS[literal.kind];
  return { parameterizedText, key: `${kinds}|${parameterizedText}`, literals };
}
