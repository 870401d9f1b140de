// The run store: one contract (test/helpers/run-store-contract.ts) for the LMDB store and its memory twin, then the LMDB store under
// real concurrent processes and SIGKILL in a loop (atomic run + journal, exactly-once, gapless),
// the two id indexes (recent and main) under commits and SIGKILL, and the migration of stores
// written in layouts 1 and 2.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { createLmdbRunStore, LMDB_RUN_STORE_FORMAT } from '../../../workflows/run/lmdb-run-store.js';
import { createMemoryRunStore } from '../../../workflows/run/memory-run-store.js';
import type { RunStore } from '../../../workflows/run/run-store.js';
import { expectGroupCommit, fixedNow, record, runStoreContract } from '../../helpers/run-store-contract.js';

const CHILD = fileURLToPath(new URL('../../fixtures/run-store-child.mjs', import.meta.url));

function tempDir(): string {
  return join(mkdtempSync(join(tmpdir(), 'polly-runs-')), 'runs');
}

describe.each([
  ['memory', () => createMemoryRunStore({ now: fixedNow }) as RunStore],
  ['lmdb', () => createLmdbRunStore(tempDir(), { now: fixedNow }) as RunStore],
  ['lmdb, an id moved to the main index in every commit', () => createLmdbRunStore(tempDir(), { now: fixedNow, recentIdsLimit: 1 }) as RunStore],
])('RunStore contract (%s)', (_name, make) => runStoreContract(make));

describe('memory run store', () => {
  it('updates queued in one turn share one commit (group commit)', async () => {
    const store = createMemoryRunStore();
    await Promise.all(Array.from({ length: 32 }, (_, i) => store.updateRun(`r${i}`, (d) => void (d.run = record(`r${i}`)))));
    expect(store.commits).toBe(1);
    await store.updateRun('r0', (d) => void (d.run!.seq = 1));
    expect(store.commits).toBe(2);
  });
});

describe('LMDB run store group commit', () => {
  it('updates queued in one turn share one commit, at most maxUpdatesPerCommit each, all applied once in order', async () => {
    const store = createLmdbRunStore(tempDir(), { now: fixedNow, maxUpdatesPerCommit: 4 });
    await expectGroupCommit(store);
    // The mixed updates emit nothing: the journal and the live runs are those of the ten.
    expect((await store.journal()).map((e) => [e.seq, e.data.run])).toEqual(Array.from({ length: 10 }, (_, i) => [i + 1, `r${i}`]));
    expect(await store.listRuns({ status: 'running' })).toHaveLength(10);
    expect(store.commits).toBe(4);
    await store.close();
  });

  it('refuses a cap or a recent-ids limit that is not a positive integer, naming it', () => {
    for (const key of ['maxUpdatesPerCommit', 'recentIdsLimit'] as const)
      for (const bad of [0, -1, 1.5]) {
        let error: unknown;
        try {
          createLmdbRunStore(tempDir(), { [key]: bad });
        } catch (e) {
          error = e;
        }
        expect(isPollyError(error, 'bad_input')).toBe(true);
        expect((error as Error).message).toContain(key);
      }
  });
});

