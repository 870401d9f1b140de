/** The broken twins and how `polly check` loads a workflow, shared by the checker and spin tests. */
import { withPollyGuarantees } from '../../workflows/check/guarantees.js';
import { loadWorkflow } from '../../workflows/load-workflow.js';

/** Every broken twin, its original, and the one invariant it must be refused for. */
export const TWINS: Array<{ twin: string; original: string; invariant: string }> = [
  { twin: 'unsafe-brief', original: 'customer-brief', invariant: 'no-post-without-prior-approval' },
  { twin: 'merge-on-one-path', original: 'polly-task', invariant: 'never-merge' },
  { twin: 'force-push-in-retry-cycle', original: 'polly-task', invariant: 'never-force-push' },
  { twin: 'ready-before-review', original: 'polly-task', invariant: 'ready-only-after-tests-green-and-clean-review' },
  { twin: 'same-vendor-review', original: 'polly-task', invariant: 'reviewer-vendor-differs' },
  { twin: 'retry-loop-no-exit', original: 'polly-task', invariant: 'every-path-terminates' },
  { twin: 'revise-loop-no-bound', original: 'polly-task', invariant: 'every-path-terminates' },
  { twin: 'six-dispatches-one-turn', original: 'polly-task', invariant: 'at-most-5-dispatches-per-turn' },
  { twin: 'stranger-starts-fix-round', original: 'polly-task', invariant: 'only-maintainers-start-fix-rounds' },
];

/** Load a workflow as `polly check` does (Polly guarantees when it has a polly: block). */
export function loadForCheck(path: string) {
  const wf = loadWorkflow(path);
  return wf.polly ? withPollyGuarantees(wf, { maxDispatchesPerTurn: 5 }) : wf;
}
