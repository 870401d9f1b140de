/**
 * A synthetic plan-shaped workflow for the checker benchmark and the scaling tests: N parallel
 * tasks with R bounded retries each, built as data through {@link validateWorkflow}.
 */
import { validateWorkflow } from '../workflows/workflow-format.js';
import type { Workflow } from '../workflows/workflow-schema.js';

/** Path constraints on a synthetic plan (issue 29): which task pairs are ordered, and whether their overlap invariants are checked. */
export interface SyntheticPaths {
  /** 1-based task pairs `[i, j]`, i < j: task j starts only once task i is done or failed (a dependency). */
  ordered: Array<[number, number]>;
  /** Add, per ordered pair, the plan compiler's invariant: never a dispatch of either while both are active. */
  overlapInvariants: boolean;
}

/**
 * A plan-shaped workflow built as data (the way a plan compiler builds one): per task an enum
 * phase variable, a retry counter and its own actions and effects; a FINISH step once every task
 * is done or failed. Invariants: per task "mark ready only after green tests" and a global bound
 * on dispatches. With `paths`: the ordered pairs' dependencies, and their overlap invariants
 * (the shape brain/plan/plan-compiler.ts `pathOverlapInvariant` gives a plan's schedule).
 */
export function syntheticPlan(tasks: number, retries: number, paths?: SyntheticPaths): Workflow {
  const variables: Record<string, unknown> = {};
  const actions: Record<string, unknown> = { FINISH: {} };
  const effects: Record<string, unknown> = {};
  const transitions: unknown[] = [];
  const invariants: unknown[] = [];
  for (let i = 1; i <= tasks; i++) {
    const p = `t${i}`;
    const P = `T${i}`;
    variables[p] = { type: 'enum', values: ['todo', 'impl', 'test', 'review', 'done', 'failed'], initial: 'todo' };
    variables[`${p}_tries`] = { type: 'int', min: 0, max: retries, initial: 0 };
    for (const a of ['START', 'WORKER_DONE', 'GREEN', 'RED', 'CLEAN', 'BLOCKING']) actions[`${P}_${a}`] = {};
    effects[`${p}_dispatch`] = { tool: 'dispatch', on_ok: `${P}_WORKER_DONE`, on_failure: `${P}_RED` };
    effects[`${p}_acceptance`] = { tool: 'run_acceptance', on_ok: `${P}_GREEN`, on_failure: `${P}_RED` };
    effects[`${p}_review`] = { tool: 'dispatch_review', on_ok: `${P}_CLEAN`, on_failure: `${P}_BLOCKING` };
    effects[`${p}_ready`] = { tool: 'mark_ready', on_ok: `${P}_START`, on_failure: `${P}_START` };
    const after = (paths?.ordered ?? []).filter(([, j]) => j === i).map(([k]) => ` && t${k} in ['done', 'failed']`);
    transitions.push(
      { action: `${P}_START`, from: 'running', when: `${p} == 'todo'${after.join('')}`, set: { [p]: 'impl' }, emit: [`${p}_dispatch`] },
      { action: `${P}_WORKER_DONE`, from: 'running', when: `${p} == 'impl'`, set: { [p]: 'test' }, emit: [`${p}_acceptance`] },
      { action: `${P}_GREEN`, from: 'running', when: `${p} == 'test'`, set: { [p]: 'review' }, emit: [`${p}_review`] },
      { action: `${P}_RED`, from: 'running', when: `${p} == 'test' && ${p}_tries < ${retries}`, set: { [p]: 'impl', [`${p}_tries`]: `${p}_tries + 1` }, emit: [`${p}_dispatch`] },
      { action: `${P}_RED`, from: 'running', when: `${p} == 'test'`, set: { [p]: 'failed', [`${p}_tries`]: 0 } },
      { action: `${P}_CLEAN`, from: 'running', when: `${p} == 'review'`, set: { [p]: 'done', [`${p}_tries`]: 0 }, emit: [`${p}_ready`] },
      {
        action: `${P}_BLOCKING`,
        from: 'running',
        when: `${p} == 'review' && ${p}_tries < ${retries}`,
        set: { [p]: 'impl', [`${p}_tries`]: `${p}_tries + 1` },
        emit: [`${p}_dispatch`],
      },
      { action: `${P}_BLOCKING`, from: 'running', when: `${p} == 'review'`, set: { [p]: 'failed', [`${p}_tries`]: 0 } },
    );
    invariants.push({ name: `${p}-ready-after-green`, requires_before: { event: `${p}_ready`, requires: [`${P}_GREEN`], reset_by: [`${P}_RED`, `${P}_BLOCKING`] } });
  }
  if (paths?.overlapInvariants) {
    const active = "in ['impl', 'test', 'review']";
    for (const [i, j] of paths.ordered) {
      invariants.push({ name: `overlapping-paths-in-order-t${i}-t${j}`, never: { names: [`t${i}_dispatch`, `t${j}_dispatch`], when: `t${i} ${active} && t${j} ${active}` } });
    }
  }
  const allFinal = Array.from({ length: tasks }, (_, k) => `t${k + 1} in ['done', 'failed']`).join(' && ');
  transitions.push({ action: 'FINISH', from: 'running', to: 'finished', when: allFinal });
  invariants.push({ name: 'dispatch-bound', at_most: { event: { tool: ['dispatch', 'dispatch_review'] }, count: tasks * (2 * retries + 2) } });
  invariants.push({ name: 'every-path-terminates', terminates: true });
  const raw = {
    name: `synthetic-plan-${tasks}x${retries}${paths ? `-paths${paths.overlapInvariants ? '' : '-unchecked'}` : ''}`,
    states: ['running', 'finished'],
    initial: 'running',
    terminal: ['finished'],
    variables,
    actions,
    effects,
    transitions,
    invariants,
  };
  return validateWorkflow(raw, { file: `synthetic:${tasks}x${retries}` });
}