describe('LMDB run store layout 1 (run ids as keys)', () => {
  it('is migrated in place on open: runs, live marks and per-run journals keep their content, seqs go on, the old databases are gone', async () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    const path = join(dir, 'runs.mdb');
    // Layout 1 as Polly wrote it before run ordinals (commit 2669dac, workflows/run/lmdb-run-store.ts).
    const old = open({ path, noSubdir: true, maxDbs: 8, encoding: 'json' });
    const runs = old.openDB<string, string>({ name: 'runs', encoding: 'string' });
    const live = old.openDB<boolean, string>({ name: 'live', encoding: 'json' });
    const journal = old.openDB<unknown, number>({ name: 'journal', encoding: 'json' });
    const byRun = old.openDB<boolean, [string, number]>({ name: 'journal-by-run', encoding: 'json' });
    const meta = old.openDB<number, string>({ name: 'meta', encoding: 'json' });
    const ids = Array.from({ length: 300 }, (_, i) => `run-${(i * 7919).toString(16).padStart(20, '0')}`);
    old.transactionSync(() => {
      let seq = 0;
      ids.forEach((id, i) => {
        const status = i % 3 === 0 ? 'finished' : 'running';
        void runs.put(id, JSON.stringify({ ...record(id, status), seq: i }));
        if (status === 'running') void live.put(id, true);
        for (let k = 0; k < 2; k++) {
          seq += 1;
          void journal.put(seq, { seq, at: fixedNow().toISOString(), kind: 'run.action', data: { run: id, k } });
          void byRun.put([id, seq], true);
        }
      });
      void meta.put('journalSeq', seq);
      void meta.put('format', 1);
    });
    await old.close();

    const store = createLmdbRunStore(dir, { now: fixedNow });
    expect((await store.listRuns()).length).toBe(300);
    expect((await store.listRuns({ status: 'running' })).map((r) => r.id).sort()).toEqual(ids.filter((_, i) => i % 3 !== 0).sort());
    expect((await store.getRun(ids[42]!))?.seq).toBe(42);
    expect((await store.journal(0, { run: ids[7]! })).map((e) => [e.seq, e.data.k])).toEqual([
      [15, 0],
      [16, 1],
    ]);
    expect((await store.journal()).length).toBe(600);
    // Writing goes on from the old journal's last seq, to old and new runs alike.
    await store.updateRun(ids[7]!, (d, tx) => {
      d.run!.status = 'finished';
      tx.emit('run.finished', { run: ids[7]! });
    });
    await store.updateRun('run-new', (d, tx) => {
      d.run = record('run-new');
      tx.emit('run.started', { run: 'run-new' });
    });
    expect((await store.journal(600)).map((e) => [e.seq, e.data.run])).toEqual([
      [601, ids[7]],
      [602, 'run-new'],
    ]);
    expect((await store.journal(0, { run: ids[7]! })).map((e) => e.seq)).toEqual([15, 16, 601]);
    expect((await store.listRuns({ status: 'running' })).length).toBe(200); // 199 old + run-new
    await store.close();

    // The old databases are gone, the format is the current one, and opening again changes nothing.
    const after = open({ path, noSubdir: true, maxDbs: 12, encoding: 'json' });
    expect([...after.getKeys()].sort()).toEqual(['journal', 'live-runs', 'meta', 'recent-run-ids', 'run-ids', 'run-journal', 'run-records']);
    expect(after.openDB<number, string>({ name: 'meta', encoding: 'json' }).get('format')).toBe(LMDB_RUN_STORE_FORMAT);
    await after.close();
    const again = createLmdbRunStore(dir);
    expect((await again.listRuns()).length).toBe(301);
    expect((await again.journal(0, { run: ids[7]! })).map((e) => e.seq)).toEqual([15, 16, 601]);
    await again.close();
  });

  it('a store of a newer layout is refused, not rewritten', async () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    const root = open({ path: join(dir, 'runs.mdb'), noSubdir: true, maxDbs: 12, encoding: 'json' });
    root.openDB<number, string>({ name: 'meta', encoding: 'json' }).putSync('format', LMDB_RUN_STORE_FORMAT + 1);
    await root.close();
    let error: unknown;
    try {
      createLmdbRunStore(dir);
    } catch (e) {
      error = e;
    }
    expect(isPollyError(error, 'registry_newer')).toBe(true);
  });
});

/** The id indexes of the LMDB store in `dir`, read raw: each index's entries and `meta`'s counters. */
async function idIndexes(dir: string): Promise<{ recent: Map<string, number>; main: Map<string, number>; recentIds: number; runSeq: number; format: number }> {
  const root = open({ path: join(dir, 'runs.mdb'), noSubdir: true, maxDbs: 12, encoding: 'json' });
  const read = (name: string): Map<string, number> => new Map([...root.openDB<number, string>({ name, encoding: 'json' }).getRange()].map(({ key, value }) => [key, value]));
  const meta = root.openDB<number, string>({ name: 'meta', encoding: 'json' });
  const out = { recent: read('recent-run-ids'), main: read('run-ids'), recentIds: meta.get('recentIds') ?? 0, runSeq: meta.get('runSeq') ?? 0, format: meta.get('format') ?? 0 };
  await root.close();
  return out;
}

/** Every run id in exactly one index, ordinals 1..runSeq each used once, and `meta.recentIds` = the recent index's size. */
function expectIndexesConsistent(ix: Awaited<ReturnType<typeof idIndexes>>, ids: string[]): void {
  for (const id of ix.recent.keys()) expect(ix.main.has(id), id).toBe(false);
  expect([...ix.recent.keys(), ...ix.main.keys()].sort()).toEqual([...ids].sort());
  expect([...ix.recent.values(), ...ix.main.values()].sort((a, b) => a - b)).toEqual(Array.from({ length: ix.runSeq }, (_, i) => i + 1));
  expect(ix.recentIds).toBe(ix.recent.size);
}

