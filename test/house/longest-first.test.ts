/**
 * The sequencer's list of the longest test files (vitest.config.ts, LONGEST_FIRST) names files
 * that exist, once each: a moved or renamed file would silently fall back to vitest's size order
 * and could start last, leaving one worker alone at the end of a CI run.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LONGEST_FIRST } from '../../vitest.config.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

describe('the longest-first list of the test sequencer', () => {
  it('names existing test files, each once', () => {
    expect(LONGEST_FIRST.length).toBeGreaterThan(0);
    expect(LONGEST_FIRST.filter((p) => !p.endsWith('.test.ts') || !existsSync(join(ROOT, p)))).toEqual([]);
    expect(new Set(LONGEST_FIRST).size).toBe(LONGEST_FIRST.length);
  });
});
