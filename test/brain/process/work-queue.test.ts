// The Brain's side of the shared work claims (brain/process/work-queue.ts) with two Pollys' real
// registries (file stores in temp dirs) on one real PostgreSQL server (a temporary cluster): the
// task goes to one; the other follows it to its outcome; a holder whose lease lapsed loses the task
// to the other, which starts it, and the old holder cancels its copy and may not push or open a PR. Without Debian's postgresql
// it is skipped and listed (a failure under CI=true).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrainProcessDeps } from '../../../brain/process/brain-deps.js';
import { claimPlanTask, holdsWorkClaim, syncWorkQueue, type WorkQueueMemory } from '../../../brain/process/work-queue.js';
import type { PlanRecord } from '../../../brain/registry/registry-schema.js';
import { createFileRegistryStore, type RegistryStore } from '../../../brain/registry/registry-store.js';
import { transitionTask } from '../../../brain/registry/task-lifecycle.js';
import { createPostgresWorkClaims } from '../../../workflows/run/postgres-work-claims.js';
import type { WorkClaims } from '../../../workflows/run/work-claims.js';
import { startPostgres, type PostgresServer } from '../../helpers/postgres-server.js';
import { sampleTask } from '../../helpers/registry-sample.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

const PG = hasSystemPackage('postgresql', import.meta.url);

let server: PostgresServer;
const opened: WorkClaims[] = [];
beforeAll(async () => {
  if (PG) server = await startPostgres();
}, 120_000);
afterAll(async () => {
  for (const c of opened) await c.close().catch(() => undefined);
  await server?.stop();
}, 30_000);

const APPROVED = '2026-12-01T00:00:00.000Z';
const plan = {
  id: 'p1',
  decidedAt: APPROVED,
  tasks: [
    { key: 't1', title: 'Add max()', purpose: 'implement', worker: 'pi', prompt: 'max', acceptance: { commands: ['true'], criteria: [] }, dependsOn: [] },
    { key: 't2', title: 'Add min()', purpose: 'implement', worker: 'pi', prompt: 'min', acceptance: { commands: ['true'], criteria: [] }, dependsOn: [] },
  ],
} as unknown as PlanRecord;

type Polly = { deps: BrainProcessDeps; store: RegistryStore; memory: WorkQueueMemory; started: string[]; logs: string[] };

/** One Polly: its own registry holding plan p1's tasks (queued), on the shared claims of `schema`. */
async function polly(name: string, schema: string, leaseSeconds: number): Promise<Polly> {
  const store = createFileRegistryStore(mkdtempSync(join(tmpdir(), `polly-wq-${name}-`)));
  await store.update((draft) => {
    draft.plans.p1 = plan;
    for (const s of plan.tasks) draft.tasks[`p1-${s.key}`] = { ...sampleTask(`p1-${s.key}`), planId: 'p1' };
  });
  const claims = createPostgresWorkClaims({ connectionString: server.url, schema });
  opened.push(claims);
  const deps = {
    store,
    claims: { store: claims, polly: { id: `id-${name}`, label: `${name}:/clone` }, repo: 'forge.example/acme/app', leaseSeconds },
  } as unknown as BrainProcessDeps;
  return { deps, store, memory: new Map(), started: [], logs: [] };
}

const now = () => new Date();
const sync = (p: Polly) =>
  syncWorkQueue(
    p.deps,
    p.memory,
    (l) => p.logs.push(l),
    now,
    async (_plan, key) => {
      p.started.push(key);
    },
  );
const task = async (p: Polly, id: string) => (await p.store.read()).tasks[id]!;

