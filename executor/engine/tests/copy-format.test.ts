// COPY text and CSV parsing and encoding, PostgreSQL's documented rules (COPY reference page,
// "File Formats"): escapes, NULL markers, quoting, multi-line quoted fields, HEADER, end marker,
// chunks split anywhere (even inside a UTF-8 character).
import { describe, expect, it } from 'vitest';
import { CopyLineReader, defaultCopyOptions, encodeCopyLine } from '../copy-format.js';
import { SqlError } from '../../../sql/errors.js';

function readAll(input: string, format: 'text' | 'csv', extra: Partial<ReturnType<typeof defaultCopyOptions>> = {}, chunkSize = 0) {
  const reader = new CopyLineReader({ ...defaultCopyOptions(format), ...extra }, 'COPY t');
  const bytes = new TextEncoder().encode(input);
  const lines = [];
  if (chunkSize === 0) lines.push(...reader.push(bytes));
  else for (let offset = 0; offset < bytes.length; offset += chunkSize) lines.push(...reader.push(bytes.subarray(offset, offset + chunkSize)));
  lines.push(...reader.end());
  return lines.map((line) => line.fields);
}

describe('COPY text format', () => {
  it('splits on tabs, reads \\N as NULL and decodes escapes', () => {
    expect(readAll('1\tabc\t\\N\n2\ta\\tb\\nc\\\\d\t\n', 'text')).toEqual([
      ['1', 'abc', null],
      ['2', 'a\tb\nc\\d', ''],
    ]);
  });
  it('decodes octal and hex escapes and an escaped delimiter', () => {
    expect(readAll('\\101\\x42\\\t|x\n', 'text')).toEqual([['AB\t|x']]);
  });
  it('stops at the end marker and accepts a last line without newline and CRLF endings', () => {
    expect(readAll('a\r\nb\n\\.\nignored\n', 'text')).toEqual([['a'], ['b']]);
    expect(readAll('a\nb', 'text')).toEqual([['a'], ['b']]);
  });
  it('handles chunks that split lines and multi-byte characters', () => {
    expect(readAll('é\tü\n日本\t語\n', 'text', {}, 1)).toEqual([
      ['é', 'ü'],
      ['日本', '語'],
    ]);
  });
  it('honours a custom delimiter and NULL string', () => {
    expect(readAll('1|NULL|x\n', 'text', { delimiter: '|', nullString: 'NULL' })).toEqual([['1', null, 'x']]);
  });
});

describe('COPY csv format', () => {
  it('unquoted empty is NULL, quoted empty is an empty string, doubled quotes are quotes', () => {
    expect(readAll('1,,""\n2,"a ""b"", c",x\n', 'csv')).toEqual([
      ['1', null, ''],
      ['2', 'a "b", c', 'x'],
    ]);
  });
  it('quoted fields span lines, even across chunks', () => {
    expect(readAll('1,"line one\nline two"\n2,z\n', 'csv', {}, 3)).toEqual([
      ['1', 'line one\nline two'],
      ['2', 'z'],
    ]);
  });
  it('skips the header line', () => {
    expect(readAll('id,name\n1,a\n', 'csv', { header: true })).toEqual([['1', 'a']]);
  });
  it('honours ESCAPE different from QUOTE', () => {
    expect(readAll('"a\\"b"\n', 'csv', { escape: '\\' })).toEqual([['a"b']]);
  });
  it('reports an unterminated quoted field as 22P04 with the line in the context', () => {
    let error: unknown;
    try {
      readAll('1,"open\n', 'csv');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SqlError);
    expect((error as SqlError).code).toBe('22P04');
    expect((error as SqlError).message).toBe('unterminated CSV quoted field');
    expect((error as SqlError).context).toMatch(/^COPY t, line 1/);
  });
});

describe('COPY encoding', () => {
  it('text: escapes backslash, tab, newline, carriage return; NULL as \\N', () => {
    const options = defaultCopyOptions('text');
    expect(encodeCopyLine(['a\\b', 'c\td', 'e\nf\rg', null], options)).toBe('a\\\\b\tc\\td\te\\nf\\rg\t\\N\n');
  });
  it('csv: quotes only when needed; NULL is empty, empty string is ""', () => {
    const options = defaultCopyOptions('csv');
    expect(encodeCopyLine(['plain', 'a,b', 'say "hi"', '', null, 'two\nlines'], options)).toBe('plain,"a,b","say ""hi""","",,"two\nlines"\n');
  });
  it('round-trips through the reader', () => {
    for (const format of ['text', 'csv'] as const) {
      const options = defaultCopyOptions(format);
      const rows = [['x', null, '', 'a\tb,"c"\nd\\e']];
      const encoded = rows.map((row) => encodeCopyLine(row, options)).join('');
      expect(readAll(encoded, format)).toEqual(rows);
    }
  });
});
