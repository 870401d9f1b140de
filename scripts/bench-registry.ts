/**
 * `npm run bench -- registry [seconds-per-case]`: latency of one registry update (one task
 * changed, one journal event: lock, temp file + fsync + rename + dir fsync, `.bak`, journal append
 * + fsync) with 1,000 and 10,000 finished tasks in the history, beside 100 live tasks.
 *
 * Cases, in the same run, for each history size:
 * - kept: a schema v2 registry that still holds every finished task (what every update paid before
 *   finished history left the file: its cost grows with everything ever done);
 * - archived: the same history written as a schema v1 file, migrated on the first update (timed
 *   once: it archives the finished goals into the journal and archive.jsonl), then updates on the
 *   small registry that is left.
 * Per case: ms per update (wall: the two fsyncs an update waits for in turn, the temp file's and
 * then the journal's beside the directory's, make most of it, so it follows the disk; the line
 * prints what two fdatasyncs take at the rate just measured),
 * CPU ms per update of this process (user + system, all threads: what does not depend on the
 * disk), the disk's fdatasync/s measured just before the case, and the CPU of one JSON.parse plus
 * one pretty JSON.stringify of that registry (the part of an update that grows with its size).
 * Also printed: the registry's size on disk, the load average, and the target of issue 19 (≤ 5 ms
 * per update at 10,000 finished tasks), MET or MISSED.
 */
import { closeSync, fdatasyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TaskRecord } from '../brain/registry/registry-schema.js';
import { createFileRegistryStore, type FileRegistryStore } from '../brain/registry/registry-store.js';
import { sampleTask } from './registry-sample.js';

const LIVE_GOALS = 10; // 100 live tasks
const HISTORY = [1000, 10_000];
const seconds = Number(process.argv[2] ?? '2');

function task(id: string, planId: string, done: boolean): TaskRecord {
  const t = sampleTask(id, '2026-10-01T00:00:00.000Z');
  if (!done) return { ...t, planId, finishedAt: null };
  return {
    ...t,
    planId,
    status: 'done',
    attempts: 1,
    reviewRounds: 1,
    worktree: null,
    headCommit: '89abcdef0123456789abcdef0123456789abcdef',
    pr: { forge: 'local', number: 1, url: 'local:1', state: 'merged' },
    finishedAt: '2026-10-02T00:00:00.000Z',
  };
}

/** A registry (schema `version`) with `finished` done tasks in goals of 10 and 100 live tasks. */
function registry(finished: number, version: number): Record<string, unknown> {
  const goals: Record<string, unknown> = {};
  const plans: Record<string, unknown> = {};
  const tasks: Record<string, TaskRecord> = {};
  const finishedGoals = finished / 10;
  for (let k = 1; k <= finishedGoals + LIVE_GOALS; k++) {
    const done = k <= finishedGoals;
    goals[`g${k}`] = { id: `g${k}`, text: `goal ${k}`, createdAt: '2026-10-01T00:00:00.000Z', status: done ? 'done' : 'running', planIds: [`p${k}`] };
    plans[`p${k}`] = {
      id: `p${k}`,
      goalId: `g${k}`,
      createdAt: '2026-10-01T00:00:00.000Z',
      tasks: [],
      admission: null,
      gate: 'approved',
      askedAt: null,
      decidedAt: null,
      decidedBy: null,
    };
    for (let i = 1; i <= 10; i++) tasks[`p${k}-t${i}`] = task(`p${k}-t${i}`, `p${k}`, done);
  }
  const n = finishedGoals + LIVE_GOALS;
  return {
    schemaVersion: version,
    goals,
    plans,
    tasks,
    runs: {},
    workers: {},
    pullRequests: {},
    counters: { journalSeq: 0, pullRequest: 0, task: n * 10, plan: n, goal: n },
    brain: null,
  };
}

/** Change one live task, as a status transition would. */
async function touch(store: FileRegistryStore, n: number, finished: number): Promise<void> {
  await store.update((d, tx) => {
    const t = d.tasks[`p${finished / 10 + 1 + (n % LIVE_GOALS)}-t1`];
    if (!t) throw new Error('bench: live task missing');
    t.attempts += 1;
    t.status = t.status === 'queued' ? 'running' : 'queued';
    t.updatedAt = new Date().toISOString();
    tx.emit('bench.touch', { taskId: t.id, n });
  });
}

