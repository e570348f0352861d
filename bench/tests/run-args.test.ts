// `npm run bench`'s command line (bench/support/run-args.ts): switches without a value pass through
// to the suites as kafka.ts reads them (`args.includes('--skip-generator')`), `--flag value` pairs
// as the suites' `flag()` reads them, and bad input is refused with a message naming what is wrong.
import { describe, expect, it } from 'vitest';
import { parseRunArguments, RunArgumentError } from '../support/run-args.js';

const SUITES = ['kafka', 'nexmark', 'storage'];
const parse = (...args: string[]) => parseRunArguments(args, SUITES);

function refusal(...args: string[]): string {
  try {
    parse(...args);
  } catch (error) {
    if (error instanceof RunArgumentError) return error.message;
    throw error;
  }
  throw new Error(`expected ${args.join(' ')} to be refused`);
}

describe('bench/run.ts command line', () => {
  it('passes a switch with no value through, at the end, before a flag or before a suite name', () => {
    expect(parse('kafka', '--skip-generator')).toMatchObject({ suites: ['kafka'], suiteArgs: ['--skip-generator'] });
    expect(parse('--skip-generator', '--events', '1000', 'kafka')).toMatchObject({ suites: ['kafka'], suiteArgs: ['--skip-generator', '--events', '1000'] });
    expect(parse('--skip-generator', 'kafka')).toMatchObject({ suites: ['kafka'], suiteArgs: ['--skip-generator'] });
  });

  it('passes --flag value and --flag=value as pairs, in order; a value may be a suite name only after =', () => {
    expect(parse('nexmark', '--queries', 'q4,q5', '--events=2000000', '--heap-growing-percent', '-1')).toMatchObject({
      suites: ['nexmark'],
      suiteArgs: ['--queries', 'q4,q5', '--events', '2000000', '--heap-growing-percent', '-1'],
    });
    expect(parse('--label=storage', 'kafka').suiteArgs).toEqual(['--label', 'storage']);
    expect(parse('--base-dist=--odd').suiteArgs).toEqual(['--base-dist', '--odd']);
  });

  it('keeps --out and --scale for itself', () => {
    expect(parse('--out', 'figures.jsonl', '--scale=0.1', 'storage', '--rows', '5')).toEqual({ suites: ['storage'], out: 'figures.jsonl', scale: '0.1', suiteArgs: ['--rows', '5'], help: false });
    expect(parse('-h').help).toBe(true);
  });

  it('refuses an unknown suite, a malformed flag, and --out or --scale without a good value', () => {
    expect(refusal('kafak')).toBe('unknown suite "kafak"');
    expect(refusal('-x')).toContain('malformed flag "-x"');
    expect(refusal('--')).toContain('malformed flag "--"');
    expect(refusal('---events', '5')).toContain('malformed flag "---events"');
    expect(refusal('--=5')).toContain('malformed flag "--=5"');
    expect(refusal('--out')).toBe('--out needs a value (a file)');
    expect(refusal('--out', '--scale', '1')).toBe('--out needs a value (a file)');
    expect(refusal('--scale', 'kafka')).toBe('--scale needs a value (a positive number)');
    expect(refusal('--scale', '-1')).toBe('--scale must be a positive number, not "-1"');
  });
});
