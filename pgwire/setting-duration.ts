// Reads a session setting that holds a duration (idle_session_timeout,
// idle_in_transaction_session_timeout) the way PostgreSQL accepts it: a plain number of
// milliseconds or a number with a unit (us, ms, s, min, h, d). 0, absent or unreadable: off.

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 };

export function settingDurationMs(value: string | undefined): number {
  if (value === undefined) return 0;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|min|h|d)?\s*$/.exec(value);
  if (match === null) return 0;
  const milliseconds = Number(match[1]) * UNIT_MS[match[2] ?? 'ms']!;
  return Number.isFinite(milliseconds) && milliseconds > 0 ? Math.max(1, Math.round(milliseconds)) : 0;
}
