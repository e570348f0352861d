// COPY's text and CSV formats, PostgreSQL's rules, with no knowledge of tables: a streaming line
// splitter that turns CopyData chunks into rows of field strings (null for SQL NULL), and the
// encoders that turn field strings back into lines for COPY TO.
//
// Text format: fields split by the delimiter (tab), NULL written as \N, backslash escapes
// (\b \f \n \r \t \v, \NNN octal, \xHH hex, any other character taken literally), a line `\.`
// ends the data. CSV: fields split by the delimiter (comma), quoted with `"` where a doubled quote
// (or the ESCAPE character) stands for a quote, quoted fields may span lines, an unquoted empty
// field is NULL and a quoted empty field is an empty string; HEADER skips the first line.

import { SqlError, SqlState } from '../../sql/errors.js';

export interface CopyFormatOptions {
  readonly format: 'text' | 'csv';
  readonly delimiter: string;
  readonly nullString: string;
  readonly header: boolean;
  readonly quote: string;
  readonly escape: string;
}

export function defaultCopyOptions(format: 'text' | 'csv'): CopyFormatOptions {
  return format === 'csv'
    ? { format, delimiter: ',', nullString: '', header: false, quote: '"', escape: '"' }
    : { format, delimiter: '\t', nullString: '\\N', header: false, quote: '"', escape: '"' };
}

/** One parsed input line: its fields (null = NULL), 1-based line number and raw text for errors. */
export interface CopyLine {
  readonly fields: (string | null)[];
  readonly lineNumber: number;
  readonly raw: string;
}

function badFormat(message: string, context: string): SqlError {
  return new SqlError(SqlState.badCopyFileFormat, message, { context });
}

