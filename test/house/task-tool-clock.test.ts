/**
 * The task tools take their time from one clock, the `clock` of their context
 * (brain/task-tools/types.ts `TaskToolContext`, the Brain's), never from a bare `new Date()` or
 * `Date.now()`: a test (or a replay) that moves the Brain's clock moves every time a tool writes.
 * The scan is also run on a planted line, so it cannot pass by reading nothing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const TOOLS = join(import.meta.dirname, '../../brain/task-tools');

/** Code lines (comments left out) of `source` that read the machine's clock. */
function machineClockReads(source: string): string[] {
  return source
    .split('\n')
    .filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l))
    .filter((l) => /\bnew Date\(\s*\)|\bDate\.now\(\s*\)/.test(l));
}

describe('the house: task tools read the time from their context', () => {
  it('no file in brain/task-tools/ reads the machine clock', () => {
    const files = readdirSync(TOOLS).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(15);
    const reads = files.flatMap((f) => machineClockReads(readFileSync(join(TOOLS, f), 'utf8')).map((l) => `${f}: ${l.trim()}`));
    expect(reads).toEqual([]);
  });

  it('the scan bites: both spellings are found, comments and a Date of a given time are not', () => {
    expect(machineClockReads("  transitionTask(t, 'failed', { at: new Date().toISOString() });\nconst ms = Date.now() - start;")).toHaveLength(2);
    expect(machineClockReads(' * never a bare `new Date()`\n// Date.now() here\nconst at = new Date(ts);\nctx.clock().toISOString();')).toEqual([]);
  });
});