/** CPU ms (user + system) of one JSON.parse and one pretty JSON.stringify of the registry file's text. */
function jsonCpuMs(path: string): number {
  const text = readFileSync(path, 'utf8');
  const rounds = Math.max(3, Math.round(2e7 / text.length)); // ~20 MB of text
  const before = process.cpuUsage();
  for (let i = 0; i < rounds; i++) JSON.stringify(JSON.parse(text), null, 2);
  const cpu = process.cpuUsage(before);
  return (cpu.user + cpu.system) / 1000 / rounds;
}

async function measure(name: string, store: FileRegistryStore, finished: number, atLeast = 20): Promise<number> {
  for (let i = 0; i < Math.min(5, atLeast); i++) await touch(store, i, finished); // warm-up
  const disk = fsyncRate(store.paths.dir);
  (globalThis as { gc?: () => void }).gc?.();
  let n = 0;
  const cpuBefore = process.cpuUsage();
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  while (process.hrtime.bigint() < deadline || n < atLeast) await touch(store, n++, finished);
  const ms = Number(process.hrtime.bigint() - start) / 1e6 / n;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000 / n;
  const kib = statSync(store.paths.registry).size / 1024;
  process.stdout.write(
    `${name.padEnd(44)} ${ms.toFixed(2).padStart(7)} ms/update ${cpuMs.toFixed(2).padStart(6)} ms CPU/update  (${n} updates; registry.json ${kib.toFixed(0)} KiB, JSON parse + stringify ${jsonCpuMs(store.paths.registry).toFixed(2)} ms CPU; disk ${disk.toFixed(0)} fdatasync/s, so the two fsyncs an update waits for in turn take ~${(2000 / disk).toFixed(2)} ms; load ${loadavg()[0]!.toFixed(1)})\n`,
  );
  return ms;
}

function fsyncRate(dir: string): number {
  const fd = openSync(join(dir, 'fsync-probe'), 'w');
  let n = 0;
  const start = Date.now();
  while (Date.now() - start < 500) {
    writeSync(fd, 'x');
    fdatasyncSync(fd);
    n++;
  }
  closeSync(fd);
  return n / ((Date.now() - start) / 1000);
}

const root = mkdtempSync(join(tmpdir(), 'polly-bench-registry-'));
try {
  process.stdout.write(
    `registry: one task update with finished history beside ${LIVE_GOALS * 10} live tasks; ${seconds} s per case; node ${process.version}, load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores, disk ${fsyncRate(root).toFixed(0)} fdatasync/s\n`,
  );
  const archived = new Map<number, number>();
  for (const finished of HISTORY) {
    const keptDir = join(root, `kept-${finished}`);
    mkdirSync(keptDir);
    writeFileSync(join(keptDir, 'registry.json'), JSON.stringify(registry(finished, 2), null, 2));
    await measure(`${finished.toLocaleString('en')} finished, kept in registry.json`, createFileRegistryStore(keptDir), finished, 3);
    const dir = join(root, `archived-${finished}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'registry.json'), JSON.stringify(registry(finished, 1), null, 2));
    const store = createFileRegistryStore(dir);
    const t0 = process.hrtime.bigint();
    await touch(store, 0, finished); // migrates v1 → v2: the finished goals go to the journal and archive.jsonl
    await touch(store, 1, finished); // the archived records leave the file's pendingJournal
    process.stdout.write(
      `${`${finished.toLocaleString('en')} finished: migration + first 2 updates`.padEnd(44)} ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0).padStart(7)} ms  (archive.jsonl ${(statSync(store.paths.archive).size / 1024).toFixed(0)} KiB)\n`,
    );
    archived.set(finished, await measure(`${finished.toLocaleString('en')} finished, archived`, store, finished));
  }
  const at10k = archived.get(10_000)!;
  process.stdout.write(`target ≤ 5 ms per registry update at 10,000 finished tasks: ${at10k.toFixed(2)} ms — ${at10k <= 5 ? 'MET' : 'MISSED'}\n`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
