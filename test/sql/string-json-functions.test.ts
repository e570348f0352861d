// Differential: string functions, pattern matching and jsonb operators/functions of sql/ vs a
// real PostgreSQL 15 (UTF-8 database, C collation), on random and edge strings.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { arrayOf, type } from '../../sql/types.js';
import { check } from './check.js';

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const SEED = 99;
const alphabet = fc.constantFrom('a', 'b', 'A', ' ', 'é', 'ß', '😀', 'x', '-', ',', '%', '_', '\\', '.', '1', 'Z');
const strings = [
  ...fc.sample(fc.array(alphabet, { maxLength: 10 }).map((chars) => chars.join('')), { numRuns: 60, seed: SEED }),
  '', ' ', 'hello world', 'Hello World', 'ÉCOLE', 'straße', 'a,b,,c', '  padded  ', 'xxabcxx', '😀😀', 'mIxEd CaSe wOrDs',
];
const text = type('text');
const int4 = type('int4');

describe('string functions', () => {
  it('single-argument functions', async () => {
    for (const name of ['length', 'char_length', 'octet_length', 'lower', 'upper', 'initcap', 'reverse', 'md5', 'ascii', 'btrim', 'ltrim', 'rtrim', 'quote_ident', 'quote_literal', 'bit_length']) {
      await check(server, { name, types: [text] }, strings.map((s) => [s]));
    }
  });
  it('substr, left, right, repeat, lpad, rpad with positions and counts', async () => {
    const counts = ['-3', '-1', '0', '1', '2', '5', '20'];
    const rows = strings.slice(0, 40).flatMap((s) => counts.map((n) => [s, n]));
    for (const name of ['substr', 'left', 'right', 'repeat', 'lpad', 'rpad']) await check(server, { name, types: [text, int4] }, rows);
    await check(server, { name: 'substr', types: [text, int4, int4] }, strings.slice(0, 30).flatMap((s) => [['-2', '4'], ['0', '2'], ['2', '3'], ['3', '-1'], ['1', '100']].map(([a, b]) => [s, a!, b!])));
    await check(server, { name: 'lpad', types: [text, int4, text] }, strings.slice(0, 30).map((s) => [s, '7', 'xy😀']));
  });
  it('two- and three-argument functions', async () => {
    const pairs = strings.slice(0, 30).flatMap((s) => ['a', 'b', '', 'ab', 'é', ' '].map((t) => [s, t]));
    for (const name of ['strpos', 'starts_with', 'btrim', 'ltrim', 'rtrim']) await check(server, { name, types: [text, text] }, pairs);
    await check(server, { name: 'replace', types: [text, text, text] }, pairs.map(([s, t]) => [s!, t!, '<>']));
    await check(server, { name: 'translate', types: [text, text, text] }, pairs.map(([s, t]) => [s!, t! + 'x', 'Q']));
    await check(server, { name: 'split_part', types: [text, text, int4] }, ['a,b,,c', 'abc', '', ',x,'].flatMap((s) => ['1', '2', '3', '4', '-1', '-2', '0'].map((n) => [s, ',', n])));
    // Fields walked from the start and cut from the end, multi-character and overlapping delimiters
    // (fields cut left to right), an empty delimiter, a URL as Nexmark q22's, a field past the end.
    const splits = ['https://www.nexmark.com/abc/d_e/ffff/item.htm?query=1', 'aaaaa', 'a::b::::c', '😀/é//x', 'no delimiter'].flatMap((s) =>
      ['/', 'aa', '::', '', 'x'].flatMap((d) => ['1', '2', '4', '6', '9', '2147483647', '-1', '-3', '-2147483648'].map((n) => [s, d, n])),
    );
    await check(server, { name: 'split_part', types: [text, text, int4] }, splits);
    // A replacement with `$` patterns is taken literally; overlapping matches replaced left to right.
    await check(server, { name: 'replace', types: [text, text, text] }, [['a$b$c', '$', '$&'], ['xaaay', 'aa', '$1'], ['abcabc', 'b', '$$'], ['aaaa', 'aa', 'b'], ['😀x😀', '😀', "$'"]]);
    await check(server, { name: 'to_hex', types: [int4] }, [['0'], ['255'], ['-1'], ['2147483647'], ['-2147483648']]);
    await check(server, { name: 'chr', types: [int4] }, [['65'], ['233'], ['128512'], ['0'], ['-1'], ['1114112']]);
  });
  it('concat, concat_ws and format with mixed argument types', async () => {
    await check(server, { name: 'concat', types: [text, int4, type('bool'), type('numeric'), type('date')] }, [['a', '1', 't', '1.50', '2020-01-01'], ['b', null, null, '2', null]]);
    await check(server, { name: 'concat_ws', types: [text, text, int4, type('float8')] }, [[',', 'a', '1', '1.5'], ['-', null, '2', 'NaN'], [null, 'a', '1', '2']]);
    await check(server, { name: 'format', types: [text, text, int4] }, [['%s and %s', 'x', '1'], ['%I / %L', 'My Table', '5'], ['%2$s %1$s', 'a', '2'], ['%-5s|%5s|', 'ab', '7'], ['100%%', 'x', '1'], ['%L', null, '1'], ['%s %s %s', 'a', '1'], ['%z', 'a', '1']]);
  });
  it('LIKE, ILIKE and regular expressions', async () => {
    const patterns = ['%', 'a%', '%b', '_', '__', '%é%', 'A%', 'a\\%', '%\\_%', '', 'h_llo%', '%😀'];
    const rows = strings.slice(0, 40).flatMap((s) => patterns.map((p) => [s, p]));
    for (const op of ['~~', '~~*', '!~~']) await check(server, { name: op, operator: true, types: [text, text] }, rows);
    const regexes = ['^a', 'b$', '[[:upper:]]', '[[:digit:]]+', 'a|b', '^$', '.', '(ab)+', '[^a-z]', '\\s', 'é', '^[[:alpha:] ]*$'];
    const regexRows = strings.slice(0, 40).flatMap((s) => regexes.map((r) => [s, r]));
    for (const op of ['~', '~*', '!~']) await check(server, { name: op, operator: true, types: [text, text] }, regexRows);
    await check(server, { name: 'regexp_replace', types: [text, text, text] }, strings.slice(0, 30).map((s) => [s, '[aeiou]', '<\\&>']));
    await check(server, { name: 'regexp_replace', types: [text, text, text, text] }, strings.slice(0, 30).map((s) => [s, '(a)(b)?', '[\\2\\1]', 'gi']));
    await check(server, { name: 'regexp_match', types: [text, text] }, strings.slice(0, 30).map((s) => [s, '([a-z]+)( [a-z]+)?']));
    await check(server, { name: '~', operator: true, types: [text, text] }, [['a', '(']]);
  });
});