describe('LMDB run store id indexes', () => {
  it('new run ids go to the recent index and move to the main index past the limit, each found all along', async () => {
    const dir = tempDir();
    const store = createLmdbRunStore(dir, { now: fixedNow, recentIdsLimit: 16 });
    const ids = Array.from({ length: 200 }, (_, i) => `run-${(i * 104_729).toString(16).padStart(20, '0')}`);
    for (let i = 0; i < ids.length; i += 10) {
      // 10 new runs per commit, and an update of an older run (found in whichever index holds it now)
      await Promise.all(
        ids.slice(i, i + 10).map((id) =>
          store.updateRun(id, (d, tx) => {
            d.run = record(id);
            tx.emit('run.started', { run: id });
          }),
        ),
      );
      const older = ids[Math.floor(i / 2)]!;
      await store.updateRun(older, (d, tx) => {
        d.run!.seq += 1;
        tx.emit('run.action', { run: older });
      });
    }
    for (const [i, id] of ids.entries()) {
      const run = await store.getRun(id);
      expect(run?.id).toBe(id);
      expect((await store.journal(0, { run: id })).map((e) => e.kind)).toEqual(['run.started', ...Array(run!.seq).fill('run.action')]);
      if (i % 50 === 0) expect((await store.listRuns({ status: 'running' })).length).toBe(200);
    }
    await store.close();
    const ix = await idIndexes(dir);
    expectIndexesConsistent(ix, ids);
    expect(ix.main.size).toBeGreaterThan(200 - 16 - 10); // ids did move …
    expect(ix.recent.size).toBeLessThan(16 + 10); // … so the recent index holds at most its limit plus one commit's new ids
    expect(ix.format).toBe(3);
  });

  it('a store of layout 2 (one id index) opens as layout 3: its runs are found, new ids go to the recent index', async () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    // Layout 2 as Polly wrote it before the recent index (commit 19d02e2, workflows/run/lmdb-run-store.ts).
    const old = open({ path: join(dir, 'runs.mdb'), noSubdir: true, maxDbs: 12, encoding: 'json' });
    const ids = old.openDB<number, string>({ name: 'run-ids', encoding: 'json' });
    const records = old.openDB<string, number>({ name: 'run-records', encoding: 'string' });
    const live = old.openDB<boolean, number>({ name: 'live-runs', encoding: 'json' });
    const journal = old.openDB<unknown, number>({ name: 'journal', encoding: 'json' });
    const byRun = old.openDB<boolean, [number, number]>({ name: 'run-journal', encoding: 'json' });
    const meta = old.openDB<number, string>({ name: 'meta', encoding: 'json' });
    const oldIds = Array.from({ length: 50 }, (_, i) => `run-old-${i}`);
    old.transactionSync(() => {
      oldIds.forEach((id, i) => {
        void ids.put(id, i + 1);
        void records.put(i + 1, JSON.stringify(record(id)));
        void live.put(i + 1, true);
        void journal.put(i + 1, { seq: i + 1, at: fixedNow().toISOString(), kind: 'run.started', data: { run: id } });
        void byRun.put([i + 1, i + 1], true);
      });
      void meta.put('journalSeq', 50);
      void meta.put('runSeq', 50);
      void meta.put('format', 2);
    });
    await old.close();

    const store = createLmdbRunStore(dir, { now: fixedNow });
    expect((await store.getRun('run-old-7'))?.id).toBe('run-old-7');
    await store.updateRun('run-new', (d, tx) => {
      d.run = record('run-new');
      tx.emit('run.started', { run: 'run-new' });
    });
    expect((await store.journal(0, { run: 'run-new' })).map((e) => e.seq)).toEqual([51]);
    expect((await store.listRuns({ status: 'running' })).length).toBe(51);
    await store.close();
    const ix = await idIndexes(dir);
    expect(ix.format).toBe(3);
    expect([...ix.recent.keys()]).toEqual(['run-new']);
    expectIndexesConsistent(ix, [...oldIds, 'run-new']);
  });
});

