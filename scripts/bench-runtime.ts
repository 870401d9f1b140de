/**
 * `npm run bench -- runtime [seconds-per-case]`: steps/s of the runtime's start → claim → report
 * loop with 1,000 live runs in the registry (customer-brief runs each holding an open order).
 *
 * A step is one runtime operation = one `store.update` (one atomic registry write with its journal
 * lines). Each loop starts a new run (its START fires and the first order opens), claims that
 * order and reports it (`ok`, zero tickets: the run ends), so the 1,000 live runs stay live and
 * the registry grows by one finished run per loop.
 *
 * Cases, in the same run on the same data:
 * - file store: `.polly/registry.json` under the lock, temp file + fsync + rename + `.bak` + journal;
 * - memory store: the in-process baseline (same runtime, no disk);
 * - file store with no live runs: how much of a step's cost is the registry's size (every update
 *   parses, clones, validates and rewrites the whole registry);
 * - the seed's claim: polyflow reports about 1,200 steps/s (node:sqlite, WAL), printed for comparison.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunRecord } from '../brain/registry/registry-schema.js';
import { createFileRegistryStore, createMemoryRegistryStore, type RegistryStore } from '../brain/registry/registry-store.js';
import { orderIdFor, runIdFor } from '../workflows/run/run-identity.js';
import { createRuntime } from '../workflows/run/runtime.js';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../workflows/workflow-library.js';

const LIVE = 1000;
const SEED_CLAIM = 1200;
const seconds = Number(process.argv[2] ?? '3');
const library = createWorkflowLibrary(builtinWorkflowDirs());

function day(n: number): string {
  const d = new Date(Date.UTC(2020, 0, 1) + n * 86_400_000);
  return d.toISOString().slice(0, 10);
}

/** 1,000 live customer-brief runs, each with its fetch_tickets order open (ids derived as the runtime derives them). */
async function liveRuns(): Promise<Record<string, RunRecord>> {
  const rt = createRuntime({ store: createMemoryRegistryStore(), library, agentArea: 'bench', instanceArea: 'live' });
  const template = (await rt.start('customer-brief', { channel: '#live', day: day(0) })).run!;
  const runs: Record<string, RunRecord> = {};
  for (let i = 0; i < LIVE; i++) {
    const key = `brief:#live:${day(i)}`;
    const id = runIdFor('bench', 'live', 'customer-brief', key);
    const run = structuredClone(template);
    run.id = id;
    run.key = key;
    run.input = { channel: '#live', day: day(i) };
    run.openOrder = { ...run.openOrder!, id: orderIdFor(id, 1, 'fetch_tickets', 0), args: { input: run.input, vars: { tickets: 0 } } };
    runs[id] = run;
  }
  return runs;
}

async function measure(name: string, store: RegistryStore, runs: Record<string, RunRecord>, expectLive = LIVE): Promise<number> {
  await store.update((draft) => {
    Object.assign(draft.runs, structuredClone(runs));
  });
  const rt = createRuntime({ store, library, agentArea: 'bench', instanceArea: 'loop' });
  let n = 0;
  const loop = async (): Promise<void> => {
    const s = await rt.start('customer-brief', { channel: '#bench', day: day(n++) });
    const order = await rt.claim(s.run!.id, { owner: 'bench' });
    const r = await rt.report(s.run!.id, order!.id, { outcome: 'ok', data: { count: 0 } });
    if (!r.accepted || r.run.status !== 'finished') throw new Error(`bench loop ${n}: unexpected ${JSON.stringify(r)}`);
  };
  for (let i = 0; i < 3; i++) await loop(); // warm-up
  (globalThis as { gc?: () => void }).gc?.();
  const loopsBefore = n;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  while (process.hrtime.bigint() < deadline || n - loopsBefore < 10) await loop();
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const steps = (n - loopsBefore) * 3;
  const live = (await rt.list({ allAreas: true, status: 'running' })).length;
  if (live !== expectLive) throw new Error(`expected ${expectLive} live runs, found ${live}`);
  const perSec = steps / secs;
  process.stdout.write(`${name.padEnd(46)} ${perSec.toFixed(1).padStart(9)} steps/s  ${((secs / steps) * 1000).toFixed(2).padStart(8)} ms/step  (${steps} steps, ${live} live runs)\n`);
  return perSec;
}

const runs = await liveRuns();
process.stdout.write(`runtime: start → claim → report, ${LIVE} live runs in the registry, ${seconds}s per case (load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores)\n`);
const dir = mkdtempSync(join(tmpdir(), 'polly-bench-runtime-'));
try {
  const file = await measure('file store (.polly/registry.json, lock+fsync)', createFileRegistryStore(dir), runs);
  const memory = await measure('memory store (in-process baseline)', createMemoryRegistryStore(), runs);
  const empty = mkdtempSync(join(tmpdir(), 'polly-bench-runtime-empty-'));
  try {
    await measure('file store, no live runs (size effect)', createFileRegistryStore(empty), {}, 0);
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
  process.stdout.write(`${"seed's claim (polyflow, node:sqlite)".padEnd(46)} ${`~${SEED_CLAIM.toLocaleString('en')}`.padStart(9)} steps/s\n`);
  process.stdout.write(`file store / seed's claim: ${(file / SEED_CLAIM).toFixed(3)}×   file store / memory store: ${(file / memory).toFixed(3)}×\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
