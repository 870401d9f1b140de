/**
 * Work orders: what the runtime hands an agent for one emitted effect, and the instructions (plain
 * sentences) that tell the agent — an MCP host's model or the Brain — what to do next.
 */
import type { RunRecord, WorkOrderRecord } from './run-records.js';
import type { RunState } from './interpreter.js';
import { orderIdFor } from './run-identity.js';
import type { ActionDecl, Domain, EffectDecl, Workflow } from '../workflow-schema.js';

/** A new order for `effect`, emitted by the run's step `seq` as the `ordinal`-th effect of that step. */
export function createOrder(run: RunRecord, effect: EffectDecl, seq: number, ordinal: number): WorkOrderRecord {
  const st = run.state as unknown as RunState;
  return {
    id: orderIdFor(run.id, seq, effect.kind, ordinal),
    kind: effect.kind,
    tool: effect.tool,
    args: { input: { ...run.input }, vars: { ...st.vars } },
    ordinal,
    attempt: 1,
    leaseExpiresAt: null,
    leasedBy: null,
    seq,
    maxAttempts: effect.retry.max_attempts,
    availableAt: null,
  };
}

function domainText(d: Domain): string {
  if (d.type === 'enum') return d.values.join('|');
  if (d.type === 'bool') return 'true|false';
  return `int ${d.min}..${d.max}`;
}

/** `ACTION` or `ACTION with data {f: domain, …}`. */
export function actionText(wf: Workflow, name: string | null): string {
  if (name === null) return '(none)';
  const a: ActionDecl | undefined = wf.actions.find((x) => x.name === name);
  if (!a || a.data.length === 0) return name;
  return `${name} with data {${a.data.map((f) => `${f.name}: ${domainText(f)}`).join(', ')}}`;
}

function effectOf(wf: Workflow, order: WorkOrderRecord): EffectDecl | undefined {
  return wf.effects.find((e) => e.kind === order.kind);
}

/** The sentence handing out `order`: the tool to run, and how to report each outcome. */
export function orderInstruction(wf: Workflow, run: RunRecord, order: WorkOrderRecord, now: Date): string {
  const effect = effectOf(wf, order);
  const max = order.maxAttempts ?? effect?.retry.max_attempts ?? 1;
  const okData = effect?.on_ok ? (wf.actions.find((a) => a.name === effect.on_ok)?.data ?? []) : [];
  const wait = order.availableAt && new Date(order.availableAt) > now ? ` It is a retry: run it at or after ${order.availableAt}.` : '';
  const okPart = okData.length
    ? `outcome "ok" with data {${okData.map((f) => `${f.name}: ${domainText(f)}`).join(', ')}} (applies ${effect?.on_ok})`
    : `outcome "ok" (applies ${effect?.on_ok ?? '(none)'})`;
  return [
    `Work order ${order.id} (${order.kind}, attempt ${order.attempt} of ${max}) for run ${run.id}: run your tool "${order.tool}" with ${JSON.stringify(order.args)}, under your own permissions.${wait}`,
    `Then call workflow_report with run_id "${run.id}", order_id "${order.id}" and ${okPart};`,
    `or outcome "failure" with permanent: true when the failure is a result (a denial, a refusal: applies ${effect?.on_failure ?? '(none)'} at once),`,
    `or outcome "failure" without permanent for a transient fault (retried while attempts remain, then ${effect?.on_exhausted ?? effect?.on_failure ?? '(none)'}).`,
    'Do not decide what happens next: the workflow does. Report exactly once.',
  ].join(' ');
}

/** The sentence for a run with no open order: finished, or waiting for a signal. */
export function idleInstruction(wf: Workflow, run: RunRecord, enabled: Array<{ action: string }>): string {
  if (run.status === 'finished') {
    return `Run ${run.id} (${run.workflow}, key ${run.key}) has finished in state "${run.outcome ?? (run.state as unknown as RunState).state}". Do not start another run for this key: starting again attaches to this finished run. Tell the user the outcome.`;
  }
  const names = [...new Set(enabled.map((e) => e.action))];
  if (names.length === 0) return `Run ${run.id} has no open work order and no action applies now; check workflow_state later.`;
  return `Run ${run.id} has no open work order; it waits in state "${(run.state as unknown as RunState).state}" for a signal. Call workflow_signal with one of: ${names.map((n) => actionText(wf, n)).join('; ')}.`;
}
