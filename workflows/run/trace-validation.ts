/**
 * Trace validation: a run's journal held to the admitted workflow it ran under. The journal lines
 * the runtime writes (`run.action`, `run.order`, `run.reported`; runtime.ts) are replayed through
 * the same `applyAction` the runtime steps with (and the checker explores, model.ts `fire`), from
 * the workflow's initial state:
 * - each `run.action` must be step `seq` = previous + 1, leave the recorded `from` state, be a
 *   transition of the workflow there (with its data), reach the recorded `to` state and emit
 *   exactly the recorded effect kinds;
 * - each `run.order` must be an effect emitted by the step it names (`seq`), at most as many
 *   times as that step emitted it;
 * - each applied `run.reported` must apply a completion its effect declares (`on_ok`,
 *   `on_failure`, `on_exhausted`), and the next step must be that action;
 * - the run record's state (control state and every variable) and outcome must be the replay's; a
 *   variable the record does not hold at all was declared after the run began and counts as its
 *   initial value, as the runtime reads it (interpreter.ts `variablesAddedSince`; said on the line).
 *
 * A caller may name a `preamble`: one step taken before the journal began (a run started under an
 * earlier version of its workflow, whose first state the current workflow reaches only by that
 * step). It is applied to the initial state before the replay, is not a journal step, and the
 * verdict line says so (`why`); nothing else is excused.
 *
 * This is the field's trace-validation idea (check a running system's recorded behaviour against
 * its model) applied to every run. Pure: the caller reads the journal and the record.
 */
import type { RunJournalEntry } from './run-store.js';
import type { RunRecord } from './run-records.js';
import { mapActionData } from './data-mapping.js';
import { applyAction, initialState, isTerminal, variablesAddedSince, type RunState } from './interpreter.js';
import type { Workflow } from '../workflow-schema.js';

/** Where and why a journal left the model. */
export interface TraceDivergence {
  /** Journal seq of the offending line (0: the run record itself). */
  journalSeq: number;
  /** The run step (`run.action` seq) the line belongs to, when it names one. */
  step: number | null;
  /** The journal kind of the offending line (`run.action`, `run.order`, `run.reported`, `run.record`). */
  kind: string;
  /** In words: what the journal says and what the model allows. */
  reason: string;
}

/** The verdict on one run's trace. */
export interface TraceVerdict {
  run: string;
  workflow: string;
  conforms: boolean;
  /** `run.action` lines replayed (steps). */
  steps: number;
  /** `run.order` lines checked. */
  orders: number;
  divergence: TraceDivergence | null;
  /** One line: `conforms: RUN (WORKFLOW) — N steps, M orders` or `DIVERGES: RUN (WORKFLOW) at journal seq S: reason`. */
  line: string;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

function sortedVars(v: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, v[k]]),
  );
}

/** A step taken before a run's journal began (see the module doc): `action` with `data`, and why, in words. */
export interface TracePreamble {
  action: string;
  data: Record<string, unknown>;
  /** Said on the verdict line, e.g. `plan gate passed before this run's journal began (…)`. */
  why: string;
}

/**
 * Validate `entries` (the run's journal lines, any order, other runs' lines ignored) against `wf`.
 * @param run  the run record as stored (its input starts the replay; its state and outcome end it).
 * @param options.preamble  a step applied to the initial state before the journal's first (see the module doc).
 * @returns the verdict; never throws for a bad trace (a divergence is data).
 */
