import { describe, expect, it } from 'vitest';
import { checkWorkflow } from '../../../workflows/check/checker.js';
import { parseWorkflow } from '../../../workflows/load-workflow.js';
import { toPromela } from '../../../workflows/check/promela.js';
import { spinVerify } from '../../../workflows/check/spin.js';
import { syntheticPlan } from '../../../scripts/synthetic-plan.js';
import { TWINS, loadForCheck } from '../../helpers/workflows-twins.js';
import { hasSystemPackages } from '../../helpers/system-packages.js';

// The independent cross-check needs Debian's spin and a C compiler: skipped and listed without them,
// a failure under CI=true (test/helpers/system-packages.ts; .ci/run installs both).
const SPIN = hasSystemPackages(['spin', 'gcc'], import.meta.url);

/** Fast compile: the models are small, and cc -O2 costs more than the search here. */
const FAST = { ccFlags: ['-O0'], maxDepth: 100_000, hashBits: 18 };

describe.skipIf(!SPIN)('Promela export: spin reaches the same verdict as the checker', () => {
  const cases = ['workflows/customer-brief', 'workflows/polly-task', ...TWINS.map((t) => `test/fixtures/${t.twin}`)];
  for (const path of cases) {
    it(`same verdict for ${path}`, () => {
      const wf = loadForCheck(path);
      const ours = checkWorkflow(wf);
      const spin = spinVerify(wf, FAST);
      expect(spin.admitted, `spin output:\n${spin.pan.output}`).toBe(ours.admitted);
      expect(ours.admitted).toBe(path.startsWith('workflows/'));
    });
  }

  it('spin stores as many states as the checker sees on a plan-shaped model (same product)', () => {
    const wf = syntheticPlan(3, 1);
    const ours = checkWorkflow(wf);
    const spin = spinVerify(wf, { ...FAST, liveness: false });
    expect(spin.admitted).toBe(true);
    // pan stores two more states per terminal state: after `wf_done = 1`, and after the process ends.
    expect(spin.pan.statesStored).toBe(ours.statesSeen + 2 * ours.terminalStates);
  });

  it('spin also refuses a deadlock and a domain overflow the checker refuses', () => {
    const deadlock = parseWorkflow(
      'name: d\nstates: [a, b, end]\ninitial: a\nterminal: [end]\nactions: {GO: {}, STOP: {}}\ntransitions:\n  - {action: GO, from: a, to: b}\n  - {action: STOP, from: a, to: end}\n',
      'd.yaml',
    );
    expect(checkWorkflow(deadlock).admitted).toBe(false);
    expect(spinVerify(deadlock, FAST).admitted).toBe(false);
    const overflow = parseWorkflow(
      'name: o\nstates: [a, end]\ninitial: a\nterminal: [end]\nvariables: {n: {type: int, min: 0, max: 1, initial: 0}}\nactions: {GO: {}, STOP: {}}\ntransitions:\n  - {action: GO, from: a, set: {n: n + 1}}\n  - {action: STOP, from: a, to: end}\n',
      'o.yaml',
    );
    expect(checkWorkflow(overflow).admitted).toBe(false);
    expect(spinVerify(overflow, FAST).admitted).toBe(false);
  });
});

describe('Promela export', () => {
  it('exports guards with enum values as indexes and data as constants', () => {
    const text = toPromela(loadForCheck('workflows/polly-task'));
    expect(text).toMatch(/ltl terminates \{ <> wf_done \}/);
    // PR_OPENED {reviewer: codex} (index 1 in its own enum, 2 in the variable's): guard compares against 2
    expect(text).toMatch(/\(2 != v_implementer_vendor\)/);
  });
});
