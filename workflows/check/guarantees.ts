/**
 * Polly's built-in guarantees, added to every Polly plan workflow before admission.
 *
 * They are ordinary invariants over the workflow's events, found through the **tools** effect
 * kinds are bound to (so a plan compiler may name kinds per task, e.g. `t1_mark_ready`, as long
 * as they are bound to tool `mark_ready`) and through the `polly:` bindings (which variables
 * hold the vendors, which actions mean tests green / clean review, which actions start and end
 * a Brain turn). Tools with a meaning here:
 *
 * | tool              | meaning                                  |
 * |-------------------|------------------------------------------|
 * | `merge`           | merge a PR — never allowed               |
 * | `force_push`      | force-push — never allowed               |
 * | `dispatch`        | start a worker (counts toward the turn)  |
 * | `dispatch_review` | start a reviewer (counts toward the turn)|
 * | `dispatch_task`   | start a plan task from the plan's schedule (counts toward the turn) |
 * | `open_draft_pr`   | open a draft PR: only after tests green   |
 * | `open_pr`         | open a non-draft PR: only after tests green and a clean review |
 * | `mark_ready`      | mark a PR ready: only after tests green and a clean review |
 *
 * Invariant names (per task they are prefixed `TASK/` when the workflow binds several tasks):
 * `never-merge`, `never-force-push`, `draft-pr-only-after-tests-green`,
 * `ready-only-after-tests-green-and-clean-review`, `reviewer-vendor-differs`,
 * `at-most-N-dispatches-per-turn`, `every-path-terminates`.
 */
import { ExpressionInFieldError } from '../expression.js';
import { compileModel } from './model.js';
import { workflowError } from '../workflow-format.js';
import type { EventRef, InvariantDecl, PollyBindings, Workflow } from '../workflow-schema.js';

/** The part of Polly's policy the guarantees read (config `policies.spawn_bounds`). */
export interface GuaranteePolicy {
  /** At most this many dispatches (tools `dispatch`, `dispatch_review`, `dispatch_task`) per Brain turn (default 5). */
  maxDispatchesPerTurn: number;
}

/** The default guarantee policy: 5 dispatches per turn. `brain/config/config-schema.ts` composes it into config `policies.spawn_bounds`. */
export const DEFAULT_GUARANTEE_POLICY: Readonly<GuaranteePolicy> = Object.freeze({ maxDispatchesPerTurn: 5 });

export const DISPATCH_TOOLS = ['dispatch', 'dispatch_review', 'dispatch_task'];

/** Default bindings for a workflow without a `polly:` block: one task with the conventional names. */
export function defaultBindings(): PollyBindings {
  return {
    turn: null,
    tasks: [
      {
        name: 'task',
        implementer_vendor: 'implementer_vendor',
        reviewer_vendor: 'reviewer_vendor',
        tests_green: ['TESTS_GREEN'],
        review_clean: ['REVIEW_CLEAN'],
        invalidated_by: [],
        effects: [],
      },
    ],
  };
}

/**
 * Return a copy of `wf` with Polly's guarantees as invariants (replacing any of the workflow's
 * own invariants with the same names). The result is compiled, so a binding that does not type
 * (e.g. vendor variables with different value lists) fails here.
 *
 * @throws PollyError `workflow_invalid` when the bindings do not fit the workflow.
 */
