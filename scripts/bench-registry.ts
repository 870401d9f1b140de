/**
 * `npm run bench -- registry [seconds-per-case]`: read-modify-write throughput of the registry on a
 * registry holding 1,000 tasks, each op changing one task.
 *
 * Cases, measured in the same run on the same data:
 * - baseline: `JSON.parse(readFileSync)` + change + `writeFileSync(JSON.stringify)`, no lock, no
 *   fsync, no backup, no journal: the floor of "rewrite a JSON file";
 * - file store: `store.update()` with lock, temp file + fsync + rename + dir fsync, `.bak` link,
 *   one journal event per op;
 * - memory store: `store.update()` in memory (structured clones, validation).
 * Prints ops/s, ms/op and the file store's ratio to the baseline.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyRegistry, type Registry, type TaskRecord } from '../brain/registry/registry-schema.js';
import { createFileRegistryStore, createMemoryRegistryStore } from '../brain/registry/registry-store.js';

const TASKS = 1000;
const seconds = Number(process.argv[2] ?? '3');

function task(id: string): TaskRecord {
  const at = '2026-11-01T00:00:00.000Z';
  return {
    id, planId: 'p1', title: `task ${id}: make the widget configurable`, purpose: 'implement', worker: 'claude-code',
    model: 'claude-sonnet-4-5', reviewer: 'codex', prompt: `Implement ${id}. Keep the public API stable and add tests for the new option.`,
    acceptance: { commands: ['npm test', 'npm run lint'], criteria: ['tests pass', 'no new warnings'] }, dependsOn: [],
    status: 'queued', statusReason: null, attempts: 0, reviewRounds: 0, branch: `polly/${id}`, worktree: `.worktrees/${id}`,
    baseBranch: 'main', baseCommit: '0123456789abcdef0123456789abcdef01234567', headCommit: null, checks: [], reviews: [],
    pr: null, backupRefs: [], sessionId: null, createdAt: at, updatedAt: at,
  };
}

function bigRegistry(): Registry {
  const reg = emptyRegistry();
  for (let i = 1; i <= TASKS; i++) reg.tasks[`t${i}`] = task(`t${i}`);
  reg.counters.task = TASKS;
  return reg;
}

/** Change one task, as a status transition would. */
function touch(reg: Registry, n: number): void {
  const t = reg.tasks[`t${(n % TASKS) + 1}`]!;
  t.attempts += 1;
  t.status = t.status === 'queued' ? 'running' : 'queued';
  t.updatedAt = new Date().toISOString();
}

async function measure(name: string, op: (n: number) => unknown): Promise<number> {
  for (let i = 0; i < 5; i++) await op(i); // warm-up
  (globalThis as { gc?: () => void }).gc?.();
  let n = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  while (process.hrtime.bigint() < deadline || n < 20) await op(n++);
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const opsPerSec = n / secs;
  process.stdout.write(`${name.padEnd(44)} ${opsPerSec.toFixed(1).padStart(9)} ops/s  ${((secs / n) * 1000).toFixed(2).padStart(8)} ms/op  (${n} ops)\n`);
  return opsPerSec;
}

const root = mkdtempSync(join(tmpdir(), 'polly-bench-registry-'));
try {
  const baseFile = join(root, 'baseline.json');
  const text = `${JSON.stringify(bigRegistry(), null, 2)}\n`;
  writeFileSync(baseFile, text);
  const store = createFileRegistryStore(join(root, '.polly'));
  await store.update((d) => void Object.assign(d, bigRegistry()));
  const mem = createMemoryRegistryStore({ initial: bigRegistry() });

  process.stdout.write(`registry: ${TASKS} tasks, ${(statSync(store.paths.registry).size / 1024).toFixed(0)} KiB on disk; ${seconds} s per case; node ${process.version}\n`);
  const base = await measure('baseline: parse + writeFileSync (no lock/fsync)', (n) => {
    const reg = JSON.parse(readFileSync(baseFile, 'utf8')) as Registry;
    touch(reg, n);
    writeFileSync(baseFile, `${JSON.stringify(reg, null, 2)}\n`);
  });
  const file = await measure('file store: update() (lock+fsync+bak+journal)', (n) =>
    store.update((d, tx) => {
      touch(d, n);
      tx.emit('bench.touch', { n });
    }),
  );
  const memory = await measure('memory store: update()', (n) =>
    mem.update((d, tx) => {
      touch(d, n);
      tx.emit('bench.touch', { n });
    }),
  );
  const reads = await measure('file store: read()', () => store.read());
  process.stdout.write(`ratio file store / baseline: ${(file / base).toFixed(2)}x (${((base / file - 1) * 100).toFixed(0)}% slower per op)\n`);
  process.stdout.write(`ratio memory store / file store: ${(memory / file).toFixed(2)}x; file read() ${reads.toFixed(1)} ops/s\n`);
  const journal = await store.journal();
  if (journal.length === 0 || journal[journal.length - 1]!.seq !== journal.length) throw new Error('journal is not gapless after the benchmark');
} finally {
  rmSync(root, { recursive: true, force: true });
}
