// Exact decimal numbers for the SQL type numeric: an unscaled bigint and a scale (number of
// digits after the point), plus NaN and +-Infinity as PostgreSQL has them. Never a JS double.
// STUB: owned by the sql values work; the shape below is the contract other layers rely on.

export class Numeric {
  /** value = unscaled * 10^-scale; for special values unscaled is 0n. */
  readonly unscaled: bigint;
  readonly scale: number;
  readonly special: 'nan' | 'inf' | '-inf' | undefined;

  constructor(unscaled: bigint, scale: number, special?: 'nan' | 'inf' | '-inf') {
    this.unscaled = unscaled;
    this.scale = scale;
    this.special = special;
  }
}
