// Registry migrations: the real v0 → v1 step on a v0 fixture, through the file store, and the
// step-by-step machinery with a chain of steps.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { migrateRegistry, REGISTRY_MIGRATIONS, type RawRegistry, type RegistryMigration } from '../../../brain/registry/registry-migrations.js';
import { REGISTRY_SCHEMA_VERSION } from '../../../brain/registry/registry-schema.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';

const V0 = fileURLToPath(new URL('../../fixtures/registry-v0.json', import.meta.url));

describe('registry migrations', () => {
  it('has one step per version up to the current schema', () => {
    expect(REGISTRY_MIGRATIONS.map((s) => s.from)).toEqual(Array.from({ length: REGISTRY_SCHEMA_VERSION }, (_, i) => i));
  });

  it('migrates the v0 fixture to v1: pullRequests, brain and counters derived from existing ids', () => {
    const raw = JSON.parse(readFileSync(V0, 'utf8')) as RawRegistry;
    const copy = structuredClone(raw);
    const { registry, fromVersion, applied } = migrateRegistry(raw, V0, undefined, 1);
    expect(raw).toEqual(copy); // input untouched
    expect(fromVersion).toBe(0);
    expect(applied).toHaveLength(1);
    expect(applied[0]).toMatch(/^v0→v1/);
    expect(registry).toMatchObject({
      schemaVersion: 1,
      pullRequests: {},
      brain: null,
      counters: { journalSeq: 0, pullRequest: 0, task: 7, plan: 1, goal: 1 },
    });
    expect(registry.tasks).toEqual(raw.tasks);
  });

  it('reads a v0 file through the store, and keeps the v0 original once when it first writes the current version', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'polly-mig-')), '.polly');
    mkdirSync(dir);
    const store = createFileRegistryStore(dir);
    copyFileSync(V0, store.paths.registry);
    const reg = await store.read();
    expect(reg.schemaVersion).toBe(REGISTRY_SCHEMA_VERSION);
    expect(Object.keys(reg.tasks)).toEqual(['t1', 't7']);
    expect(readFileSync(store.paths.registry)).toEqual(readFileSync(V0)); // reading never writes
    await store.update((d, tx) => {
      d.counters.task += 1;
      tx.emit('task.created', { id: `t${d.counters.task}` });
    });
    const onDisk = JSON.parse(readFileSync(store.paths.registry, 'utf8')) as RawRegistry;
    expect(onDisk.schemaVersion).toBe(REGISTRY_SCHEMA_VERSION);
    expect((onDisk.counters as { task: number }).task).toBe(8);
    expect(readFileSync(join(dir, 'registry.json.v0.bak'))).toEqual(readFileSync(V0));
    expect(readFileSync(store.paths.backup)).toEqual(readFileSync(V0));
    expect((await store.journal()).map((e) => e.data)).toEqual([{ id: 't8' }]);
  });

  it('applies a chain of steps one version at a time, in order', () => {
    const seen: number[] = [];
    const step = (from: number): RegistryMigration => ({
      from,
      describe: `step ${from}`,
      migrate: (raw) => {
        seen.push(from);
        return { ...raw, schemaVersion: from + 1, [`v${from + 1}`]: true };
      },
    });
    const steps = [step(2), step(0), step(1)];
    const { registry, applied } = migrateRegistry({ schemaVersion: 0 }, 'x.json', steps, 3);
    expect(seen).toEqual([0, 1, 2]);
    expect(applied).toEqual(['v0→v1: step 0', 'v1→v2: step 1', 'v2→v3: step 2']);
    expect(registry).toEqual({ schemaVersion: 3, v1: true, v2: true, v3: true });
    const fromOne = migrateRegistry({ schemaVersion: 1 }, 'x.json', steps, 3);
    expect(fromOne.applied).toHaveLength(2);
  });

  it('refuses a missing step, a malformed version and a newer file with documented codes', () => {
    const codeOf = (f: () => unknown): string | undefined => {
      try {
        f();
      } catch (e) {
        return isPollyError(e) ? e.code : 'not a PollyError';
      }
      return undefined;
    };
    expect(codeOf(() => migrateRegistry({ schemaVersion: 0 }, 'x.json', [], 1))).toBe('registry_corrupt');
    expect(codeOf(() => migrateRegistry({ schemaVersion: '1' }, 'x.json'))).toBe('registry_corrupt');
    expect(codeOf(() => migrateRegistry({ schemaVersion: -1 }, 'x.json'))).toBe('registry_corrupt');
    expect(codeOf(() => migrateRegistry({ schemaVersion: REGISTRY_SCHEMA_VERSION + 1 }, 'x.json'))).toBe('registry_newer');
  });
});
