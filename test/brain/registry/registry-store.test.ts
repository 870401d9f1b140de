// The registry store: one contract for the file and memory stores, then the file store's
// durability under real concurrent processes, SIGKILL, corruption and the journal crash window.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { isPollyError, type PollyError } from '../../../brain/core/errors.js';
import { emptyRegistry, type JournalEntry, type Registry } from '../../../brain/registry/registry-schema.js';
import { createFileRegistryStore, createMemoryRegistryStore, type RegistryStore } from '../../../brain/registry/registry-store.js';
import { registryWithTasks, sampleTask } from '../../helpers/registry-sample.js';

const CHILD = fileURLToPath(new URL('../../fixtures/registry-child.mjs', import.meta.url));

function tempPollyDir(): string {
  return join(mkdtempSync(join(tmpdir(), 'polly-reg-')), '.polly');
}

function journalLines(dir: string): JournalEntry[] {
  const p = join(dir, 'journal.jsonl');
  if (!existsSync(p)) return [];
  return readFileSync(p, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as JournalEntry);
}

async function caught(p: Promise<unknown>): Promise<PollyError> {
  try {
    await p;
  } catch (error) {
    if (isPollyError(error)) return error;
    throw error;
  }
  throw new Error('expected a PollyError, the promise resolved');
}

const fixedNow = () => new Date('2026-11-29T12:00:00.000Z');

