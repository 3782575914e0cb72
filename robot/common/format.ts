// Numbers in messages beside the limit they broke, with as many decimals as it takes to show them
// apart: a value past its limit must not read as equal to it ("20.0 mm, below the clearance 20.0 mm").

/** value and limit, times scale, to `digits` decimals or more (up to 6) until they differ, each with unit. */
export function apart(value: number, limit: number, scale: number, unit: string, digits: number): [string, string] {
  let k = digits;
  while (k < 6 && (value * scale).toFixed(k) === (limit * scale).toFixed(k)) k++;
  return [`${(value * scale).toFixed(k)}${unit}`, `${(limit * scale).toFixed(k)}${unit}`];
}
