/**
 * Admit once (issue 33 item 1): a plan's workflows are model-checked when it is proposed, and their
 * content hashes and verdicts are recorded on the plan; a Brain (after approval, after a restart)
 * compiles the plan again, finds each hash recorded and reuses the verdict without a check. A
 * workflow that compiles differently (here: its recorded hash no longer matches) is checked once,
 * and the journal says which were verified and which were checked.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { decidePlan, proposePlan } from '../../../brain/plan/plan-gate.js';
import { createPlanLibrary, journalPlanAdded } from '../../../brain/plan/plan-library.js';
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
    expect(added).toEqual({ planId: plan.id, verified: recorded.map((w) => w.name), checked: [] });
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
    expect(again.checked).toEqual([`plan-${plan.id}-t2`]);
    expect(again.verified).toHaveLength(3);
    // A plan recorded before hashes were kept: all checked, still admitted.
    const old = structuredClone(plan);
    delete old.admission!.workflows;
    const oldLib = library();
    expect(oldLib.addPlan(old)!.checked).toHaveLength(4);
    expect(oldLib.get(`plan-${plan.id}-t1`)?.admitted).toBe(true);

    await journalPlanAdded(store, again);
    const events = (await store.journal()).filter((e) => e.kind === 'plan.admission_verified');
    expect(events.map((e) => e.data)).toEqual([{ planId: plan.id, verified: again.verified, checked: [`plan-${plan.id}-t2`] }]);
  });
});
