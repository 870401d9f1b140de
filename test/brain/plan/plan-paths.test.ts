// The checker knows declared paths (issue 29 item 2): two implement tasks whose paths may overlap
// may not be dispatched or run at the same time unless a dependency orders them. A plan that lets
// them run together is refused with the shortest schedule that does and a detail naming the two
// tasks and a shared path; ordered (directly or through another task) it is admitted, and the
// schedule the Brain runs (plan-library) carries the same invariant. Undeclared plans (item 4)
// are untouched and the gate says the tasks are unbounded. spin agrees on both verdicts.
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { formatPlan } from '../../../brain/commands/plan.js';
import { admitPlan, compileScheduleWorkflow } from '../../../brain/plan/plan-compiler.js';
import { formatViolation } from '../../../brain/plan/plan-gate.js';
import { validatePlan, type PlanInput } from '../../../brain/plan/plan-schema.js';
import { withPollyGuarantees } from '../../../workflows/check/guarantees.js';
import { spinVerify } from '../../../workflows/check/spin.js';
import { hasSystemPackages } from '../../helpers/system-packages.js';

// Spin's cross-check: skipped and listed without spin or gcc, a failure under CI=true.
const SPIN = hasSystemPackages(['spin', 'gcc'], import.meta.url);

const task = (key: string, over: Partial<PlanInput['tasks'][number]> = {}) => ({
  key,
  title: `task ${key}`,
  purpose: 'implement' as const,
  worker: 'claude-code' as const,
  reviewer: 'codex' as const,
  prompt: 'do it',
  acceptance: { commands: ['npm test'], criteria: [] },
  ...over,
});

describe('declared paths in the checker', () => {
  const parallel = { tasks: [task('api', { paths: ['src/api/**'] }), task('users', { paths: ['src/api/users.ts', 'test/users.test.ts'] }), task('ui', { paths: ['src/ui/**'] })] };

  it('refuses two parallel tasks with overlapping paths: the counterexample dispatches both, the detail names them and a shared path', () => {
    const verdict = admitPlan('p1', validatePlan(parallel, 'test'), DEFAULT_CONFIG);
    expect(verdict.admitted).toBe(false);
    // Only the overlapping pair; ui is disjoint from both.
    expect(verdict.violations.map((v) => v.invariant)).toEqual(['schedule/overlapping-paths-in-order/api+users']);
    const v = verdict.violations[0]!;
    expect(v.trace.map((s) => s.action)).toEqual(['APPROVED', 'TURN_START', 'DISPATCH_t0', 'DISPATCH_t1']);
    expect(v.detail).toBe(
      'tasks api and users may both change src/api/users.ts — api: src/api/**; users: src/api/users.ts — and can run at the same time. Order them (depends_on: [api] on users) or give them disjoint paths.',
    );
    expect(formatViolation(v)).toContain('schedule/overlapping-paths-in-order/api+users (never): tasks api and users may both change src/api/users.ts');
  });

  it('admits the same plan once a dependency orders them, directly or through another task; a batch holding both is refused', () => {
    const ordered = { tasks: [parallel.tasks[0]!, { ...parallel.tasks[1]!, depends_on: ['api'] }, parallel.tasks[2]!] };
    const verdict = admitPlan('p2', validatePlan(ordered, 'test'), DEFAULT_CONFIG);
    expect(verdict.violations).toEqual([]);
    expect(verdict.admitted).toBe(true);
    const through = { tasks: [parallel.tasks[0]!, { ...parallel.tasks[2]!, depends_on: ['api'] }, { ...parallel.tasks[1]!, depends_on: ['ui'] }] };
    expect(admitPlan('p3', validatePlan(through, 'test'), DEFAULT_CONFIG).admitted).toBe(true);
    const batched = {
      tasks: [
        { ...parallel.tasks[0]!, batch: 1 },
        { ...parallel.tasks[1]!, batch: 1 },
      ],
    };
    const b = admitPlan('p4', validatePlan(batched, 'test'), DEFAULT_CONFIG);
    expect(b.violations.map((x) => [x.invariant, x.trace.map((s) => s.action)])).toEqual([
      ['schedule/overlapping-paths-in-order/api+users', ['APPROVED', 'TURN_START', 'DISPATCH_BATCH_1']],
    ]);
  });

  it('counts what Polly cannot show disjoint as overlapping, and the declared protected paths as part of the task', () => {
    const unsure = admitPlan('p5', validatePlan({ tasks: [task('a', { paths: ['src/x/*.ts'] }), task('b', { paths: ['src/*.ts'] })] }, 'test'), DEFAULT_CONFIG);
    expect(unsure.violations[0]!.detail).toContain('may both change paths starting with src/x/ (Polly cannot show the globs disjoint');
    const ci = admitPlan(
      'p6',
      validatePlan({ tasks: [task('a', { paths: ['src/a/**'], protected_paths: ['.github/workflows/ci.yml'] }), task('b', { paths: ['.github/workflows/*.yml'] })] }, 'test'),
      DEFAULT_CONFIG,
    );
    expect(ci.violations[0]!.detail).toContain('may both change .github/workflows/ci.yml');
  });

  it('leaves undeclared tasks out of the check (unbounded), and the gate says so in one line', () => {
    const plan = validatePlan({ tasks: [task('t1'), task('t2'), task('t3', { paths: ['docs/**'] })] }, 'test');
    const verdict = admitPlan('p7', plan, DEFAULT_CONFIG);
    expect(verdict.admitted).toBe(true);
    const lines = formatPlan({ id: 'p7', goalId: null, gate: 'pending', admission: { admitted: true, line: verdict.line }, tasks: plan.tasks } as never);
    expect(lines.filter((l) => l.includes('UNBOUNDED'))).toEqual([
      '  UNBOUNDED: t1, t2 declare no paths: each may change any file but the protected paths, and the checker cannot keep them apart from other tasks.',
    ]);
    expect(lines.join('\n')).toContain('t3 paths: docs/**');
    expect(() => validatePlan({ tasks: [task('t1', { purpose: 'explore', paths: ['src/**'] })] }, 'test')).toThrow(/tasks\[0\]\.paths: only an implement task changes files/);
    expect(() => validatePlan({ tasks: [task('t1', { paths: ['../x'] })] }, 'test')).toThrow(/"\.\.\/x" is a "\.\." segment/);
  });

  it('the schedule the Brain runs carries the invariant', () => {
    const refused = validatePlan(parallel, 'test');
    const wf = compileScheduleWorkflow('p8', refused, 5);
    expect(wf.invariants.map((i) => i.name)).toEqual(['dispatch-only-after-plan-approval', 'overlapping-paths-in-order/api+users']);
  });

  it.skipIf(!SPIN)(
    'spin agrees with both verdicts of the schedule',
    () => {
      const refused = validatePlan(parallel, 'test');
      const wf = compileScheduleWorkflow('p8', refused, 5);
      const ordered = validatePlan({ tasks: [parallel.tasks[0]!, { ...parallel.tasks[1]!, depends_on: ['api'] }] }, 'test');
      const policy = { maxDispatchesPerTurn: 5 };
      expect(spinVerify(withPollyGuarantees(wf, policy), { liveness: false }).admitted).toBe(false);
      expect(spinVerify(withPollyGuarantees(compileScheduleWorkflow('p9', ordered, 5), policy), { liveness: false }).admitted).toBe(true);
    },
    60_000,
  );
});