const jsonDocuments = [
  ...fc.sample(fc.jsonValue({ maxDepth: 2 }), { numRuns: 40, seed: SEED }).map((v) => JSON.stringify(v)),
  '{"a": 1, "b": {"c": [1, 2, {"d": "x"}]}, "e": null}', '[1, "a", null, true, [2]]', '"scalar"', '42', 'null', '{}', '[]', '{"a": 1.50, "aa": [1.0]}',
];
const jsonb = type('jsonb');

describe('jsonb', () => {
  it('-> ->> #> #>> with keys, indexes and paths', async () => {
    const keys = ['a', 'b', 'e', 'zz', ''];
    await check(server, { name: '->', operator: true, types: [jsonb, text] }, jsonDocuments.flatMap((d) => keys.map((k) => [d, k])));
    await check(server, { name: '->>', operator: true, types: [jsonb, text] }, jsonDocuments.flatMap((d) => keys.map((k) => [d, k])));
    await check(server, { name: '->', operator: true, types: [jsonb, int4] }, jsonDocuments.flatMap((d) => ['0', '1', '-1', '4', '-9'].map((k) => [d, k])));
    await check(server, { name: '->>', operator: true, types: [jsonb, int4] }, jsonDocuments.flatMap((d) => ['0', '1', '-1', '4'].map((k) => [d, k])));
    const paths = ['{b,c,2,d}', '{b,c}', '{a}', '{}', '{b,c,-1}', '{x,y}', '{1}'];
    await check(server, { name: '#>', operator: true, types: [jsonb, arrayOf(text)] }, jsonDocuments.flatMap((d) => paths.map((p) => [d, p])));
    await check(server, { name: '#>>', operator: true, types: [jsonb, arrayOf(text)] }, jsonDocuments.flatMap((d) => paths.map((p) => [d, p])));
  });
  it('@> <@ ? ?| ?& || - and equality', async () => {
    const others = ['{"a": 1}', '{"b": {"c": [1]}}', '[1]', '1', '"a"', '{}', '[]', '[[2]]', '{"a": 1.0}', 'null'];
    const rows = jsonDocuments.flatMap((d) => others.map((o) => [d, o]));
    for (const op of ['@>', '<@', '=', '<', '||']) await check(server, { name: op, operator: true, types: [jsonb, jsonb] }, rows);
    await check(server, { name: '?', operator: true, types: [jsonb, text] }, jsonDocuments.flatMap((d) => ['a', 'scalar', 'e', 'x'].map((k) => [d, k])));
    await check(server, { name: '?|', operator: true, types: [jsonb, arrayOf(text)] }, jsonDocuments.map((d) => [d, '{a,x}']));
    await check(server, { name: '?&', operator: true, types: [jsonb, arrayOf(text)] }, jsonDocuments.map((d) => [d, '{a,b}']));
    await check(server, { name: '-', operator: true, types: [jsonb, text] }, jsonDocuments.map((d) => [d, 'a']));
  });
  it('jsonb functions', async () => {
    for (const name of ['jsonb_typeof', 'jsonb_array_length', 'jsonb_strip_nulls', 'jsonb_pretty']) await check(server, { name, types: [jsonb] }, jsonDocuments.map((d) => [d]));
    await check(server, { name: 'jsonb_extract_path', types: [jsonb, text, text] }, jsonDocuments.map((d) => [d, 'b', 'c']));
    await check(server, { name: 'jsonb_extract_path_text', types: [jsonb, text] }, jsonDocuments.map((d) => [d, 'a']));
    await check(server, { name: 'jsonb_build_object', types: [text, int4, text, type('numeric'), text, type('timestamptz'), text, type('bool')] },
      [['a', '1', 'b', '2.50', 'c', '2020-01-01 10:00:00+02', 'd', 't'], ['z', null, 'a', 'NaN', 'c', 'infinity', 'e', null]]);
    await check(server, { name: 'to_jsonb', types: [type('timestamp')] }, [['2020-01-01 10:00:00.5'], ['infinity']]);
    await check(server, { name: 'to_jsonb', types: [type('float8')] }, [['1.5'], ['NaN'], ['1e100'], ['-0']]);
    await check(server, { name: 'to_jsonb', types: [arrayOf(int4)] }, [['{1,NULL,3}']]);
    await check(server, { name: 'jsonb_set', types: [jsonb, arrayOf(text), jsonb] }, jsonDocuments.map((d) => [d, '{b,c}', '"new"']));
  });
});

