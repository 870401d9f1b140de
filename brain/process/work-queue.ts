/**
 * Several Pollys, one queue (`runs.store: postgres`, docs/hosts.md "Several Pollys, one queue"):
 * the Brain's side of the shared work claims (workflows/run/work-claims.ts).
 *
 * - **Claim before dispatch.** When a plan's schedule dispatches a task (plan-schedule.ts
 *   `dispatchTask`), the Brain first claims the task's work key (the repository's identity, the
 *   plan's tasks and the task's key: every Polly given the same plan computes it alike). Granted:
 *   the task runs here as always, with `task.workClaim.mine`. Held by another Polly: the task is
 *   `dispatched` here with `workClaim.holder` naming that Polly, and nothing runs here.
 * - **Each Brain pass** ({@link syncWorkQueue}): a held claim is renewed (every quarter lease) while
 *   its task runs, and settled with the task's final status and PR once it ends; a claim found
 *   taken over (this Polly's lease lapsed, another took it) cancels the task here, so it never
 *   opens a second PR. A followed claim that was settled settles the task here: `done` when the
 *   other Polly's task ended `ready`, `merged` or `done` (its PR is that Polly's to carry), `failed`
 *   otherwise; so this Polly's schedule, dependants and goal go on. A followed claim whose lease
 *   lapsed (the other Brain died and did not come back) is taken over: the task starts here.
 * - **Fenced steps** ({@link holdsWorkClaim}): before a push, a draft PR or marking it ready, the
 *   holder renews its claim on the store; if it no longer holds it (its lease lapsed and another
 *   Polly took the task over), the step is not done and the task is cancelled here.
 */
import { DEPENDENCY_MET_STATUSES, FINAL_TASK_STATUSES } from '../core/vocabulary.js';
import { isPollyError } from '../core/errors.js';
import type { PlanRecord, TaskRecord } from '../registry/registry-schema.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import { planTaskId } from '../registry/task-record.js';
import { WORK_CLAIM_LEASE_SECONDS, workKey, type WorkClaim } from '../../workflows/run/work-claims.js';
import type { BrainProcessDeps } from './brain-deps.js';

type Claims = NonNullable<BrainProcessDeps['claims']>;

/** The work key of `plan`'s task `key` in this repository. */
export function planTaskWorkKey(claims: Pick<Claims, 'repo'>, plan: PlanRecord, key: string): string {
  return workKey(claims.repo, plan.tasks, key);
}

const lease = (claims: Claims): number => claims.leaseSeconds ?? WORK_CLAIM_LEASE_SECONDS;

/**
 * Claim plan task `key` before it is dispatched. @returns `mine` (run it here) or the holder's
 * claim (the task is now `dispatched` here, following it). The task record is updated either way.
 * @throws PollyError `registry_corrupt` when the shared store cannot be reached (the dispatch is
 *   then reported failed by the schedule, never run unclaimed).
 */
export async function claimPlanTask(deps: BrainProcessDeps, plan: PlanRecord, key: string, now: () => Date): Promise<'mine' | WorkClaim> {
  const claims = deps.claims!;
  const id = planTaskId(plan, key);
  const wk = planTaskWorkKey(claims, plan, key);
  const r = await claims.store.claim(wk, claims.polly.id, claims.polly.label, lease(claims), plan.decidedAt ?? now().toISOString());
  await deps.store.update((draft, tx) => {
    const t = draft.tasks[id];
    if (!t) return;
    t.workClaim = { key: wk, holder: r.claim.label, mine: r.granted };
    if (r.granted) {
      tx.emit('task.claimed', { taskId: id, key: wk, generation: r.claim.generation, takeovers: r.claim.takeovers });
      return;
    }
    if (t.status === 'queued') {
      t.startedAt = now().toISOString();
      transitionTask(t, 'dispatched', { reason: `run by another Polly on the shared run store: ${r.claim.label}`, at: t.startedAt });
    }
    tx.emit('task.claimed_elsewhere', { taskId: id, key: wk, holder: r.claim.label, settled: r.claim.settledAt !== null });
  });
  return r.granted ? 'mine' : r.claim;
}

/** Per task id: when this Brain last renewed or looked at its claim (ms, this process's clock). */
export type WorkQueueMemory = Map<string, number>;

/**
 * One pass over the tasks with a work claim (see the module doc). `startHere` starts a taken-over
 * task of `plan` here (plan-schedule.ts `startPlanTask`). Faults of the shared store are logged and
 * the pass goes on; a claim it could not renew is tried again next pass, until its lease lapses.
 */
export async function syncWorkQueue(
  deps: BrainProcessDeps,
  memory: WorkQueueMemory,
  log: (l: string) => void,
  now: () => Date,
  startHere: (plan: PlanRecord, key: string) => Promise<void>,
): Promise<void> {
  const claims = deps.claims;
  if (!claims) return;
  const reg = await deps.store.read();
  const t0 = Date.now();
  for (const task of Object.values(reg.tasks)) {
    const wc = task.workClaim;
    if (!wc || wc.settled || wc.lost) continue;
    try {
      if (wc.mine) await keepOwn(deps, claims, task, memory, log, t0);
      else await follow(deps, claims, task, reg.plans[task.planId ?? ''], memory, log, now, startHere, t0);
    } catch (error) {
      log(`[polly] ${task.id}: the shared work claim could not be kept: ${isPollyError(error) ? error.message : String(error)}`);
    }
  }
}

