// jsonb (and json) values: parsing with PostgreSQL's rules (numbers are exact numerics, object
// keys are deduplicated keeping the last, and ordered as jsonb stores them: shorter keys first,
// then by bytes), output byte for byte as PostgreSQL's jsonb_out (`{"a": 1, "b": [1, 2]}`), and
// the navigation the jsonb operators need.
//
// Number representation inside JsonValue: a JS number when the value is an integer that a double
// holds exactly (the common case, and what JSON.stringify-minded code expects), otherwise a Numeric
// (fractions, huge integers), so '1.50' prints back as 1.50 exactly as PostgreSQL does.

import { SqlError, SqlState } from './errors.js';
import { Numeric } from './numeric.js';
import { compareText, utf8Length } from './collation.js';

export type JsonValue = null | boolean | string | number | Numeric | JsonValue[] | { [key: string]: JsonValue };

export class Jsonb {
  readonly value: JsonValue;
  constructor(value: JsonValue) {
    this.value = value;
  }

  toString(): string {
    return formatJson(this.value);
  }
}

/** A JSON number as the JsonValue representation. */
export function jsonNumber(value: Numeric): JsonValue {
  if (value.special === undefined && value.scale === 0 && value.unscaled >= -9007199254740991n && value.unscaled <= 9007199254740991n) {
    return Number(value.unscaled);
  }
  return value;
}

/** The numeric value of a JSON number. */
export function jsonNumberToNumeric(value: number | Numeric): Numeric {
  if (value instanceof Numeric) return value;
  return Number.isInteger(value) ? Numeric.fromInteger(value) : Numeric.parse(String(value));
}

function compareKeys(a: string, b: string): number {
  const x = utf8Length(a);
  const y = utf8Length(b);
  if (x !== y) return x - y;
  return compareText(a, b);
}

/** The keys of an object in jsonb order. */
export function jsonbKeys(object: { [key: string]: JsonValue }): string[] {
  return Object.keys(object).sort(compareKeys);
}

/** Builds an object whose insertion order is jsonb order (so Object.keys is sorted already). */
export function jsonbObject(entries: Iterable<[string, JsonValue]>): { [key: string]: JsonValue } {
  const map = new Map<string, JsonValue>();
  for (const [key, value] of entries) {
    map.delete(key);
    map.set(key, value);
  }
  const object: { [key: string]: JsonValue } = Object.create(null);
  for (const key of [...map.keys()].sort(compareKeys)) object[key] = map.get(key)!;
  return object;
}

export function escapeJsonString(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    switch (code) {
      case 0x22: out += '\\"'; break;
      case 0x5c: out += '\\\\'; break;
      case 0x08: out += '\\b'; break;
      case 0x0c: out += '\\f'; break;
      case 0x0a: out += '\\n'; break;
      case 0x0d: out += '\\r'; break;
      case 0x09: out += '\\t'; break;
      default:
        out += code < 0x20 ? '\\u' + code.toString(16).padStart(4, '0') : text[i];
    }
  }
  return out + '"';
}

/** jsonb_out. */
export function formatJson(value: JsonValue): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'string') return escapeJsonString(value);
  if (typeof value === 'number') return Number.isInteger(value) && Math.abs(value) < 1e21 ? value.toFixed(0) : Numeric.fromFloat8(value, 17).toString();
  if (value instanceof Numeric) return value.toString();
  if (Array.isArray(value)) return '[' + value.map(formatJson).join(', ') + ']';
  const keys = jsonbKeys(value);
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) out += ', ';
    out += escapeJsonString(keys[i]!) + ': ' + formatJson(value[keys[i]!]!);
  }
  return out + '}';
}

// ---------------------------------------------------------------------------------------------
// Input

class JsonParser {
  private position = 0;
  constructor(
    private readonly text: string,
    private readonly typeName: string,
  ) {}

  fail(detail?: string): SqlError {
    return new SqlError(SqlState.invalidTextRepresentation, `invalid input syntax for type ${this.typeName}`, {
      detail: detail ?? this.tokenDetail(),
    });
  }

  private tokenDetail(): string {
    if (this.position >= this.text.length) return 'The input string ended unexpectedly.';
    const match = /^[A-Za-z0-9_]+|^./s.exec(this.text.slice(this.position));
    return `Token "${match === null ? '' : match[0]}" is invalid.`;
  }

  private skipSpace(): void {
    while (this.position < this.text.length) {
      const c = this.text.charCodeAt(this.position);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.position++;
      else break;
    }
  }

  parseDocument(): JsonValue {
    const value = this.parseValue(0);
    this.skipSpace();
    if (this.position < this.text.length) throw this.fail();
    return value;
  }

