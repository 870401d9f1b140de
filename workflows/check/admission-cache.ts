/**
 * A cache of admission verdicts, so a process that loads an unchanged workflow does not search its
 * state space again (`polly mcp --brain` checked polly-task, ~9,000 states, at every start).
 *
 * The key is content, never a name or a time: sha256 over the checker's own code (every module of
 * this directory, as loaded) and the workflow exactly as checked (with Polly's guarantees added),
 * leaving out only where it came from (`file`, `positions`: the checker reads neither). Any change
 * to the workflow, its guarantee policy or the checker is a different key, so it is checked again;
 * nothing is ever invalidated in place. A stored verdict that does not read back (truncated,
 * edited, another shape) is a miss, never an error.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Workflow } from '../workflow-schema.js';
import type { CheckResult } from './checker.js';

/** Stored verdicts by key (see the module doc). */
export interface AdmissionCache {
  /** The verdict stored under `key`, or null (absent or unreadable). */
  get(key: string): CheckResult | null;
  /** Store `result` under `key`; a write that fails is ignored (the next start checks again). */
  put(key: string, result: CheckResult): void;
}

let fingerprint: string | null = null;

/**
 * The checker's fingerprint: sha256 (hex) over the names and contents of the modules in this
 * directory (`.js` in dist/, `.ts` under vitest), read once per process.
 */
export function checkerFingerprint(): string {
  if (fingerprint) return fingerprint;
  const dir = dirname(fileURLToPath(import.meta.url));
  const hash = createHash('sha256');
  for (const name of readdirSync(dir)
    .filter((n) => /\.(js|ts)$/.test(n) && !n.endsWith('.d.ts'))
    .sort()) {
    hash
      .update(`${name}\0`)
      .update(readFileSync(join(dir, name)))
      .update('\0');
  }
  fingerprint = hash.digest('hex');
  return fingerprint;
}

/** The cache key of checking `workflow` (as checked: guarantees added): 64 hex digits. */
export function admissionKey(workflow: Workflow): string {
  const { file: _file, positions: _positions, ...checked } = workflow;
  return createHash('sha256').update(checkerFingerprint()).update('\0').update(JSON.stringify(checked)).digest('hex');
}

function readsBack(value: unknown, key: string): value is CheckResult & { key: string } {
  const v = value as Partial<CheckResult> & { key?: unknown };
  return (
    typeof v === 'object' &&
    v !== null &&
    v.key === key &&
    typeof v.name === 'string' &&
    typeof v.admitted === 'boolean' &&
    typeof v.line === 'string' &&
    Array.isArray(v.violations) &&
    typeof v.exhaustive === 'boolean'
  );
}

/**
 * Verdicts as files `<dir>/<key>.json` (`{key, ...CheckResult}`), written to a temporary file
 * and renamed, so a reader sees a whole verdict or none; `dir` is created on the first put.
 */
export function createFileAdmissionCache(dir: string): AdmissionCache {
  return {
    get(key) {
      let value: unknown;
      try {
        value = JSON.parse(readFileSync(join(dir, `${key}.json`), 'utf8'));
      } catch {
        return null;
      }
      if (!readsBack(value, key)) return null;
      const { key: _key, ...result } = value;
      return result;
    },
    put(key, result) {
      try {
        mkdirSync(dir, { recursive: true });
        const tmp = join(dir, `.${key}.${process.pid}.tmp`);
        writeFileSync(tmp, `${JSON.stringify({ key, ...result })}\n`);
        renameSync(tmp, join(dir, `${key}.json`));
      } catch {
        // A read-only or full disk: the verdict is still used in this process, only not kept.
      }
    },
  };
}

/** The in-memory twin (tests; a process that must not write): a Map of verdicts. */
export function createMemoryAdmissionCache(): AdmissionCache & { readonly size: number } {
  const map = new Map<string, CheckResult>();
  return {
    get: (key) => (map.has(key) ? structuredClone(map.get(key)!) : null),
    put: (key, result) => void map.set(key, structuredClone(result)),
    get size() {
      return map.size;
    },
  };
}