describe.skipIf(!PG)('the work queue of two Pollys on one store', () => {
  it('one runs the task, the other follows it and settles it done with the PR once the holder settled', async () => {
    const a = await polly('a', 'wq_follow', 60);
    const b = await polly('b', 'wq_follow', 60);
    expect(await claimPlanTask(a.deps, plan, 't1', now)).toBe('mine');
    const other = await claimPlanTask(b.deps, plan, 't1', now);
    expect(other).toMatchObject({ label: 'a:/clone' });
    expect(await task(b, 'p1-t1')).toMatchObject({ status: 'dispatched', workClaim: { holder: 'a:/clone', mine: false } });
    expect((await task(a, 'p1-t1')).workClaim).toMatchObject({ mine: true });
    // Still running at the holder: the follower waits.
    await sync(b);
    expect((await task(b, 'p1-t1')).status).toBe('dispatched');
    // The holder's task ends ready with its PR; its next pass settles the claim.
    await a.store.update((draft) => {
      const t = draft.tasks['p1-t1']!;
      transitionTask(t, 'dispatched', { at: now().toISOString() });
      transitionTask(t, 'ready', { at: now().toISOString(), finished: true });
      t.pr = { number: 7, url: 'https://forge.example/acme/app/pull/7' } as never;
    });
    await sync(a);
    expect((await task(a, 'p1-t1')).workClaim).toMatchObject({ mine: true, settled: true });
    b.memory.clear();
    await sync(b);
    const followed = await task(b, 'p1-t1');
    expect(followed.status).toBe('done');
    expect(followed.statusReason).toBe('run by another Polly (a:/clone): it ended ready (https://forge.example/acme/app/pull/7)');
    expect(b.started).toEqual([]);
  });

  it('a holder whose lease lapsed loses the task: the other takes it over and starts it, the old holder cancels its copy', async () => {
    const a = await polly('a', 'wq_takeover', 1);
    const b = await polly('b', 'wq_takeover', 60);
    expect(await claimPlanTask(a.deps, plan, 't2', now)).toBe('mine');
    expect(await claimPlanTask(b.deps, plan, 't2', now)).not.toBe('mine');
    // Within the lease nothing moves.
    await sync(b);
    expect(b.started).toEqual([]);
    // a's Brain stops renewing (it is not running its pass); the lease lapses on the store's clock.
    await new Promise((r) => setTimeout(r, 1500));
    b.memory.clear();
    await sync(b);
    expect(b.started).toEqual(['t2']);
    expect((await task(b, 'p1-t2')).workClaim).toMatchObject({ mine: true, holder: 'b:/clone' });
    // The new holder may open the PR; the old one, back at its PR step, may not: its copy is cancelled
    // (handleCancels backs it up and stops it).
    expect(await holdsWorkClaim(b.deps, await task(b, 'p1-t2'), 'open_draft_pr', (l) => b.logs.push(l))).toBe(true);
    expect(await holdsWorkClaim(a.deps, await task(a, 'p1-t2'), 'open_draft_pr', (l) => a.logs.push(l))).toBe(false);
    const lost = await task(a, 'p1-t2');
    expect(lost.cancelRequested).toBe(true);
    expect(lost.workClaim?.lost).toMatch(/b:\/clone took it over .*open_draft_pr was not done/);
    // And stays refused.
    expect(await holdsWorkClaim(a.deps, lost, 'push', () => {})).toBe(false);
  });

  it('an old holder that comes back between steps notices on its next pass and cancels its copy', async () => {
    const a = await polly('a', 'wq_renewal', 1);
    const b = await polly('b', 'wq_renewal', 60);
    expect(await claimPlanTask(a.deps, plan, 't1', now)).toBe('mine');
    expect(await claimPlanTask(b.deps, plan, 't1', now)).not.toBe('mine');
    await new Promise((r) => setTimeout(r, 1500));
    await sync(b);
    expect(b.started).toEqual(['t1']);
    await sync(a);
    const lost = await task(a, 'p1-t1');
    expect(lost.cancelRequested).toBe(true);
    expect(lost.workClaim?.lost).toMatch(/b:\/clone took it over .*noticed on renewal/);
  });
});
