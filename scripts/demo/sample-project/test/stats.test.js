import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mean, sum } from '../src/stats.js';

test('sum adds numbers', () => {
  assert.equal(sum([1, 2, 3]), 6);
  assert.equal(sum([]), 0);
  assert.equal(sum([-2, 2]), 0);
});

test('mean divides the sum by the count', () => {
  assert.equal(mean([1, 2, 3, 6]), 3);
  assert.throws(() => mean([]), RangeError);
});
