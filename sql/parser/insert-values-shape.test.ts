// insertValuesShape: which texts are lifted, into what parameterized text and literal kinds
// (expected values by hand, from PostgreSQL's constant typing: an integer is int4 when it fits,
// else int8, else numeric; a decimal is numeric; a string or NULL is unknown).
import { describe, expect, it } from 'vitest';
import { insertValuesShape } from './insert-values-shape.js';

describe('insertValuesShape', () => {
  it('lifts integers, decimals, strings, NULL and booleans into parameters', () => {
    const shape = insertValuesShape("insert into t values (1, -7, 2.50, -.5e3, 'it''s', NULL, true, FALSE)");
    expect(shape?.parameterizedText).toBe('insert into t values ($1, $2, $3, $4, $5, $6, $7, $8)');
    expect(shape?.literals).toEqual([
      { kind: 'int4', text: '1' },
      { kind: 'int4', text: '-7' },
      { kind: 'numeric', text: '2.50' },
      { kind: 'numeric', text: '-.5e3' },
      { kind: 'string', text: "it's" },
      { kind: 'null', text: '' },
      { kind: 'bool', text: 'true' },
      { kind: 'bool', text: 'false' },
    ]);
  });

  it('types integers by magnitude as PostgreSQL does', () => {
    const kinds = (text: string) => insertValuesShape(`insert into t values (${text})`)?.literals[0]?.kind;
    expect(kinds('2147483647')).toBe('int4');
    expect(kinds('-2147483647')).toBe('int4');
    expect(kinds('2147483648')).toBe('int8');
    expect(kinds('9223372036854775807')).toBe('int8');
    expect(kinds('9223372036854775808')).toBe('numeric');
    expect(kinds('007')).toBe('int4');
  });

  it('gives texts that differ only in literal values one key, and different kinds different keys', () => {
    const a = insertValuesShape('INSERT INTO s.t (a, "B") VALUES (1, \'x\'), (2, NULL);');
    const b = insertValuesShape('INSERT INTO s.t (a, "B") VALUES (99, \'y\'), (-3, NULL)');
    const c = insertValuesShape('INSERT INTO s.t (a, "B") VALUES (1.5, \'x\'), (2, NULL)');
    const d = insertValuesShape('INSERT INTO s.t (a, "B") VALUES (1, NULL), (2, \'x\')');
    expect(a?.parameterizedText).toBe('INSERT INTO s.t (a, "B") VALUES ($1, $2), ($3, $4)');
    expect(a?.key).toBe(b?.key);
    expect(c?.key).not.toBe(a?.key);
    expect(d?.key).not.toBe(a?.key);
  });

  it('keeps DEFAULT in the text', () => {
    const shape = insertValuesShape('insert into t values (1, default)');
    expect(shape?.parameterizedText).toBe('insert into t values ($1, DEFAULT)');
    expect(shape?.literals).toHaveLength(1);
  });

  it('leaves everything else to the parser', () => {
    for (const text of [
      'insert into t values (1) returning id',
      'insert into t values (1) on conflict do nothing',
      'insert into t values (1 + 1)',
      'insert into t values (-x)',
      "insert into t values (E'a\\nb')",
      "insert into t values (date '2020-01-01')",
      "insert into t values ('2020-01-01'::date)",
      "insert into t values ('a' 'b')",
      'insert into t values (0x1F)',
      'insert into t values (1_000)',
      'insert into t values (1.2.3)',
      'insert into t values ($1)',
      'insert into t values (1) -- comment',
      'insert into t values (/* c */ 1)',
      'insert into t values (1); insert into t values (2)',
      'insert into t select 1',
      'insert into t default values',
      'insert into t values (default)',
      'insert into a.b.c values (1)',
      "insert into t values ('unterminated)",
      'insert into t values (1',
      'update t set a = 1',
      'insert into "t""q" values (1)',
      "insert into U&\"t\" values (1)",
    ]) {
      expect(insertValuesShape(text), text).toBeUndefined();
    }
  });
});
