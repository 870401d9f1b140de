/**
 * `npm run bench -- admission [tasks]`: what a Brain pays to take an approved plan into its
 * workflow library, with the verdicts recorded at admission (each compiled workflow's content hash:
 * brain/plan/plan-library.ts) against checking every workflow again (what each Brain process did
 * before, after approval and after every restart). Same process, same plan: a chain-free plan of
 * `tasks` implement tasks (default 7), three vendors, each reviewed by another.
 * Prints the admission at proposal, both library adds (median of 5) and their ratio.
 */
import { DEFAULT_CONFIG } from '../brain/config/config-schema.js';
import { decidePlan, proposePlan } from '../brain/plan/plan-gate.js';
import { createPlanLibrary } from '../brain/plan/plan-library.js';
import { createMemoryRegistryStore } from '../brain/registry/registry-store.js';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../workflows/workflow-library.js';

const n = Number(process.argv[2] ?? 7);
const vendors = ['claude-code', 'codex', 'pi'];
const tasks = Array.from({ length: n }, (_, i) => ({
  key: `t${i + 1}`,
  title: `task ${i + 1}`,
  purpose: 'implement',
  worker: vendors[i % 3],
  reviewer: vendors[(i + 1) % 3],
  prompt: 'do it',
  acceptance: { commands: ['npm test'], criteria: [] },
}));
const policy = { maxDispatchesPerTurn: DEFAULT_CONFIG.policies.spawn_bounds.max_dispatches_per_turn };
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const store = createMemoryRegistryStore();
const t0 = performance.now();
const proposed = await proposePlan(store, DEFAULT_CONFIG, { tasks });
const proposeMs = performance.now() - t0;
if (!proposed.admitted) throw new Error(`the benchmark's plan was refused: ${proposed.line}`);
await decidePlan(store, DEFAULT_CONFIG, proposed.planId, 'approve', { by: 'human:bench' });
const plan = (await store.read()).plans[proposed.planId]!;
const unrecorded = structuredClone(plan);
delete unrecorded.admission!.workflows;

function addMs(p: typeof plan): { ms: number; checked: number } {
  const lib = createPlanLibrary(createWorkflowLibrary(builtinWorkflowDirs(), { policy }), DEFAULT_CONFIG);
  const s = performance.now();
  const added = lib.addPlan(p)!;
  return { ms: performance.now() - s, checked: added.checked.length };
}
const verified: number[] = [];
const rechecked: number[] = [];
let checkedCount = 0;
for (let i = 0; i < 5; i++) {
  verified.push(addMs(plan).ms);
  const r = addMs(unrecorded);
  rechecked.push(r.ms);
  checkedCount = r.checked;
}
const [load1] = (await import('node:os')).loadavg();
process.stdout.write(`bench admission: plan of ${n} implement tasks (${n + 1} workflows), load average ${load1!.toFixed(2)}\n`);
process.stdout.write(`  admission at proposal (compile + check every workflow): ${proposeMs.toFixed(0)} ms — ${proposed.line}\n`);
process.stdout.write(`  a Brain adds the plan, verdicts verified by content hash: ${median(verified).toFixed(1)} ms (0 workflows checked)\n`);
process.stdout.write(`  a Brain adds the plan, every workflow checked again (before): ${median(rechecked).toFixed(1)} ms (${checkedCount} checked)\n`);
process.stdout.write(`  ratio verified / checked again: ${(median(verified) / median(rechecked)).toFixed(4)}x\n`);
