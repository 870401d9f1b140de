/**
 * `npm run bench -- runtime [seconds-per-case] [repetitions]`: durable steps/s of the runtime's start → claim →
 * report loop on the LMDB run store at 100, 1,000, 10,000 and 100,000 live runs, with 1 and 32
 * loops in flight, beside the in-memory baseline, polyflow's published figure and this disk's fsync rate,
 * all measured in the same run.
 *
 * A step is one runtime operation = one `store.updateRun` (one run, its journal lines, durable
 * before it returns). Each loop starts a new run (its START fires and the first order opens),
 * claims that order and reports it (`ok`, zero tickets: the run ends), so the live runs stay live
 * and the history grows by one finished run per loop. Live runs are customer-brief runs each
 * holding an open order.
 *
 * Each live count has its own store, filled before any case is measured, and the cases of one
 * concurrency are sampled in turns (100, 1,000, 10,000, 100,000 live, then again, `reps` times),
 * so a change of load or of the disk's rate during the run falls on every case alike and the
 * ratios compare samples taken seconds apart. (Measured one case after the other on one growing
 * store, a shared disk moved the ratios by more than the store's own cost: one run showed 10,000
 * live runs at 58% of 100 while 100,000 were at 80%.)
 *
 * Figures printed:
 * - fsync: fdatasync() calls per second on a 1-byte append in the bench directory (the disk's
 *   ceiling for one durable commit per step, without group commit);
 * - per case, `reps` samples (default 3): the median steps/s with the slowest and fastest sample,
 *   ms/step, the median CPU µs/step of this process (what the figures would be on an idle
 *   machine: a 2-core machine shared with other work gives the bench a fraction of a core; it
 *   does not depend on the disk), the steps per commit (group commit), and the disk's
 *   fdatasync/s measured just before the concurrency's samples. With 32 in flight a commit
 *   carries every step in flight, so steps/s is about 32 × the commits the disk allows (an LMDB
 *   commit is two fdatasyncs); the CPU per step, which does not depend on the disk, shows the
 *   store's own cost; and the KiB this process handed to write() per commit (`wchar` of
 *   /proc/self/io, documented in the kernel's Documentation/filesystems/proc.rst; Linux only):
 *   LMDB writes back every page a commit copied, so this is the commit's pages × 4 KiB, the
 *   figure that showed runs keyed by hashed ids scattering a commit over twice the pages at
 *   100,000 live runs;
 * - memory store (in-process baseline, no disk) at 1,000 live runs, concurrency 32;
 * - polyflow's published figure: it reports about 1,200 steps/s (node:sqlite, WAL);
 * - the targets of issue 19 (≥ 5,000 at 1,000 live with 32 in flight; 100,000 live within 20% of
 *   100 live, with 32 and with 1 in flight), each MET or MISSED on the medians, and the same
 *   ratio in CPU per step.
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunRecord } from '../workflows/run/run-records.js';
import { createLmdbRunStore, type LmdbRunStore } from '../workflows/run/lmdb-run-store.js';
import { createMemoryRunStore } from '../workflows/run/memory-run-store.js';
import type { RunStore } from '../workflows/run/run-store.js';
import { orderIdFor, runIdFor } from '../workflows/run/run-identity.js';
import { createRuntime } from '../workflows/run/runtime.js';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../workflows/workflow-library.js';

const SEED_CLAIM = 1200;
const LIVE_STEPS = [100, 1000, 10_000, 100_000];
const CONCURRENCY = [1, 32];
const seconds = Number(process.argv[2] ?? '2');
const reps = Number(process.argv[3] ?? '3');
const library = createWorkflowLibrary(builtinWorkflowDirs());

function day(n: number): string {
  return new Date(Date.UTC(2020, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);
}

/** fdatasync() per second on a 1-byte append, for `ms` milliseconds. */
function fsyncRate(dir: string, ms = 1000): number {
  const fd = openSync(join(dir, 'fsync-probe'), 'w');
  let n = 0;
  const start = Date.now();
  try {
    while (Date.now() - start < ms) {
      writeSync(fd, 'x');
      fdatasyncSync(fd);
      n++;
    }
  } finally {
    closeSync(fd);
  }
  return n / ((Date.now() - start) / 1000);
}

/** A live customer-brief run with its fetch_tickets order open (ids derived as the runtime derives them). */
async function template(): Promise<RunRecord> {
  const rt = createRuntime({ store: createMemoryRunStore(), library, agentArea: 'bench', instanceArea: 'live' });
  return (await rt.start('customer-brief', { channel: '#live', day: day(0) })).run!;
}

