// The command line of `npm run bench` (bench/run.ts), parsed without side effects so a test can
// check it: suite names, the runner's own `--out FILE` and `--scale X`, and every other flag passed
// through to the suites as written. A suite reads its flags as `--name value` pairs
// (`args[args.indexOf(name) + 1]`) or as switches (`args.includes('--skip-generator')`), so the
// runner cannot know which flags take a value: a flag takes the next argument as its value unless
// that argument is another flag or a suite's name; `--flag=value` says it outright (for a value
// that is a suite's name or starts with `--`) and is passed on as the pair `--flag value`.

export interface RunArguments {
  readonly suites: readonly string[];
  readonly out: string | undefined;
  readonly scale: string | undefined;
  /** Passed to every suite, in order: `--flag value` pairs and `--switch`es. */
  readonly suiteArgs: readonly string[];
  readonly help: boolean;
}

/** A command line the runner refuses; the message says what is wrong. */
export class RunArgumentError extends Error {}

const FLAG_NAME = /^--[A-Za-z0-9][A-Za-z0-9-]*$/;

/** Parses `args` (process.argv after the script) against the suites `available`. */
export function parseRunArguments(args: readonly string[], available: readonly string[]): RunArguments {
  const suites: string[] = [];
  const suiteArgs: string[] = [];
  let out: string | undefined;
  let scale: string | undefined;
  let help = false;
  const isValue = (arg: string | undefined): arg is string => arg !== undefined && !arg.startsWith('--') && !available.includes(arg);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    if (!arg.startsWith('-')) {
      if (!available.includes(arg)) throw new RunArgumentError(`unknown suite "${arg}"`);
      suites.push(arg);
      continue;
    }
    const equals = arg.indexOf('=');
    const name = equals < 0 ? arg : arg.slice(0, equals);
    if (!FLAG_NAME.test(name)) throw new RunArgumentError(`malformed flag "${arg}": flags are --name, --name value or --name=value`);
    let value: string | undefined;
    if (equals >= 0) value = arg.slice(equals + 1);
    else if (isValue(args[i + 1])) value = args[++i];
    if (name === '--out' || name === '--scale') {
      if (value === undefined || value === '') throw new RunArgumentError(`${name} needs a value (${name === '--out' ? 'a file' : 'a positive number'})`);
      if (name === '--out') out = value;
      else if (!(Number(value) > 0)) throw new RunArgumentError(`--scale must be a positive number, not "${value}"`);
      else scale = value;
      continue;
    }
    suiteArgs.push(name);
    if (value !== undefined) suiteArgs.push(value);
  }
  return { suites, out, scale, suiteArgs, help };
}
