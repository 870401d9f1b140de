/**
 * Upgrade safety for the plan gate in the schedule workflow. Since commit 634d239 a plan's compiled
 * schedule (brain/plan/plan-compiler.ts `compileScheduleWorkflow`) starts in state `gate` and its
 * first step is APPROVED; before it, the schedule started in `idle` and the approval lived only in
 * the registry (`plan.gate`, `decidedAt`, `decidedBy`). A schedule run started by such a Polly and
 * taken over by today's Brain has a journal that begins with TURN_START from `idle`: replayed from
 * today's initial state it diverges at step 1, and the runtime cannot insert a step before step 1.
 *
 * The gate was passed all the same, only before the journal began. {@link preGateApproval} proves
 * that from the records alone: the plan is approved, the run's first step was recorded from
 * `idle` (today's runtime never starts a schedule run there: only the old workflow did) and the
 * approval is no later than that step (or, for a run with no step yet, than the run's start).
 * Trace validation (brain/process/trace-check.ts, `validateEndedRun`) then replays APPROVED with
 * the plan's recorded `by` and `at` as a preamble before the journal, and says so on its verdict
 * line; nothing else is excused, and any other run (a plan approved after its run's first step, a
 * plan not approved) diverges as before. The Brain records the fact once per plan, when it first
 * meets such a run ({@link recordPreGateApproval}: `plan.gatePassedBeforeUpgrade` and the journal
 * event `plan.gate_passed_before_upgrade`).
 */
import type { RunRecord } from '../../workflows/run/run-records.js';
import type { RunJournalEntry } from '../../workflows/run/run-store.js';
import type { TracePreamble } from '../../workflows/run/trace-validation.js';
import { planScheduleWorkflowName } from '../plan/plan-compiler.js';
import type { PlanRecord, Registry } from '../registry/registry-schema.js';
import type { RegistryStore } from '../registry/registry-store.js';

/** The approval a schedule run's journal lacks because it began before the gate was a step. */
export interface PreGateApproval {
  /** The gate action today's schedule workflow takes the approval as. */
  action: 'APPROVED';
  /** Its payload as today's Brain would have signalled it: who approved and when (ISO 8601). */
  data: { by: string; at: string };
  /** Journal seq of the run's first step (`run.action` with seq 1), or null when it has taken none yet. */
  firstStepSeq: number | null;
}

/** The state the schedule workflow started in before the plan gate was its first state. */
const PRE_GATE_INITIAL = 'idle';

/**
 * Whether `run` is a schedule run of `plan` that began before the plan gate was a step of the
 * schedule workflow, with the plan approved before it began (see the module doc). Pure.
 * @param plan     the plan record (undefined: not a plan's run → null).
 * @param run      the run record as stored.
 * @param journal  run-store journal lines (other runs' lines are ignored).
 * @returns the approval to replay before the journal, or null when the run is not excused.
 */
export function preGateApproval(plan: PlanRecord | undefined, run: Pick<RunRecord, 'id' | 'workflow' | 'state' | 'createdAt'>, journal: RunJournalEntry[]): PreGateApproval | null {
  if (plan?.gate !== 'approved' || !plan.decidedAt || run.workflow !== planScheduleWorkflowName(plan.id)) return null;
  const approvedAt = Date.parse(plan.decidedAt);
  if (Number.isNaN(approvedAt)) return null;
  const first = journal.find((e) => e.kind === 'run.action' && e.data.run === run.id && Number(e.data.seq) === 1);
  if (first) {
    if (first.data.from !== PRE_GATE_INITIAL || first.data.action === 'APPROVED' || approvedAt > Date.parse(first.at)) return null;
  } else if ((run.state as { state?: unknown }).state !== PRE_GATE_INITIAL || approvedAt > Date.parse(run.createdAt)) {
    return null;
  }
  return { action: 'APPROVED', data: { by: plan.decidedBy ?? 'unknown', at: plan.decidedAt }, firstStepSeq: first ? first.seq : null };
}

/** The trace-validation preamble for a run {@link preGateApproval} excuses, with the words of its verdict line. */
export function preGatePreamble(approval: PreGateApproval): TracePreamble {
  return { action: approval.action, data: approval.data, why: `plan gate passed before this run's journal began (approved by ${approval.data.by} at ${approval.data.at})` };
}

/**
 * The preamble (or undefined) for holding `run` to its workflow: a plan's schedule run that
 * {@link preGateApproval} excuses. For any other run, undefined. Pure.
 */
export function schedulePreamble(
  reg: Pick<Registry, 'plans'>,
  run: Pick<RunRecord, 'id' | 'workflow' | 'input' | 'state' | 'createdAt'>,
  journal: RunJournalEntry[],
): TracePreamble | undefined {
  const planId = typeof run.input.plan === 'string' ? run.input.plan : null;
  const approval = planId ? preGateApproval(reg.plans[planId], run, journal) : null;
  return approval ? preGatePreamble(approval) : undefined;
}

/**
 * Record once that `plan`'s schedule run `run` passed the gate before its journal began: sets
 * `plan.gatePassedBeforeUpgrade` and journals `plan.gate_passed_before_upgrade`
 * {planId, run, by, decidedAt, firstStepSeq}. Does nothing when the run is not excused or the plan
 * already says so.
 * @returns whether it recorded.
 * @throws `lock_timeout`, `registry_corrupt` from the store.
 */
export async function recordPreGateApproval(
  store: RegistryStore,
  plan: PlanRecord,
  run: Pick<RunRecord, 'id' | 'workflow' | 'state' | 'createdAt'>,
  journal: RunJournalEntry[],
  now: () => Date,
): Promise<boolean> {
  const approval = preGateApproval(plan, run, journal);
  if (!approval) return false;
  return store.update((draft, tx) => {
    const p = draft.plans[plan.id];
    if (!p || p.gatePassedBeforeUpgrade) return false;
    p.gatePassedBeforeUpgrade = { run: run.id, by: approval.data.by, decidedAt: approval.data.at, firstStepSeq: approval.firstStepSeq, recordedAt: now().toISOString() };
    tx.emit('plan.gate_passed_before_upgrade', { planId: plan.id, run: run.id, by: approval.data.by, decidedAt: approval.data.at, firstStepSeq: approval.firstStepSeq });
    return true;
  });
}