/** Add live runs numbered [from, to) to `store`, in batches that share commits. */
async function addLive(store: RunStore, base: RunRecord, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += 2000) {
    const batch: Array<Promise<void>> = [];
    for (let j = i; j < Math.min(to, i + 2000); j++) {
      const key = `brief:#live:${day(j)}`;
      const id = runIdFor('bench', 'live', 'customer-brief', key);
      const run = structuredClone(base);
      run.id = id;
      run.key = key;
      run.input = { channel: '#live', day: day(j) };
      run.openOrder = { ...run.openOrder!, id: orderIdFor(id, 1, 'fetch_tickets', 0), args: { input: run.input, vars: { tickets: 0 } } };
      batch.push(store.updateRun(id, (d) => void (d.run = run)));
    }
    await Promise.all(batch);
  }
}

let dayCounter = 0;

/** Bytes this process has passed to write()-family calls (`wchar` in /proc/self/io), or null off Linux. */
function bytesWritten(): number | null {
  try {
    const m = /^wchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

interface Sample {
  perSec: number;
  msPerStep: number;
  cpuUs: number;
  steps: number;
  stepsPerCommit: number | null;
  kibPerCommit: number | null;
}

/** One timed sample: `concurrency` loops for `seconds` (at least 10 loops). */
async function sample(store: RunStore, live: number, concurrency: number, commits?: () => number): Promise<Sample> {
  const rt = createRuntime({ store, library, agentArea: 'bench', instanceArea: 'loop' });
  let loops = 0;
  const loop = async (): Promise<void> => {
    const s = await rt.start('customer-brief', { channel: '#bench', day: day(dayCounter++) });
    const order = await rt.claim(s.run!.id, { owner: 'bench' });
    const r = await rt.report(s.run!.id, order!.id, { outcome: 'ok', data: { count: 0 } });
    if (!r.accepted || r.run.status !== 'finished') throw new Error(`bench loop: unexpected ${JSON.stringify(r)}`);
    loops++;
  };
  await Promise.all(Array.from({ length: concurrency }, () => loop())); // warm-up
  (globalThis as { gc?: () => void }).gc?.();
  const loopsBefore = loops;
  const commitsBefore = commits?.() ?? 0;
  const wcharBefore = bytesWritten();
  const cpuBefore = process.cpuUsage();
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  const worker = async (): Promise<void> => {
    while (process.hrtime.bigint() < deadline || loops - loopsBefore < 10) await loop();
  };
  await Promise.all(Array.from({ length: concurrency }, () => worker()));
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  const wcharAfter = bytesWritten();
  const commitCount = commits ? Math.max(1, commits() - commitsBefore) : null;
  const steps = (loops - loopsBefore) * 3;
  const running = (await store.listRuns({ status: 'running' })).length;
  if (running !== live) throw new Error(`expected ${live} live runs, found ${running}`);
  return {
    perSec: steps / secs,
    msPerStep: (secs / steps) * 1000,
    cpuUs: (cpu.user + cpu.system) / steps,
    steps,
    stepsPerCommit: commitCount === null ? null : steps / commitCount,
    kibPerCommit: commitCount === null || wcharBefore === null || wcharAfter === null ? null : (wcharAfter - wcharBefore) / 1024 / commitCount,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The medians of a case's samples, printed as one line: steps/s with the spread, ms/step, CPU/step, steps and KiB per commit. */
function report(name: string, samples: Sample[], disk: number | null, onDisk = true): { perSec: number; cpuUs: number } {
  const perSec = median(samples.map((x) => x.perSec));
  const cpuUs = median(samples.map((x) => x.cpuUs));
  const rates = samples.map((x) => x.perSec);
  const kib = samples.every((x) => x.kibPerCommit !== null) && onDisk ? `, ${median(samples.map((x) => x.kibPerCommit!)).toFixed(0)} KiB written/commit` : '';
  const shared = samples.every((x) => x.stepsPerCommit !== null) ? `, ${median(samples.map((x) => x.stepsPerCommit!)).toFixed(1)} steps/commit${kib}` : '';
  process.stdout.write(
    `${name.padEnd(40)} ${perSec.toFixed(0).padStart(7)} steps/s [${Math.min(...rates).toFixed(0)}-${Math.max(...rates).toFixed(0)}]  ${median(samples.map((x) => x.msPerStep))
      .toFixed(3)
      .padStart(
        7,
      )} ms/step  ${cpuUs.toFixed(0).padStart(5)} µs CPU/step  (${samples.length} × ${Math.min(...samples.map((x) => x.steps))}+ steps${shared}${disk === null ? '' : `; disk ${disk.toFixed(0)} fdatasync/s`}; load ${loadavg()[0]!.toFixed(1)})\n`,
  );
  return { perSec, cpuUs };
}

const dir = mkdtempSync(join(tmpdir(), 'polly-bench-runtime-'));
try {
  const fsyncs = fsyncRate(dir);
  process.stdout.write(
    `runtime: start → claim → report on the LMDB run store, ${seconds}s per sample, ${reps} samples per case taken in turns; node ${process.version}, load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores\n`,
  );
  process.stdout.write(`${'disk: fdatasync/s (1-byte append)'.padEnd(40)} ${fsyncs.toFixed(0).padStart(7)} /s\n`);
  const base = await template();
  const memory = createMemoryRunStore();
  await addLive(memory, base, 0, 1000);
  const memSamples: Sample[] = [];
  for (let i = 0; i < reps; i++) memSamples.push(await sample(memory, 1000, 32, () => memory.commits));
  const mem = report('memory store, 1,000 live, 32 in flight', memSamples, null, false).perSec;
  await memory.close();
  // One store per live count, so that every case can be sampled in turn (see the header).
  const stores = new Map<number, LmdbRunStore>();
  for (const live of LIVE_STEPS) {
    const t0 = Date.now();
    const store = createLmdbRunStore(join(dir, `store-${live}`));
    await addLive(store, base, 0, live);
    stores.set(live, store);
    process.stdout.write(
      `  (a store with ${live.toLocaleString('en')} live runs made in ${((Date.now() - t0) / 1000).toFixed(1)} s; rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB)\n`,
    );
  }
  const results = new Map<string, { perSec: number; cpuUs: number }>();
  for (const c of CONCURRENCY) {
    const disk = fsyncRate(dir, 300);
    const samples = new Map<number, Sample[]>(LIVE_STEPS.map((live) => [live, []]));
    for (let i = 0; i < reps; i++)
      for (const live of LIVE_STEPS) {
        const store = stores.get(live)!;
        samples.get(live)!.push(await sample(store, live, c, () => store.commits));
      }
    for (const live of LIVE_STEPS)
      results.set(`${live}/${c}`, report(`lmdb, ${live.toLocaleString('en').padStart(7)} live, ${String(c).padStart(2)} in flight`, samples.get(live)!, disk));
  }
  for (const store of stores.values()) await store.close();
  process.stdout.write(`${"seed's claim (polyflow, node:sqlite)".padEnd(40)} ${`~${SEED_CLAIM.toLocaleString('en')}`.padStart(7)} steps/s\n`);
  const at1k = results.get('1000/32')!.perSec;
  const at100 = results.get('100/32')!.perSec;
  const at100k = results.get('100000/32')!.perSec;
  const ratio = at100k / at100;
  const ratio1 = results.get('100000/1')!.perSec / results.get('100/1')!.perSec;
  const cpuRatio = (c: number): string =>
    `${((results.get(`100000/${c}`)!.cpuUs / results.get(`100/${c}`)!.cpuUs) * 100).toFixed(0)}% (${results.get(`100/${c}`)!.cpuUs.toFixed(0)} -> ${results.get(`100000/${c}`)!.cpuUs.toFixed(0)} µs)`;
  process.stdout.write(
    `lmdb at 1,000 live, 32 in flight / seed: ${(at1k / SEED_CLAIM).toFixed(2)}×; / memory store: ${(at1k / mem).toFixed(2)}×; steps/s per fdatasync/s: ${(at1k / fsyncs).toFixed(1)}\n`,
  );
  process.stdout.write(`target ≥ 5,000 durable steps/s at 1,000 live, 32 in flight: ${at1k.toFixed(0)} — ${at1k >= 5000 ? 'MET' : 'MISSED'}\n`);
  process.stdout.write(`target 100,000 live within 20% of 100 live (32 in flight): ${(ratio * 100).toFixed(0)}% — ${ratio >= 0.8 ? 'MET' : 'MISSED'}\n`);
  process.stdout.write(`target 100,000 live within 20% of 100 live (1 in flight): ${(ratio1 * 100).toFixed(0)}% — ${ratio1 >= 0.8 ? 'MET' : 'MISSED'}\n`);
  process.stdout.write(`CPU per step at 100,000 live / at 100 live (does not depend on the disk): 32 in flight ${cpuRatio(32)}, 1 in flight ${cpuRatio(1)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