export function withPollyGuarantees(wf: Workflow, policy: GuaranteePolicy): Workflow {
  const bindings = wf.polly ?? defaultBindings();
  const multi = bindings.tasks.length > 1;
  const kindsWithTools = (kinds: string[], tools: string[]): string[] =>
    wf.effects.filter((e) => tools.includes(e.tool) && (kinds.length === 0 || kinds.includes(e.kind))).map((e) => e.kind);
  const ref = (names: string[], when: string | null = null): EventRef => ({ names, tools: [], when });
  const added: InvariantDecl[] = [
    {
      name: 'never-merge',
      pattern: 'never',
      event: { names: wf.effects.filter((e) => e.kind === 'merge').map((e) => e.kind), tools: ['merge'], when: null },
      scope: { kind: 'global' },
    },
    {
      name: 'never-force-push',
      pattern: 'never',
      event: { names: wf.effects.filter((e) => e.kind === 'force_push').map((e) => e.kind), tools: ['force_push'], when: null },
      scope: { kind: 'global' },
    },
  ];
  const owned = new Set<string>();
  for (const task of bindings.tasks) {
    const prefix = multi ? `${task.name}/` : '';
    const drafts = kindsWithTools(task.effects, ['open_draft_pr']);
    const ready = kindsWithTools(task.effects, ['open_pr', 'mark_ready']);
    const reviews = kindsWithTools(task.effects, ['dispatch_review']);
    for (const k of [...drafts, ...ready, ...reviews]) owned.add(k);
    const reset = task.invalidated_by.length ? ref(task.invalidated_by) : null;
    if (drafts.length) {
      added.push({
        name: `${prefix}draft-pr-only-after-tests-green`,
        pattern: 'requires_before',
        event: ref(drafts),
        requires: [ref(task.tests_green)],
        reset_by: reset,
        scope: { kind: 'global' },
      });
    }
    if (ready.length) {
      added.push({
        name: `${prefix}ready-only-after-tests-green-and-clean-review`,
        pattern: 'requires_before',
        event: ref(ready),
        requires: [ref(task.tests_green), ref(task.review_clean)],
        reset_by: reset,
        scope: { kind: 'global' },
      });
    }
    if (reviews.length) {
      const known = (v: string): boolean => wf.variables.some((x) => x.name === v);
      // Without both vendor variables the difference cannot be shown: every review dispatch is refused.
      const when = known(task.implementer_vendor) && known(task.reviewer_vendor) ? `${task.reviewer_vendor} == ${task.implementer_vendor}` : null;
      added.push({ name: `${prefix}reviewer-vendor-differs`, pattern: 'never', event: ref(reviews, when), scope: { kind: 'global' } });
    }
  }
  if (multi) {
    // A guarded effect that no task owns could escape the per-task rules: refuse it outright.
    const unowned = kindsWithTools([], ['open_draft_pr', 'open_pr', 'mark_ready', 'dispatch_review']).filter((k) => !owned.has(k));
    if (unowned.length) added.push({ name: 'guarded-effects-belong-to-a-task', pattern: 'never', event: ref(unowned), scope: { kind: 'global' } });
  }
  const n = policy.maxDispatchesPerTurn;
  added.push({
    name: `at-most-${n}-dispatches-per-turn`,
    pattern: 'at_most',
    event: { names: [], tools: DISPATCH_TOOLS, when: null },
    count: n,
    scope: bindings.turn ? { kind: 'between', between: ref(bindings.turn.start), until: ref(bindings.turn.end), initially_open: true } : { kind: 'global' },
  });
  added.push({ name: 'every-path-terminates', pattern: 'terminates', scope: { kind: 'global' } });

  const names = new Set(added.map((x) => x.name));
  const out: Workflow = { ...wf, invariants: [...wf.invariants.filter((x) => !names.has(x.name)), ...added], polly: bindings };
  try {
    compileModel(out);
  } catch (e) {
    if (e instanceof ExpressionInFieldError)
      throw workflowError(
        { file: wf.file, positions: wf.positions },
        'polly',
        `the Polly guarantees do not fit this workflow's bindings: ${e.message} (in ${JSON.stringify(e.source)})`,
      );
    throw e;
  }
  return out;
}

/** The guarantees' names for a policy, in the order they are added (single-task form). */
export function guaranteeNames(policy: GuaranteePolicy): string[] {
  return [
    'never-merge',
    'never-force-push',
    'draft-pr-only-after-tests-green',
    'ready-only-after-tests-green-and-clean-review',
    'reviewer-vendor-differs',
    `at-most-${policy.maxDispatchesPerTurn}-dispatches-per-turn`,
    'every-path-terminates',
  ];
}