describe.each([
  ['memory', () => createMemoryRegistryStore({ now: fixedNow }) as RegistryStore],
  // The slow fallback poll is set beyond the test timeouts: a wait that resolves was woken by a change event.
  ['file', () => createFileRegistryStore(tempPollyDir(), { now: fixedNow, pollIntervalMs: 600_000 }) as RegistryStore],
])('RegistryStore contract (%s)', (_name, make) => {
  it('starts empty, commits updates, returns fn results, numbers journal events from 1', async () => {
    const store = make();
    expect(await store.read()).toEqual(emptyRegistry());
    const r = await store.update((d, tx) => {
      d.tasks.t1 = sampleTask('t1');
      tx.emit('task.created', { id: 't1' });
      tx.emit('task.queued', { id: 't1' });
      return 'ok';
    });
    expect(r).toBe('ok');
    await store.update((d, tx) => {
      d.tasks.t1!.status = 'running';
      tx.emit('task.running', { id: 't1' });
    });
    const reg = await store.read();
    expect(reg.tasks.t1?.status).toBe('running');
    expect(reg.counters.journalSeq).toBe(3);
    expect(reg.pendingJournal).toBeUndefined();
    const all = await store.journal();
    expect(all.map((e) => [e.seq, e.kind])).toEqual([
      [1, 'task.created'],
      [2, 'task.queued'],
      [3, 'task.running'],
    ]);
    expect(all[0]!.at).toBe('2026-11-29T12:00:00.000Z');
    expect((await store.journal(1, 1)).map((e) => e.seq)).toEqual([2]);
  });

  it('writes nothing when fn throws, and tx.emit after the update is refused', async () => {
    const store = make();
    await store.update((d) => {
      d.counters.goal = 1;
    });
    await expect(
      store.update((d, tx) => {
        d.counters.goal = 99;
        tx.emit('x', {});
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect((await store.read()).counters.goal).toBe(1);
    expect(await store.journal()).toEqual([]);
    let saved: { emit(k: string, d: Record<string, unknown>): void } | undefined;
    await store.update((_d, tx) => {
      saved = tx;
    });
    expect(() => saved!.emit('late', {})).toThrow(/after the update function returned/);
  });

  it('refuses an update that breaks the registry shape', async () => {
    const store = make();
    const err = await caught(
      store.update((d) => {
        (d as unknown as Record<string, unknown>).tasks = [];
      }),
    );
    expect(err.code).toBe('internal');
    expect(err.message).toContain('tasks');
    expect(await store.read()).toEqual(emptyRegistry());
  });

  it('read() returns a copy: mutating it changes nothing', async () => {
    const store = make();
    const a = await store.read();
    a.counters.plan = 42;
    expect((await store.read()).counters.plan).toBe(0);
  });

  it('waitForJournal resolves on a new entry, and gives [] on timeout or abort', async () => {
    const store = make();
    await store.update((_d, tx) => tx.emit('first', {}));
    expect(await store.waitForJournal(0, 10)).toHaveLength(1);
    expect(await store.waitForJournal(1, 50)).toEqual([]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 20);
    expect(await store.waitForJournal(1, 10_000, ac.signal)).toEqual([]);
    const waiting = store.waitForJournal(1, 30_000);
    setTimeout(() => void store.update((_d, tx) => tx.emit('second', { n: 2 })), 50);
    const got = await waiting;
    expect(got.map((e) => [e.seq, e.kind, e.data])).toEqual([[2, 'second', { n: 2 }]]);
  });

  it('serialises concurrent updates inside one process', async () => {
    const store = make();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.update(async (d, tx) => {
          const before = d.counters.task;
          await new Promise((r) => setTimeout(r, i % 3));
          d.counters.task = before + 1;
          tx.emit('inc', { i });
        }),
      ),
    );
    expect((await store.read()).counters.task).toBe(20);
    expect((await store.journal()).map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });
});

describe('file registry store', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  it('keeps the previous good file as registry.json.bak and does not rewrite on a no-op', async () => {
    const dir = tempPollyDir();
    const store = createFileRegistryStore(dir);
    await store.update((d) => {
      d.counters.goal = 1;
    });
    expect(existsSync(store.paths.backup)).toBe(false);
    const first = readFileSync(store.paths.registry, 'utf8');
    await store.update((d) => {
      d.counters.goal = 2;
    });
    expect(readFileSync(store.paths.backup, 'utf8')).toBe(first);
    const second = readFileSync(store.paths.registry);
    const ino = statSync(store.paths.registry).ino;
    await store.update(() => undefined);
    expect(readFileSync(store.paths.registry)).toEqual(second);
    expect(statSync(store.paths.registry).ino).toBe(ino);
    expect(existsSync(join(dir, 'registry.json.tmp'))).toBe(false);
    expect(existsSync(store.paths.lock)).toBe(false);
  });

  it('sees every change another writer makes, even one of the same size: the cached file and journal tail follow the files', async () => {
    const dir = tempPollyDir();
    const a = createFileRegistryStore(dir);
    const b = createFileRegistryStore(dir); // another writer: its own caches, as another process has
    await a.update((d, tx) => {
      d.counters.goal = 1;
      tx.emit('goal.counted', { n: 1 });
    });
    await b.update((d, tx) => {
      d.counters.goal = 2; // same length as before: only the inode and mtime tell the files apart
      tx.emit('goal.counted', { n: 2 });
    });
    expect((await a.read()).counters.goal).toBe(2);
    await a.update((d, tx) => {
      d.counters.goal += 1;
      tx.emit('goal.counted', { n: 3 });
    });
    expect(journalLines(dir).map((e) => [e.seq, e.data.n])).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    // A human edits the file in place (same inode, same size): the next update works on the edit.
    const text = readFileSync(a.paths.registry, 'utf8');
    writeFileSync(a.paths.registry, text.replace('"goal": 3', '"goal": 7'));
    await a.update((d) => {
      d.counters.goal += 1;
    });
    expect((await b.read()).counters.goal).toBe(8);
  });

  it('8 processes × 100 increments under the lock lose no update, and the journal is gapless', async () => {
    const dir = tempPollyDir();
    mkdirSync(dir, { recursive: true });
    const runs = Array.from({ length: 8 }, () => {
      const child = spawn(process.execPath, [CHILD, 'increment', dir, '100'], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      let err = '';
      child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
      return new Promise<number>((resolve, reject) => {
        child.on('exit', (code) => (code === 0 ? resolve(child.pid!) : reject(new Error(`child exited ${code}: ${err}`))));
      });
    });
    const pids = await Promise.all(runs);
    const store = createFileRegistryStore(dir);
    const reg = await store.read();
    expect(reg.counters.task).toBe(800);
    expect(reg.counters.journalSeq).toBe(800);
    const lines = journalLines(dir);
    expect(lines.map((e) => e.seq)).toEqual(Array.from({ length: 800 }, (_, i) => i + 1));
    for (const pid of pids) {
      expect(lines.filter((e) => e.data.pid === pid).map((e) => e.data.i)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    }
  }, 90_000);

  it('a process SIGKILLed mid-write leaves a registry that loads, and the journal stays exactly-once', async () => {
    const dir = tempPollyDir();
    const seedStore = createFileRegistryStore(dir);
    await seedStore.update((d) => {
      Object.assign(d, registryWithTasks(1000));
    });
    const size = statSync(seedStore.paths.registry).size;
    expect(size).toBeGreaterThan(500_000);
    const reader = createFileRegistryStore(dir, { lockStaleMs: 2000, lockTimeoutMs: 30_000 });
    let previous = (await reader.read()).counters.task;
    let killedHoldingLock = 0;
    const rounds = 12;
    for (let round = 0; round < rounds; round++) {
      const child = spawn(process.execPath, [CHILD, 'churn', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
      children.push(child);
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (b: Buffer) => b.toString().includes('ready') && resolve());
        child.on('exit', (code) => reject(new Error(`churn child exited early (${code})`)));
      });
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 150));
      const exited = new Promise((r) => child.on('exit', r));
      child.kill('SIGKILL');
      await exited;
      if (existsSync(reader.paths.lock)) {
        killedHoldingLock++;
        // The holder is dead (we reaped it): remove its lock as an operator would, except in the
        // last round, whose lock is left for the store's stale-lock takeover below.
        if (round < rounds - 1) rmSync(reader.paths.lock, { recursive: true });
      }
      const reg = await reader.read(); // must load: old or new content, never half
      expect(Object.keys(reg.tasks)).toHaveLength(1000);
      expect(reg.counters.task).toBeGreaterThanOrEqual(previous);
      previous = reg.counters.task;
      const lines = journalLines(dir);
      expect(lines.map((e) => e.seq)).toEqual(Array.from({ length: lines.length }, (_, i) => i + 1));
      expect(lines.length).toBe(reg.counters.journalSeq);
    }
    // The kills landed inside updates (the child holds the lock nearly all the time).
    expect(killedHoldingLock).toBeGreaterThan(0);
    // A stale lock left by a killed writer is taken over.
    await reader.update((d) => {
      d.counters.plan += 1;
    });
    expect((await reader.read()).counters.plan).toBe(1);
  }, 90_000);

  it('a truncated registry is registry_corrupt naming the file and the loadable backup, and nothing is overwritten', async () => {
    const dir = tempPollyDir();
    const store = createFileRegistryStore(dir);
    await store.update((d) => {
      d.tasks.t1 = sampleTask('t1');
    });
    await store.update((d) => {
      d.tasks.t2 = sampleTask('t2');
    });
    const full = readFileSync(store.paths.registry, 'utf8');
    writeFileSync(store.paths.registry, full.slice(0, Math.floor(full.length / 2)));
    const damaged = readFileSync(store.paths.registry);
    const err = await caught(store.read());
    expect(err.code).toBe('registry_corrupt');
    expect(err.message).toContain(store.paths.registry);
    expect(err.message).toContain(`${store.paths.backup} exists and loads`);
    expect(err.message).toContain(`cp '${store.paths.backup}' '${store.paths.registry}'`);
    expect(err.details).toMatchObject({ backup: store.paths.backup, backupExists: true, backupLoads: true });
    const err2 = await caught(store.update((d) => void (d.counters.goal = 5)));
    expect(err2.code).toBe('registry_corrupt');
    expect(readFileSync(store.paths.registry)).toEqual(damaged);
    // Following the message's instructions restores the previous good state.
    writeFileSync(store.paths.registry, readFileSync(store.paths.backup));
    expect(Object.keys((await store.read()).tasks)).toEqual(['t1']);
  });

  it('a registry deleted while in use is lost, not empty: read and update refuse with the restore command, and nothing is written', async () => {
    const dir = tempPollyDir();
    const store = createFileRegistryStore(dir);
    await store.update((d) => {
      d.tasks.t1 = sampleTask('t1');
    });
    rmSync(store.paths.registry);
    // Only one write so far (no backup yet): this store saw the file, so it knows it was deleted.
    const err = await caught(store.read());
    expect(err.code).toBe('registry_corrupt');
    expect(err.message).toContain(`${store.paths.registry} was deleted while this process used it`);
    expect(err.details).toMatchObject({ missing: true, backupExists: false });
    expect((await caught(store.update((d) => void (d.counters.goal = 1)))).code).toBe('registry_corrupt');
    expect(existsSync(store.paths.registry)).toBe(false);

    // With a backup, a fresh process (another Brain, polly status) sees the deletion too, and the
    // message's command restores the last good copy.
    const dir2 = tempPollyDir();
    const a = createFileRegistryStore(dir2);
    await a.update((d) => void (d.tasks.t1 = sampleTask('t1')));
    await a.update((d) => void (d.tasks.t2 = sampleTask('t2')));
    rmSync(a.paths.registry);
    const fresh = createFileRegistryStore(dir2);
    const err2 = await caught(fresh.read());
    expect(err2.code).toBe('registry_corrupt');
    expect(err2.message).toContain(`cp '${a.paths.backup}' '${a.paths.registry}'`);
    copyFileSync(a.paths.backup, a.paths.registry);
    expect(Object.keys((await fresh.read()).tasks)).toEqual(['t1']);
    expect(Object.keys((await a.read()).tasks)).toEqual(['t1']);
  });

  it('a .polly directory replaced under a running store is a lost registry', async () => {
    const dir = tempPollyDir();
    const store = createFileRegistryStore(dir);
    await store.update((d) => void (d.tasks.t1 = sampleTask('t1')));
    const text = readFileSync(store.paths.registry);
    rmSync(dir, { recursive: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(store.paths.registry, text);
    const err = await caught(store.read());
    expect(err.code).toBe('registry_corrupt');
    expect(err.message).toContain('was replaced while this process used it');
  });

  it('a corrupt registry without a backup says so, and an empty file is corrupt too', async () => {
    const dir = tempPollyDir();
    mkdirSync(dir, { recursive: true });
    const store = createFileRegistryStore(dir);
    writeFileSync(store.paths.registry, '');
    const err = await caught(store.read());
    expect(err.code).toBe('registry_corrupt');
    expect(err.message).toContain('empty');
    expect(err.message).toContain(`No backup exists at ${store.paths.backup}`);
    writeFileSync(store.paths.registry, '{"schemaVersion":1,"tasks":[]}');
    const shape = await caught(store.read());
    expect(shape.code).toBe('registry_corrupt');
    expect(shape.message).toMatch(/goals|tasks/);
  });

  it('a registry from a newer Polly is registry_newer and is not rewritten', async () => {
    const dir = tempPollyDir();
    mkdirSync(dir, { recursive: true });
    const store = createFileRegistryStore(dir);
    const text = JSON.stringify({ ...emptyRegistry(), schemaVersion: 99 });
    writeFileSync(store.paths.registry, text);
    expect((await caught(store.read())).code).toBe('registry_newer');
    expect((await caught(store.update(() => undefined))).code).toBe('registry_newer');
    expect(readFileSync(store.paths.registry, 'utf8')).toBe(text);
  });

  it('lock_timeout names the lock file when another holder keeps it; a stale lock is taken over', async () => {
    const dir = tempPollyDir();
    const store = createFileRegistryStore(dir, { lockTimeoutMs: 300, lockStaleMs: 2000 });
    await store.update(() => undefined);
    mkdirSync(store.paths.lock); // a live holder: fresh mtime
    const t0 = Date.now();
    const err = await caught(store.update((d) => void (d.counters.goal = 1)));
    expect(err.code).toBe('lock_timeout');
    expect(err.message).toContain(store.paths.lock);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    const old = new Date(Date.now() - 60_000);
    utimesSync(store.paths.lock, old, old); // its holder died a minute ago
    await store.update((d) => void (d.counters.goal = 1));
    expect((await store.read()).counters.goal).toBe(1);
  });

  it('journal exactly-once: events committed with the registry but missing from the journal are appended once', async () => {
    const dir = tempPollyDir();
    const store = createFileRegistryStore(dir, { now: fixedNow });
    await store.update((_d, tx) => tx.emit('a', { n: 1 }));
    // Simulate a crash after the registry rename and mid-way through the journal append:
    // the registry holds seq 2 and 3 as pending, the journal has seq 1 and half of seq 2's line.
    const reg = JSON.parse(readFileSync(store.paths.registry, 'utf8')) as Registry;
    const at = fixedNow().toISOString();
    reg.counters.journalSeq = 3;
    reg.counters.goal = 7;
    reg.pendingJournal = [
      { seq: 2, at, kind: 'b', data: { n: 2 } },
      { seq: 3, at, kind: 'c', data: { n: 3 } },
    ];
    writeFileSync(store.paths.registry, JSON.stringify(reg, null, 2));
    writeFileSync(store.paths.journal, readFileSync(store.paths.journal, 'utf8') + JSON.stringify(reg.pendingJournal[0]).slice(0, 20));
    const fresh = createFileRegistryStore(dir, { now: fixedNow });
    expect((await fresh.read()).counters.goal).toBe(7);
    expect(journalLines(dir).map((e) => [e.seq, e.kind])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    await fresh.read();
    await createFileRegistryStore(dir).journal();
    expect(journalLines(dir)).toHaveLength(3);
    await fresh.update((_d, tx) => tx.emit('d', {}));
    expect(journalLines(dir).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
  });

  it('journal() on a fresh store repairs the crash window too (no read or update needed)', async () => {
    const dir = tempPollyDir();
    const store = createFileRegistryStore(dir);
    await store.update((_d, tx) => tx.emit('a', {}));
    const reg = JSON.parse(readFileSync(store.paths.registry, 'utf8')) as Registry;
    reg.counters.journalSeq = 2;
    reg.pendingJournal = [{ seq: 2, at: '2026-11-29T12:00:00.000Z', kind: 'b', data: {} }];
    writeFileSync(store.paths.registry, JSON.stringify(reg));
    expect((await createFileRegistryStore(dir).journal(1)).map((e) => e.kind)).toEqual(['b']);
  });

  it('waitForJournal wakes on another process appending (file watch, not the slow poll)', async () => {
    const dir = tempPollyDir();
    const store = createFileRegistryStore(dir, { pollIntervalMs: 60_000 });
    await store.update(() => undefined);
    const waiting = store.waitForJournal(0, 30_000);
    const child = spawn(process.execPath, [CHILD, 'increment', dir, '1'], { stdio: 'ignore' });
    children.push(child);
    const got = await waiting;
    expect(got.map((e) => e.kind)).toEqual(['test.increment']);
  });
});
