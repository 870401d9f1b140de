// The run store contract (workflows/run/run-store.ts) as one test suite, run against every store:
// the memory twin and LMDB (test/workflows/run/run-store.test.ts) and Postgres
// (test/workflows/run/postgres-run-store.test.ts). Call it inside a describe; `make` opens a fresh,
// empty store each time it is called.
import { expect, it } from 'vitest';
import { isPollyError } from '../../brain/core/errors.js';
import type { RunRecord } from '../../workflows/run/run-records.js';
import type { RunStore } from '../../workflows/run/run-store.js';

/** The clock every contract store must be made with (journal lines carry its time). */
export const fixedNow = (): Date => new Date('2026-11-29T12:00:00.000Z');

/** A minimal run record with `id` and `status`, created at {@link fixedNow}. */
export function record(id: string, status: RunRecord['status'] = 'running'): RunRecord {
  const at = fixedNow().toISOString();
  return {
    id,
    agentArea: 'a',
    instanceArea: 'w',
    workflow: 'wf',
    key: id,
    input: {},
    state: { n: 0 },
    seq: 0,
    status,
    openOrder: null,
    completedOrders: [],
    createdAt: at,
    updatedAt: at,
  };
}

export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection, the promise resolved');
}

/**
 * Group commit, as every durable store does it (`store` made with `maxUpdatesPerCommit: 4`): ten
 * updates queued in one turn share 3 commits (4 + 4 + 2) and resolve with their own results; then
 * a throwing update in a shared commit is rejected alone, writing nothing, and holds back no other.
 */
export async function expectGroupCommit(store: RunStore & { readonly commits: number }): Promise<void> {
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      store.updateRun(`r${i}`, (d, tx) => {
        d.run = record(`r${i}`);
        tx.emit('run.started', { run: `r${i}` });
        return i;
      }),
    ),
  );
  expect(results).toEqual(Array.from({ length: 10 }, (_, i) => i));
  expect(store.commits).toBe(3); // 4 + 4 + 2
  const mixed = await Promise.allSettled([
    store.updateRun('r0', (d) => void (d.run!.seq = 1)),
    store.updateRun('r1', () => {
      throw new Error('refused');
    }),
    store.updateRun('r2', (d) => void (d.run!.seq = 2)),
  ]);
  expect(mixed.map((m) => m.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  expect([(await store.getRun('r0'))?.seq, (await store.getRun('r1'))?.seq, (await store.getRun('r2'))?.seq]).toEqual([1, 0, 2]);
}

/** The contract's tests, defined in the calling describe: `make()` returns a fresh, empty store made with `now: fixedNow`. */
export function runStoreContract(make: () => RunStore): void {
  it('creates and updates one run, returns fn results, numbers journal lines from 1', async () => {
    const store = make();
    expect(await store.getRun('r1')).toBeNull();
    const r = await store.updateRun('r1', (d, tx) => {
      expect(d.run).toBeNull();
      d.run = record('r1');
      tx.emit('run.started', { run: 'r1' });
      tx.emit('run.order', { run: 'r1' });
      return 'created';
    });
    expect(r).toBe('created');
    await store.updateRun('r1', (d, tx) => {
      d.run!.seq = 5;
      tx.emit('run.action', { run: 'r1', n: 1 });
    });
    expect((await store.getRun('r1'))?.seq).toBe(5);
    const all = await store.journal();
    expect(all.map((e) => [e.seq, e.kind])).toEqual([
      [1, 'run.started'],
      [2, 'run.order'],
      [3, 'run.action'],
    ]);
    expect(all[0]!.at).toBe('2026-11-29T12:00:00.000Z');
    expect((await store.journal(1, { limit: 1 })).map((e) => e.seq)).toEqual([2]);
    await store.close();
  });

  it('a throwing update writes nothing, a late emit is refused, and a wrong id, a removal or an async fn is internal', async () => {
    const store = make();
    await store.updateRun('r1', (d) => void (d.run = record('r1')));
    const boom = await rejection(
      store.updateRun('r1', (d, tx) => {
        d.run!.seq = 99;
        tx.emit('x', { run: 'r1' });
        throw new Error('boom');
      }),
    );
    expect(boom.message).toBe('boom');
    expect((await store.getRun('r1'))?.seq).toBe(0);
    expect(await store.journal()).toEqual([]);
    let saved: { emit(k: string, d: Record<string, unknown>): void } | undefined;
    await store.updateRun('r1', (_d, tx) => void (saved = tx));
    expect(() => saved!.emit('late', {})).toThrow(/after the update function returned/);
    for (const bad of [(d: { run: RunRecord | null }) => void (d.run = record('r2')), (d: { run: RunRecord | null }) => void (d.run = null), async () => 1]) {
      const err = await rejection(store.updateRun('r1', bad));
      expect(isPollyError(err, 'internal'), err.message).toBe(true);
    }
    expect(await store.getRun('r2')).toBeNull();
    expect(await store.getRun('r1')).toMatchObject({ id: 'r1', seq: 0 });
    await store.close();
  });

  it('getRun returns a copy; results of an update do not reach the store after it resolved', async () => {
    const store = make();
    const run = await store.updateRun('r1', (d) => (d.run = record('r1')));
    run.seq = 42;
    const a = (await store.getRun('r1'))!;
    a.seq = 43;
    expect((await store.getRun('r1'))?.seq).toBe(0);
    await store.close();
  });

  it('lists live runs apart from finished ones, and reads one run’s journal alone', async () => {
    const store = make();
    await Promise.all(
      ['a', 'b', 'c'].map((id) =>
        store.updateRun(id, (d, tx) => {
          d.run = record(id);
          tx.emit('run.started', { run: id });
        }),
      ),
    );
    await store.updateRun('b', (d, tx) => {
      d.run!.status = 'finished';
      tx.emit('run.finished', { run: 'b' });
    });
    expect((await store.listRuns({ status: 'running' })).map((r) => r.id).sort()).toEqual(['a', 'c']);
    expect((await store.listRuns({ status: 'finished' })).map((r) => r.id)).toEqual(['b']);
    expect((await store.listRuns()).map((r) => r.id).sort()).toEqual(['a', 'b', 'c']);
    const jb = await store.journal(0, { run: 'b' });
    expect(jb.map((e) => e.kind)).toEqual(['run.started', 'run.finished']);
    expect(await store.journal(jb[0]!.seq, { run: 'b' })).toEqual([jb[1]]);
    expect(await store.journal(0, { run: 'nope' })).toEqual([]);
    await store.close();
  });

  it('serialises 50 concurrent updates of one run: none lost, the journal gapless', async () => {
    const store = make();
    await store.updateRun('r', (d) => void (d.run = record('r')));
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        store.updateRun('r', (d, tx) => {
          (d.run!.state as { n: number }).n += 1;
          tx.emit('inc', { run: 'r', i });
        }),
      ),
    );
    expect((await store.getRun('r'))?.state).toEqual({ n: 50 });
    expect((await store.journal()).map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    await store.close();
  });
}
