/**
 * Step-by-step migrations of `.polly/registry.json` to {@link REGISTRY_SCHEMA_VERSION}.
 *
 * A migration step takes a parsed file at version `from` and returns it at version `from + 1`;
 * `migrateRegistry` applies the steps in order, one version at a time, so a file several versions
 * old goes through every intermediate shape. A file newer than this Polly is refused with
 * `registry_newer` (an older Polly must never rewrite a newer file).
 *
 * Version history:
 * - v0 (pre-release, before the schema was versioned): no `schemaVersion` field (or `0`), the maps
 *   `goals`, `plans`, `tasks`, `runs`, `workers`, and none of `pullRequests`, `counters`, `brain`.
 * - v1: adds `schemaVersion`, `pullRequests` (the local forge), `counters` (journal seq and id
 *   sequences) and `brain` (the owning Brain process).
 * - v2: finished history leaves the file: every finished goal tree (`registry-archive.ts`) moves to
 *   `pendingArchive`, which the first write journals as `registry.archived` events and appends to
 *   `.polly/archive.jsonl`; that first write also keeps the v1 file as `registry.json.v1.bak`.
 *   (Runs leave too, into the run store, when `run-storage.ts` opens it: that move needs the store.)
 */
import { PollyError } from '../core/errors.js';
import { REGISTRY_SCHEMA_VERSION } from './registry-schema.js';
import { takeFinished, type ArchivableMaps } from './registry-archive.js';

/** A parsed registry file of unknown version, as plain JSON. */
export type RawRegistry = Record<string, unknown>;

export interface RegistryMigration {
  /** The version this step reads; it writes `from + 1`. */
  from: number;
  /** One line for logs: what the step changes. */
  describe: string;
  /** Pure: returns the migrated object (may reuse parts of the input). */
  migrate(raw: RawRegistry): RawRegistry;
}

/** The largest numeric suffix among ids like `t12` / `task-7`, or the count, whichever is larger. */
function nextCounter(map: unknown): number {
  if (!map || typeof map !== 'object') return 0;
  const ids = Object.keys(map as Record<string, unknown>);
  let max = ids.length;
  for (const id of ids) {
    const m = /(\d+)$/.exec(id);
    if (m) max = Math.max(max, Number(m[1]));
  }
  return max;
}

/** v0 → v1: add `pullRequests`, `counters` and `brain`, derived from the existing data. */
export const migrateV0ToV1: RegistryMigration = {
  from: 0,
  describe: 'add pullRequests, counters (derived from existing ids) and brain',
  migrate(raw) {
    const out: RawRegistry = { ...raw, schemaVersion: 1 };
    for (const key of ['goals', 'plans', 'tasks', 'runs', 'workers']) {
      if (out[key] === undefined) out[key] = {};
    }
    out.pullRequests = {};
    out.counters = {
      // The journal's own last seq is authoritative; the store takes the max of both on write.
      journalSeq: 0,
      pullRequest: 0,
      task: nextCounter(out.tasks),
      plan: nextCounter(out.plans),
      goal: nextCounter(out.goals),
    };
    out.brain = null;
    return out;
  },
};

/** v1 → v2: move every finished goal tree, whatever its age, out of the maps into `pendingArchive`. */
export const migrateV1ToV2: RegistryMigration = {
  from: 1,
  describe: 'move finished goals, plans, tasks, their PRs and ended workers to the archive',
  migrate(raw) {
    const isMap = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
    // A malformed map is left as it is, for validation to name (the migration repairs nothing).
    if (!['goals', 'plans', 'tasks', 'pullRequests', 'workers'].every((k) => isMap(raw[k]))) return { ...raw, schemaVersion: 2 };
    const maps = {} as Record<string, Record<string, unknown>>;
    for (const key of ['goals', 'plans', 'tasks', 'pullRequests', 'workers']) maps[key] = { ...((raw[key] as Record<string, unknown> | undefined) ?? {}) };
    const units = takeFinished(maps as unknown as ArchivableMaps, Number.POSITIVE_INFINITY);
    const out: RawRegistry = { ...raw, ...maps, schemaVersion: 2 };
    if (units.length > 0) out.pendingArchive = units;
    return out;
  },
};

/** Every step, in order of `from`. Add a step here whenever REGISTRY_SCHEMA_VERSION is bumped. */
export const REGISTRY_MIGRATIONS: readonly RegistryMigration[] = [migrateV0ToV1, migrateV1ToV2];

/** The schema version of a parsed file: `schemaVersion`, or 0 for the unversioned pre-release shape. */
export function registryVersionOf(raw: RawRegistry): number {
  const v = raw.schemaVersion;
  return v === undefined ? 0 : typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : Number.NaN;
}

export interface MigrationResult {
  registry: RawRegistry;
  /** The version found in the file. */
  fromVersion: number;
  /** The `describe` line of each step applied, in order. */
  applied: string[];
}

/**
 * Migrate a parsed registry file to `target`, one step at a time.
 *
 * @param raw     the parsed JSON object (not mutated).
 * @param file    the file it came from, for messages.
 * @param steps   the migration steps (default {@link REGISTRY_MIGRATIONS}).
 * @param target  the version to reach (default {@link REGISTRY_SCHEMA_VERSION}).
 * @throws PollyError `registry_newer` when the file's version is above `target`;
 *         `registry_corrupt` when `schemaVersion` is not a non-negative integer or a step is missing.
 */
export function migrateRegistry(
  raw: RawRegistry,
  file: string,
  steps: readonly RegistryMigration[] = REGISTRY_MIGRATIONS,
  target: number = REGISTRY_SCHEMA_VERSION,
): MigrationResult {
  const fromVersion = registryVersionOf(raw);
  if (Number.isNaN(fromVersion)) {
    throw new PollyError(
      'registry_corrupt',
      `${file}: "schemaVersion" is ${JSON.stringify(raw.schemaVersion)}, expected a non-negative integer. The file was not written by Polly or was edited by hand; restore it from ${file}.bak if that backup loads.`,
      { details: { file, schemaVersion: raw.schemaVersion } },
    );
  }
  if (fromVersion > target) {
    throw new PollyError(
      'registry_newer',
      `${file} has schema version ${fromVersion}, but this Polly understands up to ${target}. It was written by a newer Polly: upgrade Polly (npm install polly@latest) instead of letting an older one rewrite it.`,
      { details: { file, schemaVersion: fromVersion, supported: target } },
    );
  }
  let current = raw;
  const applied: string[] = [];
  for (let v = fromVersion; v < target; v++) {
    const step = steps.find((s) => s.from === v);
    if (!step) {
      throw new PollyError('registry_corrupt', `${file}: no migration from schema version ${v} to ${v + 1} exists in this Polly.`, {
        details: { file, schemaVersion: v },
      });
    }
    current = step.migrate(current);
    if (registryVersionOf(current) !== v + 1) {
      throw new PollyError('internal', `registry migration from v${v} produced schemaVersion ${JSON.stringify(current.schemaVersion)}, expected ${v + 1}`);
    }
    applied.push(`v${v}→v${v + 1}: ${step.describe}`);
  }
  return { registry: current, fromVersion, applied };
}