  private parseValue(depth: number): JsonValue {
    if (depth > 6400) throw new SqlError(SqlState.statementTooComplex, 'stack depth limit exceeded');
    this.skipSpace();
    const c = this.text[this.position];
    if (c === '{') return this.parseObject(depth);
    if (c === '[') return this.parseArray(depth);
    if (c === '"') return this.parseString();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.parseNumber();
    for (const [word, value] of [['true', true], ['false', false], ['null', null]] as const) {
      if (this.text.startsWith(word, this.position) && !/[A-Za-z0-9_]/.test(this.text[this.position + word.length] ?? '')) {
        this.position += word.length;
        return value;
      }
    }
    throw this.fail();
  }

  private parseObject(depth: number): JsonValue {
    this.position++;
    const entries: [string, JsonValue][] = [];
    this.skipSpace();
    if (this.text[this.position] === '}') {
      this.position++;
      return jsonbObject(entries);
    }
    for (;;) {
      this.skipSpace();
      if (this.text[this.position] !== '"') throw this.fail();
      const key = this.parseString();
      this.skipSpace();
      if (this.text[this.position] !== ':') throw this.fail();
      this.position++;
      entries.push([key, this.parseValue(depth + 1)]);
      this.skipSpace();
      const next = this.text[this.position];
      if (next === ',') {
        this.position++;
        continue;
      }
      if (next === '}') {
        this.position++;
        return jsonbObject(entries);
      }
      throw this.fail();
    }
  }

  private parseArray(depth: number): JsonValue {
    this.position++;
    const elements: JsonValue[] = [];
    this.skipSpace();
    if (this.text[this.position] === ']') {
      this.position++;
      return elements;
    }
    for (;;) {
      elements.push(this.parseValue(depth + 1));
      this.skipSpace();
      const next = this.text[this.position];
      if (next === ',') {
        this.position++;
        continue;
      }
      if (next === ']') {
        this.position++;
        return elements;
      }
      throw this.fail();
    }
  }

  private parseString(): string {
    this.position++;
    let out = '';
    let start = this.position;
    for (;;) {
      if (this.position >= this.text.length) throw this.fail('The input string ended unexpectedly.');
      const c = this.text.charCodeAt(this.position);
      if (c === 0x22) {
        out += this.text.slice(start, this.position);
        this.position++;
        return out;
      }
      if (c < 0x20) {
        throw this.fail(`Character with value 0x${c.toString(16).padStart(2, '0')} must be escaped.`);
      }
      if (c === 0x5c) {
        out += this.text.slice(start, this.position);
        const escape = this.text[this.position + 1];
        this.position += 2;
        switch (escape) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            const hex = this.text.slice(this.position, this.position + 4);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw this.fail('"\\u" must be followed by four hexadecimal digits.');
            const code = parseInt(hex, 16);
            if (code === 0) {
              throw new SqlError(SqlState.untranslatableCharacter, 'unsupported Unicode escape sequence', {
                detail: '\\u0000 cannot be converted to text.',
              });
            }
            out += String.fromCharCode(code);
            this.position += 4;
            break;
          }
          default:
            throw this.fail(`Escape sequence "\\${escape ?? ''}" is invalid.`);
        }
        start = this.position;
        continue;
      }
      this.position++;
    }
  }

  private parseNumber(): JsonValue {
    const match = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(this.text.slice(this.position, this.position + 5000));
    if (match === null) throw this.fail();
    const after = this.text[this.position + match[0].length];
    if (after !== undefined && /[A-Za-z0-9_.]/.test(after)) throw this.fail();
    this.position += match[0].length;
    return jsonNumber(Numeric.parse(match[0]));
  }
}

/** jsonb_in: 22P02 "invalid input syntax for type json" with PostgreSQL's detail. */
export function parseJson(text: string, typeName = 'json'): JsonValue {
  return new JsonParser(text, typeName).parseDocument();
}

export function parseJsonb(text: string): Jsonb {
  return new Jsonb(parseJson(text));
}

// ---------------------------------------------------------------------------------------------
// Structure helpers for operators and functions

export function isJsonObject(value: JsonValue): value is { [key: string]: JsonValue } {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Numeric);
}

export function jsonTypeOf(value: JsonValue): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number' || value instanceof Numeric) return 'number';
  if (Array.isArray(value)) return 'array';
  return 'object';
}

/** jsonb equality (numbers by value, objects by key set). */
export function jsonEquals(a: JsonValue, b: JsonValue): boolean {
  return compareJson(a, b) === 0;
}

function typeRank(value: JsonValue): number {
  // PostgreSQL's jsonb btree order: Object > Array > Boolean > Number > String > Null
  if (value === null) return 1;
  if (typeof value === 'string') return 2;
  if (typeof value === 'number' || value instanceof Numeric) return 3;
  if (typeof value === 'boolean') return 4;
  if (Array.isArray(value)) return 5;
  return 6;
}

/**
 * PostgreSQL's jsonb ordering (compareJsonbContainers). At top level a scalar is a one-element
 * "raw scalar" array: arrays compare by length first, then a raw scalar sorts before a real array
 * (so [] < every scalar < [x]); objects sort after arrays.
 */
