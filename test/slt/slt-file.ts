// Reads sqllogictest files in the sqllogictest-rs dialect that RisingWave's e2e tests use, into
// records. It owns the syntax only (running them is runner.ts):
//
//   statement ok | statement error [regex] | statement count N      SQL lines; for `error`, an
//                                                                    optional `----` and the
//                                                                    expected message lines
//   query <types> [rowsort|valuesort|nosort] [label]                 SQL lines, `----`, result lines
//   query error [regex]                                              SQL lines
//   include <glob>          (relative to the including file; * ** ? allowed)
//   skipif <engine> / onlyif <engine>   (apply to the next record)
//   connection <name>       (the next record runs on that named connection)
//   sleep <n>[ms|s|m]  halt  control sortmode <mode>  hash-threshold <n>  subtest <name>
//   system ok               (a shell command: not supported, counted)
//   # comments, blank lines between records
//
// oxbow's extension for its own files: an error expectation that starts with `SQLSTATE XXXXX`
// checks the error's SQLSTATE; any text after the code is a regex on the message.

export type SortMode = 'nosort' | 'rowsort' | 'valuesort';

interface RecordBase {
  /** 1-based line of the record's first line in its file. */
  readonly line: number;
  readonly file: string;
  readonly conditions: readonly { readonly kind: 'skipif' | 'onlyif'; readonly engine: string }[];
  readonly connection?: string;
}

export interface ErrorExpectation {
  /** SQLSTATE to match (oxbow extension), if given. */
  readonly sqlstate?: string;
  /** Regex (sqllogictest-rs: searched in the error text), if given. */
  readonly pattern?: string;
  /** Multi-line expected message after `----`, if given. */
  readonly message?: string;
}

export type SltRecord =
  | (RecordBase & { readonly kind: 'statement'; readonly sql: string; readonly expect: { readonly kind: 'ok' } | { readonly kind: 'count'; readonly count: number } | { readonly kind: 'error'; readonly error: ErrorExpectation } })
  | (RecordBase & { readonly kind: 'query'; readonly sql: string; readonly types: string; readonly sortMode?: SortMode; readonly label?: string; readonly expected: readonly string[] })
  | (RecordBase & { readonly kind: 'queryError'; readonly sql: string; readonly error: ErrorExpectation })
  | (RecordBase & { readonly kind: 'include'; readonly pattern: string })
  | (RecordBase & { readonly kind: 'sleep'; readonly durationMs: number })
  | (RecordBase & { readonly kind: 'halt' })
  | (RecordBase & { readonly kind: 'control'; readonly sortMode: SortMode })
  | (RecordBase & { readonly kind: 'hashThreshold'; readonly threshold: number })
  | (RecordBase & { readonly kind: 'unsupported'; readonly what: string });

export class SltSyntaxError extends Error {
  constructor(file: string, line: number, message: string) {
    super(`${file}:${line}: ${message}`);
  }
}

function parseErrorExpectation(rest: string): ErrorExpectation {
  const text = rest.trim();
  if (text === '') return {};
  const coded = /^SQLSTATE\s+([0-9A-Z]{5})\b\s*(.*)$/.exec(text);
  if (coded !== null) return coded[2] === '' ? { sqlstate: coded[1]! } : { sqlstate: coded[1]!, pattern: coded[2]! };
  return { pattern: text };
}

function parseDurationMs(text: string, file: string, line: number): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min)?$/.exec(text.trim());
  if (match === null) throw new SltSyntaxError(file, line, `bad sleep duration "${text}"`);
  const value = Number(match[1]);
  switch (match[2]) {
    case 'ms':
      return value;
    case 'm':
    case 'min':
      return value * 60_000;
    default:
      return value * 1000;
  }
}

const sortModes = new Set(['nosort', 'rowsort', 'valuesort']);

