/**
 * Admit once: a plan's workflows are model-checked when it is proposed, and their content hashes,
 * verdicts and the compiler's fingerprint are recorded on the plan; a Brain (after approval, after
 * a restart) compiles the plan again, finds each hash recorded and reuses the verdict without a
 * check, and the journal shows each verified hash. A workflow that compiles differently (another
 * compiler or checker; here: its recorded hash no longer matches) is checked once: its new hash and
 * verdict are written onto the plan with `plan.admission_rechecked`, so the next restart verifies it.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { decidePlan, proposePlan } from '../../../brain/plan/plan-gate.js';
import { planCompilerFingerprint } from '../../../brain/plan/plan-compiler.js';
import { createPlanLibrary, recordPlanAdded } from '../../../brain/plan/plan-library.js';
import { createMemoryRegistryStore } from '../../../brain/registry/registry-store.js';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../../../workflows/workflow-library.js';

const task = (key: string, worker: string, reviewer: string, dependsOn: string[] = []) => ({
  key,
  title: `task ${key}`,
  purpose: 'implement',
  worker,
  reviewer,
  prompt: 'do it',
  acceptance: { commands: ['npm test'], criteria: [] },
  depends_on: dependsOn,
});

const library = () =>
  createPlanLibrary(
    createWorkflowLibrary(builtinWorkflowDirs(), { policy: { maxDispatchesPerTurn: DEFAULT_CONFIG.policies.spawn_bounds.max_dispatches_per_turn } }),
    DEFAULT_CONFIG,
  );

describe('a plan is admitted once', () => {
  it('a Brain reuses the verdicts recorded at admission by content hash, checks only what differs, and journals both', async () => {
    const store = createMemoryRegistryStore();
    const proposed = await proposePlan(store, DEFAULT_CONFIG, { tasks: [task('t1', 'claude-code', 'codex'), task('t2', 'codex', 'pi', ['t1']), task('t3', 'pi', 'claude-code')] });
    expect(proposed.admitted).toBe(true);
    await decidePlan(store, DEFAULT_CONFIG, proposed.planId, 'approve', { by: 'human:test' });
    const plan = (await store.read()).plans[proposed.planId]!;
    const recorded = plan.admission?.workflows ?? [];
    expect(recorded.map((w) => w.name).sort()).toEqual([`plan-${plan.id}`, `plan-${plan.id}-t1`, `plan-${plan.id}-t2`, `plan-${plan.id}-t3`].sort());
    for (const w of recorded) expect(w.key).toMatch(/^[0-9a-f]{64}$/);

    // A Brain process (a restart is a new library): every workflow verified, none checked.
    const lib = library();
    const added = lib.addPlan(plan);
    expect(plan.admission?.compiler).toBe(planCompilerFingerprint());
    expect(added).toEqual({
      planId: plan.id,
      verified: recorded.map((w) => ({ name: w.name, key: w.key })),
      checked: [],
      compiler: { recorded: planCompilerFingerprint(), now: planCompilerFingerprint() },
    });
    for (const w of recorded) {
      const entry = lib.get(w.name)!;
      expect(entry.admitted).toBe(true);
      // The verdict is the one recorded at admission (its check's own wall time), not a new check.
      expect(entry.check).toMatchObject({ line: w.line, statesSeen: w.statesSeen, elapsedMs: w.elapsedMs });
    }
    expect(lib.addPlan(plan)).toBeNull();

    // A workflow whose hash no longer matches (another checker or compiler) is checked here, once.
    const stale = structuredClone(plan);
    stale.admission!.workflows = recorded.map((w) => (w.name.endsWith('-t2') ? { ...w, key: '0'.repeat(64) } : w));
    const again = library().addPlan(stale)!;
    expect(again.checked.map((w) => w.name)).toEqual([`plan-${plan.id}-t2`]);
    expect(again.verified).toHaveLength(3);
    // A plan recorded before hashes were kept: all checked, still admitted.
    const old = structuredClone(plan);
    delete old.admission!.workflows;
    const oldLib = library();
    expect(oldLib.addPlan(old)!.checked).toHaveLength(4);
    expect(oldLib.get(`plan-${plan.id}-t1`)?.admitted).toBe(true);

    await recordPlanAdded(store, again);
    const events = (await store.journal()).filter((e) => e.kind === 'plan.admission_verified');
    expect(events.map((e) => e.data)).toEqual([{ planId: plan.id, verified: again.verified, checked: [`plan-${plan.id}-t2`] }]);
  });

  it('a workflow checked again is recorded with its new hash, so the next Brain verifies it: checked once per change, not per restart', async () => {
    const store = createMemoryRegistryStore();
    const proposed = await proposePlan(store, DEFAULT_CONFIG, { tasks: [task('t1', 'claude-code', 'codex'), task('t2', 'codex', 'pi', ['t1'])] });
    await decidePlan(store, DEFAULT_CONFIG, proposed.planId, 'approve', { by: 'human:test' });
    const t2 = `plan-${proposed.planId}-t2`;
    const realKey = (await store.read()).plans[proposed.planId]!.admission!.workflows!.find((w) => w.name === t2)!.key;
    // As if another Polly (its compiler fingerprint and t2's hash differ) had admitted the plan.
    await store.update((d) => {
      const admission = d.plans[proposed.planId]!.admission!;
      admission.compiler = 'f'.repeat(64);
      admission.workflows = admission.workflows!.map((w) => (w.name === t2 ? { ...w, key: '0'.repeat(64), elapsedMs: 1 } : w));
    });

    const first = library().addPlan((await store.read()).plans[proposed.planId]!)!;
    expect(first.checked).toMatchObject([{ name: t2, previousKey: '0'.repeat(64), key: realKey, admitted: true }]);
    await recordPlanAdded(store, first);
    const after = (await store.read()).plans[proposed.planId]!.admission!;
    expect(after.compiler).toBe(planCompilerFingerprint());
    expect(after.workflows!.find((w) => w.name === t2)).toMatchObject({ key: realKey, admitted: true });
    expect(after.workflows).toHaveLength(3);
    const rechecked = (await store.journal()).filter((e) => e.kind === 'plan.admission_rechecked');
    expect(rechecked.map((e) => e.data)).toEqual([
      {
        planId: proposed.planId,
        compilerChanged: true,
        compilerBefore: 'f'.repeat(64),
        compilerNow: planCompilerFingerprint(),
        workflows: [{ name: t2, previousKey: '0'.repeat(64), key: realKey, admitted: true, line: expect.stringContaining('admitted') }],
      },
    ]);

    // The next Brain (a restart): nothing checked, every hash verified, nothing more recorded.
    const second = library().addPlan((await store.read()).plans[proposed.planId]!)!;
    expect(second.checked).toEqual([]);
    expect(second.verified.map((w) => w.name).sort()).toEqual([`plan-${proposed.planId}`, `plan-${proposed.planId}-t1`, t2].sort());
    await recordPlanAdded(store, second);
    expect((await store.journal()).filter((e) => e.kind === 'plan.admission_rechecked')).toHaveLength(1);

    // A plan recorded before hashes were kept is checked once, then recorded like any other.
    await store.update((d) => {
      delete d.plans[proposed.planId]!.admission!.workflows;
      delete d.plans[proposed.planId]!.admission!.compiler;
    });
    const old = library().addPlan((await store.read()).plans[proposed.planId]!)!;
    expect(old.checked.map((w) => w.previousKey)).toEqual([null, null, null]);
    await recordPlanAdded(store, old);
    expect(library().addPlan((await store.read()).plans[proposed.planId]!)!.checked).toEqual([]);
  });
});