describe('LMDB run store across processes', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  function child(args: string[]): ChildProcess {
    const c = spawn(process.execPath, [CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(c);
    return c;
  }

  it('a shared transaction id set back by another process opening the store (LMDB ITS#9496) loses no acknowledged commit', async () => {
    // What mdb_env_open2 in lmdb-js's LMDB does when a process opens the store while another commits:
    // it sets the lock file's last-committed transaction id (offset 8) to the one it read before that commit.
    const setBack = (dir: string): void => {
      const fd = openSync(join(dir, 'runs.mdb-lock'), 'r+');
      const id = Buffer.alloc(8);
      readSync(fd, id, 0, 8, 8);
      id.writeBigUInt64LE(id.readBigUInt64LE(0) - 1n);
      writeSync(fd, id, 0, 8, 8);
      closeSync(fd);
    };
    const dir = tempDir();
    const store = createLmdbRunStore(dir, { now: fixedNow });
    const step = (n: number) =>
      store.updateRun('r', (d, tx) => {
        d.run ??= record('r');
        d.run.seq += 1;
        tx.emit('run.action', { run: 'r', n });
      });
    for (let n = 1; n <= 5; n++) await step(n);
    setBack(dir);
    await step(6); // without the check, this commit began on the snapshot before step 5 and overwrote it
    setBack(dir);
    await Promise.all([step(7), step(8)]); // a group
    expect((await store.getRun('r'))?.seq).toBe(8);
    expect((await store.journal(0, { run: 'r' })).map((e) => [e.seq, e.data.n])).toEqual(Array.from({ length: 8 }, (_, i) => [i + 1, i + 1]));
    expect(store.staleRepairs).toBe(2);
    await store.close();
  });

  it('4 processes × 100 updates of one run lose none, and the journal is gapless and exactly-once', async () => {
    const dir = tempDir();
    const pids = await Promise.all(
      Array.from({ length: 4 }, () => {
        const c = child(['increment', dir, 'r', '100']);
        let err = '';
        c.stderr!.on('data', (b: Buffer) => (err += b.toString()));
        return new Promise<number>((resolve, reject) => c.on('exit', (code) => (code === 0 ? resolve(c.pid!) : reject(new Error(`child exited ${code}: ${err}`)))));
      }),
    );
    const store = createLmdbRunStore(dir);
    expect((await store.getRun('r'))?.state).toEqual({ n: 400 });
    const lines = await store.journal();
    expect(lines.map((e) => e.seq)).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    expect(lines.map((e) => e.data.n)).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    for (const pid of pids) expect(lines.filter((e) => e.data.pid === pid)).toHaveLength(100);
    await store.close();
  }, 90_000);

  it('a writer SIGKILLed mid-commit, 12 times, leaves the old or the new run with exactly its journal lines', async () => {
    const dir = tempDir();
    let previous = 0;
    for (let round = 0; round < 12; round++) {
      const c = child(['churn', dir, 'r']);
      await new Promise<void>((resolve, reject) => {
        c.stdout!.on('data', (b: Buffer) => b.toString().includes('ready') && resolve());
        c.on('exit', (code) => reject(new Error(`churn child exited early (${code})`)));
      });
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 150));
      const exited = new Promise((r) => c.on('exit', r));
      c.kill('SIGKILL');
      await exited;
      // Opened and closed each round: the last close releases this process's environment, so each round reads the file afresh.
      const store = createLmdbRunStore(dir);
      const run = (await store.getRun('r'))!;
      const n = (run.state as { n: number }).n;
      expect(n).toBeGreaterThan(previous); // every round committed at least its first batch
      previous = n;
      const lines = await store.journal(0, { run: 'r' });
      expect(lines.map((e) => e.data.n)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      expect(lines.map((e) => e.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      expect(run.seq).toBe(n);
      await store.close();
    }
    // The writer lock of a killed process is recovered: this process can still write.
    const store = createLmdbRunStore(dir);
    await store.updateRun('r', (d) => void (d.run!.seq += 1));
    expect((await store.getRun('r'))?.seq).toBe(previous + 1);
    await store.close();
  }, 120_000);

  it('a writer creating runs, its ids moving between the indexes in most commits, SIGKILLed 6 times, leaves every committed run found once', async () => {
    const dir = tempDir();
    let previous = 0;
    for (let round = 0; round < 6; round++) {
      const c = child(['create', dir, 'c', '4']);
      await new Promise<void>((resolve, reject) => {
        c.stdout!.on('data', (b: Buffer) => b.toString().includes('ready') && resolve());
        c.on('exit', (code) => reject(new Error(`create child exited early (${code})`)));
      });
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 150));
      const exited = new Promise((r) => c.on('exit', r));
      c.kill('SIGKILL');
      await exited;
      const store = createLmdbRunStore(dir);
      const runs = await store.listRuns();
      expect(runs.length).toBeGreaterThan(previous);
      previous = runs.length;
      const ids = Array.from({ length: runs.length }, (_, i) => `c${i}`); // runs are created in order, 8 per commit: a prefix survives
      expect(runs.map((r) => r.id).sort()).toEqual([...ids].sort());
      for (const id of [ids[0]!, ids[ids.length >> 1]!, ids[ids.length - 1]!]) {
        expect((await store.getRun(id))?.id).toBe(id);
        expect((await store.journal(0, { run: id })).map((e) => e.kind)).toEqual(['test.created']);
      }
      await store.close();
      expectIndexesConsistent(await idIndexes(dir), ids);
    }
  }, 120_000);
});
