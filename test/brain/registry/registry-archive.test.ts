// Finished history leaves registry.json: the v1 → v2 migration (in place, with a backup), the
// journal as the archive's source, archive.jsonl and its repair, the Brain's age rule, and the
// move of a registry's old runs into the run store.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ARCHIVE_EVENT, archiveFinished, takeFinished, type ArchiveUnit } from '../../../brain/registry/registry-archive.js';
import { REGISTRY_SCHEMA_VERSION, emptyRegistry, type Registry } from '../../../brain/registry/registry-schema.js';
import { createFileRegistryStore, createMemoryRegistryStore, repairArchive } from '../../../brain/registry/registry-store.js';
import { openRunStore } from '../../../brain/registry/run-storage.js';
import type { RunRecord } from '../../../workflows/run/run-records.js';
import { sampleTask, v1RegistryWithHistory } from '../../helpers/registry-sample.js';

function pollyDir(): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'polly-archive-')), '.polly');
  mkdirSync(dir, { recursive: true });
  return dir;
}

describe('registry archive', () => {
  it('a v1 registry with 1,000 tasks migrates in place: finished goals go to the journal and archive.jsonl, the v1 file is kept', async () => {
    const dir = pollyDir();
    const store = createFileRegistryStore(dir);
    const v1 = v1RegistryWithHistory(100, 80); // 1,000 tasks, 800 of them in 80 finished goals
    const text = JSON.stringify(v1, null, 2);
    writeFileSync(store.paths.registry, text);

    const read = await store.read(); // loads, migrated, and reading never writes
    expect(read.schemaVersion).toBe(REGISTRY_SCHEMA_VERSION);
    expect(Object.keys(read.tasks)).toHaveLength(200);
    expect(Object.keys(read.goals).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `g${81 + i}`).sort());
    expect(Object.keys(read.pullRequests)).toEqual([]);
    expect(Object.keys(read.workers)).toEqual([]);
    expect(read.pendingArchive).toBeUndefined();
    expect(readFileSync(store.paths.registry, 'utf8')).toBe(text);

    await store.update((d, tx) => {
      d.tasks['p81-t1']!.status = 'running';
      tx.emit('task.status', { taskId: 'p81-t1' });
    });
    expect(readFileSync(join(dir, 'registry.json.v1.bak'), 'utf8')).toBe(text);
    const onDisk = JSON.parse(readFileSync(store.paths.registry, 'utf8')) as Registry;
    expect(onDisk.schemaVersion).toBe(2);
    expect(onDisk.pendingArchive).toBeUndefined();
    expect(Object.keys(onDisk.tasks)).toHaveLength(200);
    // The archived records ride in the file's pendingJournal (exactly-once) until the next journaled update.
    await store.update((_d, tx) => tx.emit('test.next', {}));
    expect(statSync(store.paths.registry).size).toBeLessThan(text.length / 3);

    const journal = await store.journal();
    const archived = journal.filter((e) => e.kind === ARCHIVE_EVENT);
    expect(journal.at(-1)?.kind).toBe('test.next');
    expect(archived).toHaveLength(80);
    const units = archived.map((e) => e.data as unknown as ArchiveUnit);
    expect(units.flatMap((u) => u.tasks)).toHaveLength(800);
    expect(units.flatMap((u) => u.pullRequests)).toHaveLength(800);
    expect(units.flatMap((u) => u.workers)).toHaveLength(800);
    expect(units[0]!.tasks[0]).toEqual((v1.tasks as Record<string, unknown>)[units[0]!.tasks[0]!.id]);
    expect(journal.map((e) => e.seq)).toEqual(journal.map((_e, i) => i + 1));
    const lines = readFileSync(store.paths.archive, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(lines).toEqual(archived);

    // The journal rebuilds the archive: a lost or truncated archive.jsonl is repaired from it.
    rmSync(store.paths.archive);
    expect(await repairArchive(store)).toBe(80);
    expect(
      readFileSync(store.paths.archive, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    ).toEqual(archived);
    expect(await repairArchive(store)).toBe(0);
  });

  it('exactly one finished goal is archived, not dropped: the boundary of the migration (the others are whole goals of 10 tasks)', async () => {
    const dir = pollyDir();
    const store = createFileRegistryStore(dir);
    const v1 = v1RegistryWithHistory(2, 1); // 2 goals of 10 tasks, 1 of them finished
    writeFileSync(store.paths.registry, JSON.stringify(v1, null, 2));
    await store.update((_d, tx) => tx.emit('test.first', {}));
    await store.update((_d, tx) => tx.emit('test.next', {}));
    const archived = (await store.journal()).filter((e) => e.kind === ARCHIVE_EVENT).map((e) => e.data as unknown as ArchiveUnit);
    expect(archived).toHaveLength(1);
    expect(archived[0]!.tasks).toHaveLength(10);
    const live = await store.read();
    expect(Object.keys(live.tasks)).toHaveLength(10);
    // Nothing lost: the live tasks and the archived ones are every task of the v1 file.
    expect([...Object.keys(live.tasks), ...archived[0]!.tasks.map((t) => t.id)].sort()).toEqual(Object.keys(v1.tasks as object).sort());
  });

  it('a goal stays whole while any task is not finished (ready waits for a human merge), and the age rule keeps recent trees', () => {
    const reg = emptyRegistry();
    reg.goals.g1 = { id: 'g1', text: 'x', createdAt: '2026-11-01T00:00:00.000Z', status: 'done', planIds: ['p1'] };
    reg.plans.p1 = { id: 'p1', goalId: 'g1', createdAt: '2026-11-01T00:00:00.000Z', tasks: [], admission: null, gate: 'approved', askedAt: null, decidedAt: null, decidedBy: null };
    reg.tasks['p1-t1'] = { ...sampleTask('p1-t1'), status: 'done', finishedAt: '2026-11-02T00:00:00.000Z' };
    reg.tasks['p1-t2'] = { ...sampleTask('p1-t2'), status: 'ready', finishedAt: '2026-11-02T00:00:00.000Z' };
    reg.tasks.x1 = { ...sampleTask('x1'), planId: null, purpose: 'explore', status: 'done', finishedAt: '2026-11-03T00:00:00.000Z' };
    expect(takeFinished(structuredClone(reg), Number.POSITIVE_INFINITY).map((u) => u.tasks.map((t) => t.id))).toEqual([['x1']]);
    reg.tasks['p1-t2']!.status = 'done';
    expect(takeFinished(structuredClone(reg), Date.parse('2026-11-02T00:00:00.000Z'))).toEqual([]); // not older than that
    const copy = structuredClone(reg);
    const units = takeFinished(copy, Date.parse('2026-11-02T12:00:00.000Z'));
    expect(units.map((u) => [u.goal?.id ?? null, u.tasks.map((t) => t.id)])).toEqual([['g1', ['p1-t1', 'p1-t2']]]);
    expect(Object.keys(copy.tasks)).toEqual(['x1']);
    expect(copy.goals).toEqual({});
    expect(copy.plans).toEqual({});
  });

  it('archiveFinished in an update journals each tree and the registry keeps only what is live', async () => {
    const store = createMemoryRegistryStore();
    await store.update((d) => {
      d.goals.g1 = { id: 'g1', text: 'x', createdAt: '2026-11-01T00:00:00.000Z', status: 'failed', planIds: [] };
      d.tasks.x1 = { ...sampleTask('x1'), planId: null, status: 'queued' };
    });
    expect(await store.update((d, tx) => archiveFinished(d, tx, Date.parse('2026-11-30T00:00:00.000Z')))).toBe(1);
    expect(Object.keys((await store.read()).goals)).toEqual([]);
    expect(Object.keys((await store.read()).tasks)).toEqual(['x1']);
    expect((await store.journal()).map((e) => [e.kind, (e.data as { goal?: { id: string } }).goal?.id])).toEqual([[ARCHIVE_EVENT, 'g1']]);
  });

  it('opening the run store moves runs left in registry.json into it, once, never overwriting a newer copy', async () => {
    const dir = pollyDir();
    const registry = createFileRegistryStore(dir);
    const at = '2026-11-01T00:00:00.000Z';
    const run = (id: string, seq: number): RunRecord => ({
      id,
      agentArea: 'polly',
      instanceArea: 'brain',
      workflow: 'polly-task',
      key: id,
      input: { task: id },
      state: { state: 'planned' },
      seq,
      status: 'running',
      openOrder: null,
      completedOrders: [],
      createdAt: at,
      updatedAt: at,
    });
    await registry.update((d) => {
      d.runs['run-a'] = run('run-a', 1);
      d.runs['run-b'] = run('run-b', 1);
    });
    const first = await openRunStore(dir, registry);
    await first.store.updateRun('run-b', (d) => void (d.run!.seq = 7)); // the run store's copy moves on
    expect(first.moved).toBe(2);
    expect((await registry.read()).runs).toEqual({});
    expect((await registry.journal()).at(-1)).toMatchObject({ kind: 'runs.moved', data: { count: 2 } });
    // A crash before the registry was emptied: the next open finishes the move without clobbering run-b.
    await registry.update((d) => void (d.runs['run-b'] = run('run-b', 1)));
    const second = await openRunStore(dir, registry);
    expect(second.moved).toBe(1);
    expect((await second.store.getRun('run-b'))?.seq).toBe(7);
    expect((await second.store.listRuns()).map((r) => r.id).sort()).toEqual(['run-a', 'run-b']);
    expect(existsSync(join(dir, 'runs', 'runs.mdb'))).toBe(true);
    await first.store.close();
    await second.store.close();
  });
});