/** Splits CopyData chunks into fields, line by line. Feed with push(), finish with end(). */
export class CopyLineReader {
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });
  private pending = '';
  private lineNumber = 0;
  private ended = false;
  private headerSkipped = false;

  constructor(
    private readonly options: CopyFormatOptions,
    /** `COPY t` prefix for CONTEXT lines. */
    private readonly contextPrefix: string,
  ) {}

  /** Feeds a chunk; returns the complete lines it finished. */
  push(chunk: Uint8Array): CopyLine[] {
    this.pending += this.decoder.decode(chunk, { stream: true });
    return this.drain(false);
  }

  /** No more data: returns the last lines (a final line without a newline counts). */
  end(): CopyLine[] {
    this.pending += this.decoder.decode();
    const lines = this.drain(true);
    if (this.options.format === 'csv' && this.pending !== '' && !this.ended) {
      throw badFormat('unterminated CSV quoted field', `${this.contextPrefix}, line ${this.lineNumber + 1}: "${this.pending}"`);
    }
    return lines;
  }

  private drain(final: boolean): CopyLine[] {
    const lines: CopyLine[] = [];
    const text = this.pending;
    // Lines are cut from `text` by position; the unfinished rest is kept once, at the end.
    let position = 0;
    while (!this.ended) {
      const end = this.options.format === 'csv' ? this.csvRecordEnd(text, position) : text.indexOf('\n', position);
      let raw: string;
      if (end < 0) {
        if (!final || position >= text.length) break;
        if (this.options.format === 'csv' && this.csvRecordEnd(`${text}\n`, position) < 0) break;
        raw = text.slice(position);
        position = text.length;
      } else {
        raw = text.slice(position, end);
        position = end + 1;
      }
      if (raw.endsWith('\r')) raw = raw.slice(0, -1);
      this.lineNumber++;
      if (raw === '\\.') {
        this.ended = true;
        position = text.length;
        break;
      }
      if (this.options.header && !this.headerSkipped) {
        this.headerSkipped = true;
        continue;
      }
      const fields = this.options.format === 'csv' ? this.csvFields(raw) : this.textFields(raw);
      lines.push({ fields, lineNumber: this.lineNumber, raw });
    }
    this.pending = position === 0 ? text : text.slice(position);
    return lines;
  }

  /** Index of the newline that ends the first CSV record (outside quotes), or -1. */
  private csvRecordEnd(text: string, from: number): number {
    const { quote, escape } = this.options;
    let inQuotes = false;
    for (let index = from; index < text.length; index++) {
      const character = text[index];
      if (inQuotes) {
        if (character === escape && escape !== quote && (text[index + 1] === quote || text[index + 1] === escape)) index++;
        else if (character === quote) {
          if (escape === quote && text[index + 1] === quote) index++;
          else inQuotes = false;
        }
      } else if (character === quote) inQuotes = true;
      else if (character === '\n') return index;
    }
    return -1;
  }

  private csvFields(line: string): (string | null)[] {
    const { quote, escape, delimiter, nullString } = this.options;
    // Fast path: a line without quotes is a plain split.
    if (line.indexOf(quote) < 0) {
      const parts: (string | null)[] = line.split(delimiter);
      for (let index = 0; index < parts.length; index++) if (parts[index] === nullString) parts[index] = null;
      return parts;
    }
    const fields: (string | null)[] = [];
    let index = 0;
    for (;;) {
      let value = '';
      let quoted = false;
      let unquotedText = '';
      while (index < line.length && line[index] !== delimiter) {
        const character = line[index]!;
        if (character === quote) {
          quoted = true;
          index++;
          for (;;) {
            if (index >= line.length) {
              throw badFormat('unterminated CSV quoted field', `${this.contextPrefix}, line ${this.lineNumber}: "${line}"`);
            }
            const inner = line[index]!;
            // The escape character before a quote (or before itself) stands for that character.
            if (inner === escape && (line[index + 1] === quote || (escape !== quote && line[index + 1] === escape))) {
              value += line[index + 1];
              index += 2;
              continue;
            }
            if (inner === quote) {
              index++;
              break;
            }
            value += inner;
            index++;
          }
        } else {
          value += character;
          unquotedText += character;
          index++;
        }
      }
      fields.push(!quoted && unquotedText === nullString && value === nullString ? null : value);
      if (index >= line.length) break;
      index++; // the delimiter
    }
    return fields;
  }

  private textFields(line: string): (string | null)[] {
    const { delimiter, nullString } = this.options;
    // Fast path: a line without backslashes is a plain split.
    if (line.indexOf('\\') < 0) {
      const parts: (string | null)[] = line.split(delimiter);
      for (let index = 0; index < parts.length; index++) if (parts[index] === nullString) parts[index] = null;
      return parts;
    }
    const fields: (string | null)[] = [];
    let raw = '';
    let value = '';
    for (let index = 0; index <= line.length; index++) {
      const character = line[index];
      if (index === line.length || character === delimiter) {
        fields.push(raw === nullString ? null : value);
        raw = '';
        value = '';
        continue;
      }
      if (character !== '\\') {
        raw += character;
        value += character;
        continue;
      }
      const next = line[index + 1];
      if (next === undefined) {
        raw += character;
        value += character;
        continue;
      }
      raw += character + next;
      index++;
      switch (next) {
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'n':
          value += '\n';
          break;
        case 'r':
          value += '\r';
          break;
        case 't':
          value += '\t';
          break;
        case 'v':
          value += '\v';
          break;
        case 'x': {
          const hex = /^[0-9a-fA-F]{1,2}/.exec(line.slice(index + 1));
          if (hex === null) value += 'x';
          else {
            value += String.fromCharCode(parseInt(hex[0], 16));
            raw += hex[0];
            index += hex[0].length;
          }
          break;
        }
        default:
          if (next >= '0' && next <= '7') {
            const octal = /^[0-7]{1,3}/.exec(line.slice(index))![0];
            value += String.fromCharCode(parseInt(octal, 8));
            raw += octal.slice(1);
            index += octal.length - 1;
          } else value += next;
      }
    }
    return fields;
  }
}

/** One COPY TO line (with the trailing newline) from field strings (null = NULL). */
export function encodeCopyLine(fields: readonly (string | null)[], options: CopyFormatOptions): string {
  const parts = new Array<string>(fields.length);
  for (let index = 0; index < fields.length; index++) {
    const field = fields[index]!;
    parts[index] = options.format === 'csv' ? encodeCsvField(field, options) : encodeTextField(field, options);
  }
  return `${parts.join(options.delimiter)}\n`;
}

function encodeTextField(field: string | null, options: CopyFormatOptions): string {
  if (field === null) return options.nullString;
  let out = '';
  for (const character of field) {
    switch (character) {
      case '\\':
        out += '\\\\';
        break;
      case '\n':
        out += '\\n';
        break;
      case '\r':
        out += '\\r';
        break;
      case '\t':
        out += '\\t';
        break;
      case '\b':
        out += '\\b';
        break;
      case '\f':
        out += '\\f';
        break;
      case '\v':
        out += '\\v';
        break;
      default:
        out += character === options.delimiter ? `\\${character}` : character;
    }
  }
  return out;
}

function encodeCsvField(field: string | null, options: CopyFormatOptions): string {
  if (field === null) return options.nullString;
  const { quote, escape, delimiter } = options;
  const needsQuotes =
    field === options.nullString ||
    field === '\\.' ||
    field.includes(delimiter) ||
    field.includes(quote) ||
    field.includes('\n') ||
    field.includes('\r');
  if (!needsQuotes) return field;
  let out = quote;
  for (const character of field) {
    if (character === quote || character === escape) out += escape;
    out += character;
  }
  return out + quote;
}
