// Shared by the join operators: building output rows for each join type. Semi and anti joins
// output the left row only; outer joins pad the missing side with NULLs.

import type { Row } from '../../sql/value.js';

export function concatRows(left: Row, right: Row): Row {
  const row: Row = new Array(left.length + right.length);
  for (let i = 0; i < left.length; i++) row[i] = left[i]!;
  for (let i = 0; i < right.length; i++) row[left.length + i] = right[i]!;
  return row;
}

export function nullRow(width: number): Row {
  return new Array(width).fill(null);
}