export function compareJson(a: JsonValue, b: JsonValue): number {
  const aContainer = Array.isArray(a) || isJsonObject(a);
  const bContainer = Array.isArray(b) || isJsonObject(b);
  if (aContainer && bContainer) return compareJsonValues(a, b);
  if (isJsonObject(a)) return 1;
  if (isJsonObject(b)) return -1;
  if (Array.isArray(a)) return a.length !== 1 ? a.length - 1 : 1;
  if (Array.isArray(b)) return b.length !== 1 ? 1 - b.length : -1;
  return compareJsonValues(a, b);
}

function compareJsonValues(a: JsonValue, b: JsonValue): number {
  const rankA = typeRank(a);
  const rankB = typeRank(b);
  // PostgreSQL: an empty top-level array sorts below null; ignored here
  if (rankA !== rankB) return rankA - rankB;
  switch (rankA) {
    case 1: return 0;
    case 2: {
      const x = a as string;
      const y = b as string;
      // jsonb compares strings by length first only inside object keys; values use collation order
      return compareText(x, y);
    }
    case 3: return jsonNumberToNumeric(a as number | Numeric).compare(jsonNumberToNumeric(b as number | Numeric));
    case 4: return (a ? 1 : 0) - (b ? 1 : 0);
    case 5: {
      const x = a as JsonValue[];
      const y = b as JsonValue[];
      if (x.length !== y.length) return x.length - y.length;
      for (let i = 0; i < x.length; i++) {
        const c = compareJsonValues(x[i]!, y[i]!);
        if (c !== 0) return c;
      }
      return 0;
    }
    default: {
      const x = a as { [key: string]: JsonValue };
      const y = b as { [key: string]: JsonValue };
      const keysX = jsonbKeys(x);
      const keysY = jsonbKeys(y);
      if (keysX.length !== keysY.length) return keysX.length - keysY.length;
      for (let i = 0; i < keysX.length; i++) {
        // pairs are visited in storage order, but keys compare as strings (collation order)
        const c = compareText(keysX[i]!, keysY[i]!);
        if (c !== 0) return c;
        const v = compareJsonValues(x[keysX[i]!]!, y[keysY[i]!]!);
        if (v !== 0) return v;
      }
      return 0;
    }
  }
}

/** a @> b (jsonb containment). */
export function jsonContains(a: JsonValue, b: JsonValue, topLevel = true): boolean {
  if (Array.isArray(a)) {
    if (Array.isArray(b)) return b.every((element) => a.some((candidate) => jsonContainsElement(candidate, element)));
    // a top-level array contains a scalar that is one of its elements
    return topLevel && !isJsonObject(b) && a.some((candidate) => jsonEquals(candidate, b));
  }
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    for (const key of Object.keys(b)) {
      if (!(key in a)) return false;
      if (!jsonContainsElement(a[key]!, b[key]!)) return false;
    }
    return true;
  }
  if (Array.isArray(b) || isJsonObject(b)) return false;
  return jsonEquals(a, b);
}

function jsonContainsElement(a: JsonValue, b: JsonValue): boolean {
  if (Array.isArray(a) || isJsonObject(a)) return jsonContains(a, b, false);
  if (Array.isArray(b) || isJsonObject(b)) return false;
  return jsonEquals(a, b);
}

/** The ? operator: a key of an object, or a string element of an array, or the string itself. */
export function jsonHasKey(value: JsonValue, key: string): boolean {
  if (isJsonObject(value)) return Object.prototype.hasOwnProperty.call(value, key);
  if (Array.isArray(value)) return value.some((element) => element === key);
  return value === key;
}

/** jsonb -> key / index; undefined when absent. */
export function jsonGet(value: JsonValue, key: string | number): JsonValue | undefined {
  if (typeof key === 'number') {
    // a top-level scalar is stored as a one-element array: -> 0 and -> -1 return it
    if (!Array.isArray(value)) return !isJsonObject(value) && (key === 0 || key === -1) ? value : undefined;
    const index = key < 0 ? value.length + key : key;
    return index >= 0 && index < value.length ? value[index] : undefined;
  }
  if (!isJsonObject(value)) return undefined;
  return Object.prototype.hasOwnProperty.call(value, key) ? value[key] : undefined;
}

/** jsonb #> path: array steps accept integer text. */
export function jsonGetPath(value: JsonValue, path: readonly (string | null)[]): JsonValue | undefined {
  let current: JsonValue | undefined = value;
  for (const step of path) {
    if (current === undefined || step === null) return undefined;
    if (Array.isArray(current)) {
      if (!/^\s*-?\d+\s*$/.test(step)) return undefined;
      current = jsonGet(current, Number(step));
    } else {
      current = jsonGet(current, step);
    }
  }
  return current;
}

/** ->> and #>>: text of a scalar without quotes, JSON text of containers, SQL NULL for json null. */
export function jsonToText(value: JsonValue): string | null {
  if (value === null) return null;
  if (typeof value === 'string') return value;
  return formatJson(value);
}