/**
 * Whether this Polly may do `step` (a push, a draft PR, marking it ready) for `task`: true without
 * a shared store, for a task without a claim of its own, or when renewing its claim on the store
 * succeeded. False when another Polly holds it now: the task is then marked lost and its cancel
 * requested, so the step is never done. @throws PollyError `registry_corrupt` when the store cannot
 * be asked (the step waits for a later pass).
 */
export async function holdsWorkClaim(deps: BrainProcessDeps, task: TaskRecord, step: string, log: (l: string) => void): Promise<boolean> {
  const claims = deps.claims;
  const wc = task.workClaim;
  if (!claims || !wc?.mine || wc.settled) return true;
  if (wc.lost) return false;
  if (await claims.store.renew(wc.key, claims.polly.id, lease(claims))) return true;
  await markLost(deps, claims, task, `${step} was not done`, log);
  return false;
}

/** Record that another Polly took `task`'s claim over, and request its cancel here. */
async function markLost(deps: BrainProcessDeps, claims: Claims, task: TaskRecord, what: string, log: (l: string) => void): Promise<void> {
  const wc = task.workClaim!;
  const now = await claims.store.get(wc.key);
  const lost = `cancelled: this Polly's claim on the task lapsed and ${now?.label ?? 'another Polly'} took it over on the shared run store, so it runs there (one PR per task); ${what}`;
  log(`[polly] ${task.id}: ${lost}`);
  await deps.store.update((draft, tx) => {
    const t = draft.tasks[task.id];
    if (!t?.workClaim || FINAL_TASK_STATUSES.has(t.status)) return;
    t.workClaim.lost = lost;
    t.cancelRequested = true;
    tx.emit('task.claim_lost', { taskId: task.id, key: wc.key, holder: now?.label ?? null });
  });
}

async function keepOwn(deps: BrainProcessDeps, claims: Claims, task: TaskRecord, memory: WorkQueueMemory, log: (l: string) => void, t0: number): Promise<void> {
  const wc = task.workClaim!;
  if (FINAL_TASK_STATUSES.has(task.status)) {
    const detail = task.pr?.url ?? task.statusReason ?? null;
    const ok = await claims.store.settle(wc.key, claims.polly.id, task.status, detail);
    await deps.store.update((draft, tx) => {
      const t = draft.tasks[task.id];
      if (!t?.workClaim) return;
      t.workClaim.settled = true;
      tx.emit('task.claim_settled', { taskId: task.id, key: wc.key, outcome: task.status, held: ok });
    });
    if (!ok) log(`[polly] ${task.id}: ended ${task.status}, but its work claim was no longer this Polly's`);
    return;
  }
  if (t0 - (memory.get(task.id) ?? 0) < (lease(claims) * 1000) / 4) return;
  if (await claims.store.renew(wc.key, claims.polly.id, lease(claims))) {
    memory.set(task.id, t0);
    return;
  }
  await markLost(deps, claims, task, 'noticed on renewal', log);
}

async function follow(
  deps: BrainProcessDeps,
  claims: Claims,
  task: TaskRecord,
  plan: PlanRecord | undefined,
  memory: WorkQueueMemory,
  log: (l: string) => void,
  now: () => Date,
  startHere: (plan: PlanRecord, key: string) => Promise<void>,
  t0: number,
): Promise<void> {
  if (FINAL_TASK_STATUSES.has(task.status)) return;
  if (t0 - (memory.get(task.id) ?? 0) < 1000) return; // one look a second per followed task
  memory.set(task.id, t0);
  const wc = task.workClaim!;
  const claim = await claims.store.get(wc.key);
  if (claim?.settledAt) {
    const met = DEPENDENCY_MET_STATUSES.has(claim.outcome as TaskRecord['status']);
    const reason = `run by another Polly (${claim.label}): it ended ${claim.outcome}${claim.detail ? ` (${claim.detail})` : ''}`;
    await deps.store.update((draft, tx) => {
      const t = draft.tasks[task.id];
      if (!t || FINAL_TASK_STATUSES.has(t.status)) return;
      transitionTask(t, met ? 'done' : 'failed', { reason, at: now().toISOString(), finished: true });
      if (t.workClaim) t.workClaim.settled = true;
      tx.emit(met ? 'task.finished' : 'task.failed', { taskId: t.id, status: t.status, reason, elsewhere: claim.label });
    });
    log(`[polly] ${task.id}: ${reason}`);
    return;
  }
  if (!plan || (claim && Date.parse(claim.leaseUntil) > now().getTime())) return;
  // The holder's lease lapsed (by this clock; the store's decides): take the task over.
  const key = plan.tasks.find((s) => planTaskId(plan, s.key) === task.id)?.key;
  if (!key) return;
  const r = await claims.store.claim(wc.key, claims.polly.id, claims.polly.label, lease(claims), plan.decidedAt ?? now().toISOString());
  if (!r.granted) return;
  await deps.store.update((draft, tx) => {
    const t = draft.tasks[task.id];
    if (!t) return;
    t.workClaim = { key: wc.key, holder: claims.polly.label, mine: true };
    tx.emit('task.claim_taken_over', { taskId: task.id, key: wc.key, from: claim?.label ?? null, takeovers: r.claim.takeovers });
  });
  log(`[polly] ${task.id}: ${claim?.label ?? 'its holder'} stopped renewing its claim; taken over, it runs here`);
  await startHere(plan, key);
}
