// Running test/tools/jdbc/Metadata.java: the schema both servers get, the driver jar
// (scripts/jdbc-tools.sh) and the program's JSON lines, shared by jdbc.test.ts and
// jdbc-queries.test.ts; `runJavaLines` runs any of the folder's single-file programs
// (tls-drivers.test.ts runs Tls.java).
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PROGRAM = 'test/tools/jdbc/Metadata.java';

// Foreign keys are left out: oxbow refuses FOREIGN KEY constraints (0A000), so getImportedKeys
// and getExportedKeys compare empty on both sides.
export const SCHEMA = [
  'CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, email varchar(80))',
  'CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int NOT NULL, amount numeric(10,2), placed_at timestamptz, note text, tags text[])',
  'CREATE INDEX orders_customer_idx ON orders (customer_id)',
  'CREATE TABLE lines (order_id bigint, line int, qty int, PRIMARY KEY (order_id, line))',
  'CREATE VIEW big_orders AS SELECT id, amount FROM orders WHERE amount > 100',
  'CREATE MATERIALIZED VIEW customer_totals AS SELECT customer_id, count(*) AS n, sum(amount) AS total FROM orders GROUP BY customer_id',
  "COMMENT ON TABLE customers IS 'who buys'",
  "COMMENT ON COLUMN customers.email IS 'where to write'",
  'CREATE FUNCTION add_one(x int) RETURNS int LANGUAGE sql IMMUTABLE RETURN x + 1',
  "INSERT INTO customers VALUES (1, 'ada', 'ada@example.com'), (2, 'bob', NULL)",
  'INSERT INTO orders VALUES (10, 1, 250.00, NULL, NULL, NULL), (11, 2, 20.50, NULL, NULL, NULL)',
];

export interface CallResult {
  readonly call: string;
  readonly columns?: string[];
  readonly rows?: (string | number | boolean | null)[][];
  readonly error?: { sqlstate: string; message: string };
}

/** The driver jar, or a failure naming the script that provides it. */
export function driverJar(): string {
  const result = spawnSync('bash', ['scripts/jdbc-tools.sh'], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(`scripts/jdbc-tools.sh failed (a JDK 17+ and Maven are needed; .ci/run installs them): ${result.stderr}${result.error?.message ?? ''}`);
  }
  return result.stdout.trim().split('\n').pop()!;
}

/** Runs the single-file Java program `program` (a path from the repository root) with the driver jar; its stdout's JSON lines. */
export function runJavaLines<T>(jar: string, program: string, args: readonly string[]): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('java', ['-cp', jar, program, ...args], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', (error) => reject(new Error(`java could not start (scripts/jdbc-tools.sh names what to install): ${error.message}`)));
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${program} exited ${code}: ${stderr}`));
      resolve(stdout.trim().split('\n').map((line) => JSON.parse(line) as T));
    });
  });
}

export async function runMetadata(jar: string, url: string, user: string): Promise<Map<string, CallResult>> {
  const calls = await runJavaLines<CallResult>(jar, PROGRAM, [url, user]);
  return new Map(calls.map((call) => [call.call, call]));
}