export function validateTrace(
  wf: Workflow,
  run: Pick<RunRecord, 'id' | 'workflow' | 'input' | 'state' | 'status' | 'outcome'>,
  entries: RunJournalEntry[],
  options: { preamble?: TracePreamble } = {},
): TraceVerdict {
  const lines = entries.filter((e) => e.data.run === run.id).sort((a, b) => a.seq - b.seq);
  let state: RunState;
  let steps = 0;
  let orders = 0;
  const emittedBy = new Map<number, string[]>();
  const kindOfOrder = new Map<string, string>();
  let pendingApply: { action: string; order: string; journalSeq: number } | null = null;
  const notes: string[] = options.preamble ? [options.preamble.why] : [];
  const verdict = (divergence: TraceDivergence | null): TraceVerdict => ({
    run: run.id,
    workflow: run.workflow,
    conforms: divergence === null,
    steps,
    orders,
    divergence,
    line: divergence
      ? `DIVERGES: ${run.id} (${run.workflow}) at journal seq ${divergence.journalSeq}${divergence.step !== null ? `, step ${divergence.step}` : ''}: ${divergence.reason}`
      : `conforms: ${run.id} (${run.workflow}) — ${steps} steps, ${orders} orders${notes.map((n) => `; ${n}`).join('')}`,
  });
  try {
    state = initialState(wf, run.input);
  } catch (error) {
    return verdict({ journalSeq: 0, step: null, kind: 'run.record', reason: `the run's input does not start workflow ${wf.name}: ${(error as Error).message}` });
  }
  if (options.preamble) {
    // The action's data as the runtime applies it (payload fields kept aside, as on a signal).
    const decl = wf.actions.find((a) => a.name === options.preamble!.action);
    const pre = applyAction(wf, state, options.preamble.action, decl ? mapActionData(decl, options.preamble.data).data : options.preamble.data);
    if ('rejected' in pre)
      return verdict({
        journalSeq: 0,
        step: null,
        kind: 'run.record',
        reason: `${options.preamble.why}, but ${options.preamble.action} is not a transition of ${wf.name} from "${state.state}": ${pre.rejected}`,
      });
    state = pre.state;
  }
  for (const e of lines) {
    const d = e.data;
    if (e.kind === 'run.action') {
      const seq = Number(d.seq);
      const action = String(d.action);
      const at = (reason: string) => verdict({ journalSeq: e.seq, step: seq, kind: e.kind, reason });
      if (seq !== steps + 1) return at(`step ${seq} follows step ${steps}; steps are numbered 1, 2, 3, …`);
      if (d.from !== state.state) return at(`${action} is recorded from state "${String(d.from)}", but the run was in "${state.state}"`);
      if (pendingApply && pendingApply.action !== action) return at(`the report of order ${pendingApply.order} applied ${pendingApply.action}, but the next step is ${action}`);
      pendingApply = null;
      const step = applyAction(wf, state, action, (d.data as Record<string, unknown> | undefined) ?? {});
      if ('rejected' in step) return at(`${action} is not a transition of ${wf.name} in state "${state.state}" (${JSON.stringify(sortedVars(state.vars))}): ${step.rejected}`);
      if (step.state.state !== d.to) return at(`${action} from "${state.state}" goes to "${step.state.state}" in the model, but the journal says "${String(d.to)}"`);
      const emitted = step.emitted.map((x) => x.kind);
      if (!same(emitted, d.emitted ?? []))
        return at(`${action} emits [${emitted.join(', ')}] in the model, but the journal says [${((d.emitted as string[] | undefined) ?? []).join(', ')}]`);
      state = step.state;
      steps = seq;
      emittedBy.set(seq, [...emitted]);
    } else if (e.kind === 'run.order') {
      const kind = String(d.kind);
      const seq = d.seq === null || d.seq === undefined ? null : Number(d.seq);
      kindOfOrder.set(String(d.order), kind);
      if (seq === null) continue; // an order written before orders named their step: nothing to hold it to
      const left = emittedBy.get(seq);
      const i = left?.indexOf(kind) ?? -1;
      if (!left || i < 0)
        return verdict({
          journalSeq: e.seq,
          step: seq,
          kind: e.kind,
          reason: `order ${String(d.order)} (${kind}) is not an effect step ${seq} emitted${left ? ` (it emitted [${left.join(', ')}])` : ''}`,
        });
      left.splice(i, 1);
      orders += 1;
    } else if (e.kind === 'run.reported' && typeof d.applied === 'string') {
      const kind = kindOfOrder.get(String(d.order)) ?? String(d.kind);
      const effect = wf.effects.find((x) => x.kind === kind);
      const allowed = effect ? [effect.on_ok, effect.on_failure, effect.on_exhausted].filter((x): x is string => x !== null) : [];
      if (!allowed.includes(d.applied)) {
        return verdict({
          journalSeq: e.seq,
          step: null,
          kind: e.kind,
          reason: `the report of order ${String(d.order)} (${kind}) applied ${d.applied}, which is not a completion of ${kind} (${allowed.join(', ') || 'none declared'})`,
        });
      }
      pendingApply = { action: d.applied, order: String(d.order), journalSeq: e.seq };
    }
  }
  if (pendingApply)
    return verdict({
      journalSeq: pendingApply.journalSeq,
      step: null,
      kind: 'run.reported',
      reason: `the report of order ${pendingApply.order} applied ${pendingApply.action}, but no step followed it`,
    });
  const stored = run.state as unknown as RunState;
  const added = variablesAddedSince(wf, stored);
  const recorded: RunState = { state: stored.state, vars: { ...Object.fromEntries(added.map((v) => [v.name, v.initial])), ...(stored.vars ?? {}) } };
  if (added.length > 0) notes.push(`declared after this run began, read as initial: ${added.map((v) => `${v.name} = ${JSON.stringify(v.initial)}`).join(', ')}`);
  if (recorded.state !== state.state || !same(sortedVars(recorded.vars ?? {}), sortedVars(state.vars))) {
    return verdict({
      journalSeq: 0,
      step: steps,
      kind: 'run.record',
      reason: `the run record holds ${recorded.state} ${JSON.stringify(sortedVars(stored.vars ?? {}))}${added.length > 0 ? ` (without ${added.map((v) => v.name).join(', ')}: read as initial)` : ''}, but its journal replays to ${state.state} ${JSON.stringify(sortedVars(state.vars))}`,
    });
  }
  if (run.status === 'finished' && (!isTerminal(wf, state) || (run.outcome ?? state.state) !== state.state)) {
    return verdict({
      journalSeq: 0,
      step: steps,
      kind: 'run.record',
      reason: `the run is recorded finished in ${run.outcome ?? '(none)'}, but its journal replays to ${state.state}`,
    });
  }
  return verdict(null);
}