/** Parses the text of one slt file (`file` names it in errors and records). */
export function parseSlt(text: string, file: string): SltRecord[] {
  const lines = text.split(/\r?\n/);
  const records: SltRecord[] = [];
  let conditions: { kind: 'skipif' | 'onlyif'; engine: string }[] = [];
  let connection: string | undefined;
  let index = 0;
  const isBlank = (line: string | undefined): boolean => line === undefined || line.trim() === '';
  // SQL lines of a record: up to a blank line or `----`.
  const readSql = (): string => {
    const sql: string[] = [];
    while (index < lines.length && !isBlank(lines[index]) && lines[index]!.trim() !== '----') {
      sql.push(lines[index]!);
      index++;
    }
    return sql.join('\n');
  };
  // A multi-line error message may hold single blank lines; two blank lines end it (sqllogictest-rs).
  const readErrorMessage = (): string => {
    const out: string[] = [];
    while (index < lines.length && !(isBlank(lines[index]) && isBlank(lines[index + 1]))) {
      out.push(lines[index]!);
      index++;
    }
    return out.join('\n').trim();
  };
  const readUntilBlank = (): string[] => {
    const out: string[] = [];
    while (index < lines.length && !isBlank(lines[index])) {
      out.push(lines[index]!);
      index++;
    }
    return out;
  };
  while (index < lines.length) {
    const raw = lines[index]!;
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) {
      index++;
      continue;
    }
    const lineNumber = index + 1;
    const words = trimmed.split(/\s+/);
    const head = words[0]!;
    const base = (): RecordBase => {
      const record: RecordBase = connection === undefined ? { line: lineNumber, file, conditions } : { line: lineNumber, file, conditions, connection };
      conditions = [];
      connection = undefined;
      return record;
    };
    index++;
    switch (head) {
      case 'skipif':
      case 'onlyif':
        conditions.push({ kind: head, engine: words[1] ?? '' });
        break;
      case 'connection':
        connection = words[1];
        break;
      case 'statement': {
        const mode = words[1];
        const rest = trimmed.slice(trimmed.indexOf(mode ?? '') + (mode ?? '').length);
        const record = base();
        const sql = readSql();
        if (mode === 'ok') {
          if (lines[index]?.trim() === '----') readUntilBlank();
          records.push({ ...record, kind: 'statement', sql, expect: { kind: 'ok' } });
        } else if (mode === 'count') {
          records.push({ ...record, kind: 'statement', sql, expect: { kind: 'count', count: Number(words[2]) } });
        } else if (mode === 'error') {
          let error = parseErrorExpectation(rest);
          if (lines[index]?.trim() === '----') {
            index++;
            error = { ...error, message: readErrorMessage() };
          }
          records.push({ ...record, kind: 'statement', sql, expect: { kind: 'error', error } });
        } else throw new SltSyntaxError(file, lineNumber, `unknown statement mode "${mode}"`);
        break;
      }
      case 'query': {
        const record = base();
        if (words[1] === 'error') {
          let error = parseErrorExpectation(trimmed.slice(trimmed.indexOf('error') + 5));
          const sql = readSql();
          if (lines[index]?.trim() === '----') {
            index++;
            error = { ...error, message: readErrorMessage() };
          }
          records.push({ ...record, kind: 'queryError', sql, error });
          break;
        }
        const types = words[1] ?? '';
        let sortMode: SortMode | undefined;
        let label: string | undefined;
        for (const word of words.slice(2)) {
          if (sortModes.has(word)) sortMode = word as SortMode;
          else label = word;
        }
        const sql = readSql();
        let expected: string[] = [];
        if (lines[index]?.trim() === '----') {
          index++;
          expected = readUntilBlank();
        }
        const query: SltRecord = { ...record, kind: 'query', sql, types, expected };
        records.push({ ...query, ...(sortMode === undefined ? {} : { sortMode }), ...(label === undefined ? {} : { label }) });
        break;
      }
      case 'include':
        records.push({ ...base(), kind: 'include', pattern: trimmed.slice('include'.length).trim() });
        break;
      case 'sleep':
        records.push({ ...base(), kind: 'sleep', durationMs: parseDurationMs(words.slice(1).join(''), file, lineNumber) });
        break;
      case 'halt':
        records.push({ ...base(), kind: 'halt' });
        break;
      case 'control':
        if (words[1] === 'sortmode' && sortModes.has(words[2] ?? '')) records.push({ ...base(), kind: 'control', sortMode: words[2] as SortMode });
        else records.push({ ...base(), kind: 'unsupported', what: trimmed });
        break;
      case 'hash-threshold':
        records.push({ ...base(), kind: 'hashThreshold', threshold: Number(words[1]) });
        break;
      case 'subtest':
        break;
      case 'system': {
        const record = base();
        readUntilBlank();
        records.push({ ...record, kind: 'unsupported', what: trimmed });
        break;
      }
      default:
        throw new SltSyntaxError(file, lineNumber, `unknown record "${head}"`);
    }
  }
  return records;
}
