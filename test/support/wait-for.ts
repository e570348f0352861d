// Polling until a condition holds, for the suites that wait on real processes (a broker's topic, a
// replication stream, a fault that clears).

/** Polls `probe` every 100 ms until it returns a value that is not undefined; fails naming `what` and the last error after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