describe('arrays', () => {
  it('array functions on int4[] and text[]', async () => {
    const intArray = arrayOf(int4);
    const arrays = ['{}', '{1,2,3}', '{1,NULL,3,1}', '{{1,2},{3,4}}'];
    await check(server, { name: 'array_length', types: [intArray, int4] }, arrays.flatMap((a) => ['1', '2', '0'].map((d) => [a, d])));
    await check(server, { name: 'cardinality', types: [intArray] }, arrays.map((a) => [a]));
    await check(server, { name: 'array_upper', types: [intArray, int4] }, arrays.map((a) => [a, '1']));
    await check(server, { name: 'array_append', types: [intArray, int4] }, [['{1,2}', '3'], ['{}', null], [null, '1']]);
    await check(server, { name: 'array_prepend', types: [int4, intArray] }, [['0', '{1,2}'], [null, '{}']]);
    await check(server, { name: 'array_cat', types: [intArray, intArray] }, [['{1}', '{2,3}'], [null, '{1}'], ['{}', '{}']]);
    await check(server, { name: 'array_position', types: [intArray, int4] }, [['{1,2,3,2}', '2'], ['{1,NULL}', null], ['{1}', '5']]);
    await check(server, { name: 'array_remove', types: [intArray, int4] }, [['{1,2,3,2}', '2'], ['{1,NULL}', null]]);
    await check(server, { name: 'array_replace', types: [arrayOf(text), text, text] }, [['{a,b,a}', 'a', 'z'], ['{a,NULL}', null, 'n']]);
  });
});

describe('pattern helpers and encodings', () => {
  it('LIKE ... ESCAPE, SIMILAR TO, encode/decode', async () => {
    // LIKE ... ESCAPE and SIMILAR TO are rewritten by PostgreSQL's parser into these functions
    await check(server, { name: 'like_escape', types: [text, text] }, [['a!%c', '!'], ['a\\%', ''], ['100!%!!', '!'], ['ab', 'xy'], ['a!', '!']]);
    const similar = ['a%', '%(b|x)%', 'a_c', '[a-c]+', 'a.c', '(ab|xy)z?c?', '$^', 'a\\%', '[%_]'];
    await check(server, { name: 'similar_to_escape', types: [text] }, similar.map((p) => [p]));
    await check(server, { name: 'similar_to_escape', types: [text, text] }, similar.map((p) => [p, '#']));
    const bytea = type('bytea');
    for (const format of ['hex', 'base64', 'escape']) {
      await check(server, { name: 'encode', types: [bytea, text] }, ['\\x', '\\x00ff10', '\\x5c6162', '\\x' + 'ab'.repeat(70)].map((b) => [b, format]));
    }
    await check(server, { name: 'decode', types: [text, text] }, [['00ff', 'hex'], ['AP8=', 'base64'], ['a\\001b', 'escape'], ['zz', 'hex'], ['abc', 'rot13']]);
  });
});
