/**
 * Creating a goal: the record every `polly goal` / `polly run` starts from.
 */
import type { RegistryStore } from './registry-store.js';
import type { GoalRecord } from './registry-schema.js';

/**
 * Record a new goal (id `g<n>`) and return it with the journal seq of its creation (follow from there).
 */
export async function createGoal(store: RegistryStore, text: string, mode: 'llm' | 'plan', now: Date = new Date()): Promise<{ goal: GoalRecord; seq: number }> {
  const before = (await store.journal()).at(-1)?.seq ?? 0;
  const goal = await store.update((draft, tx) => {
    draft.counters.goal += 1;
    const g: GoalRecord = { id: `g${draft.counters.goal}`, text, createdAt: now.toISOString(), status: mode === 'plan' ? 'planning' : 'open', planIds: [], mode };
    draft.goals[g.id] = g;
    tx.emit('goal.created', { goalId: g.id, text, mode });
    return structuredClone(g);
  });
  return { goal, seq: before };
}
