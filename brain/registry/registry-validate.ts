/**
 * Structural validation of a migrated registry: the top-level shape the store and every reader
 * rely on (maps of records keyed by id, counters, the owning Brain, the pending journal).
 * Record fields beyond `id` are owned by the modules that write them and are not checked here.
 */
import type { Registry } from './registry-schema.js';

const MAPS = ['goals', 'plans', 'tasks', 'runs', 'workers', 'pullRequests'] as const;
const COUNTERS = ['journalSeq', 'pullRequest', 'task', 'plan', 'goal'] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isCount(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

/**
 * Check the top-level shape of a registry at the current schema version.
 *
 * @returns null when valid, otherwise the first problem as `path: what is wrong`
 *          (e.g. `tasks.t1.id: "t2" does not match its key`).
 */
export function registryProblem(raw: unknown): string | null {
  if (!isObject(raw)) return `top level: expected a JSON object, found ${Array.isArray(raw) ? 'an array' : typeof raw}`;
  if (!isCount(raw.schemaVersion)) return `schemaVersion: expected a non-negative integer, found ${JSON.stringify(raw.schemaVersion)}`;
  for (const name of MAPS) {
    const map = raw[name];
    if (!isObject(map)) return `${name}: expected an object keyed by id, found ${JSON.stringify(map)?.slice(0, 40)}`;
    for (const [key, rec] of Object.entries(map)) {
      if (!isObject(rec)) return `${name}.${key}: expected an object`;
      const id = name === 'pullRequests' ? rec.number : rec.id;
      if (name === 'pullRequests') {
        if (String(id) !== key) return `${name}.${key}.number: ${JSON.stringify(id)} does not match its key`;
      } else if (id !== key) {
        return `${name}.${key}.id: ${JSON.stringify(id)} does not match its key`;
      }
    }
  }
  if (!isObject(raw.counters)) return `counters: expected an object, found ${JSON.stringify(raw.counters)}`;
  for (const c of COUNTERS) {
    if (!isCount(raw.counters[c])) return `counters.${c}: expected a non-negative integer, found ${JSON.stringify(raw.counters[c])}`;
  }
  if (raw.brain !== null && !isObject(raw.brain)) return `brain: expected null or an object, found ${JSON.stringify(raw.brain)}`;
  if (raw.pendingJournal !== undefined) {
    if (!Array.isArray(raw.pendingJournal)) return 'pendingJournal: expected an array';
    for (const [i, e] of raw.pendingJournal.entries()) {
      if (!isObject(e) || !isCount(e.seq) || typeof e.at !== 'string' || typeof e.kind !== 'string' || !isObject(e.data)) {
        return `pendingJournal[${i}]: expected {seq, at, kind, data}`;
      }
    }
  }
  if (raw.pendingArchive !== undefined) {
    if (!Array.isArray(raw.pendingArchive)) return 'pendingArchive: expected an array';
    for (const [i, u] of raw.pendingArchive.entries()) {
      if (!isObject(u) || !Array.isArray(u.plans) || !Array.isArray(u.tasks) || !Array.isArray(u.pullRequests) || !Array.isArray(u.workers)) {
        return `pendingArchive[${i}]: expected {goal, plans, tasks, pullRequests, workers}`;
      }
    }
  }
  return null;
}

/** Narrowing form of {@link registryProblem}. */
export function isRegistry(raw: unknown): raw is Registry {
  return registryProblem(raw) === null;
}
