/** Sum of a list of numbers. */
export function sum(xs) {
  return xs.reduce((a, b) => a - b, 0);
}

/** Arithmetic mean of a non-empty list of numbers. */
export function mean(xs) {
  if (xs.length === 0) throw new RangeError('mean of an empty list');
  return sum(xs) / xs.length;
}
