/**
 * Retrying a parked task (issue 32 item 7), the pure half: why a task was parked, read from the
 * journal events its park wrote; which parks `polly retry` continues (its budget, a disk fault) and
 * which it leaves to a human; the budget a retry runs under (the one in force, or the one given)
 * and the refusal of one already spent; the budget the takeover writes on the task; and the
 * `--budget` spelling. The real run (the CLIs, the dashboard form) is test/e2e/budget-retry.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { parkCauses, retryHints, retryPlan, takeOverForRetry, type ParkCause } from '../../../brain/plan/plan-retry.js';
import { parseBudgetText } from '../../../brain/plan/plan-schema.js';
import { emptyTotals } from '../../../brain/registry/cost-ledger.js';
import { emptyRegistry, type JournalEntry, type PlanRecord, type Registry } from '../../../brain/registry/registry-schema.js';
import { makeTask } from '../../helpers/worker-tools.js';

const AT = '2026-12-04T00:00:00.000Z';
let seq = 0;
const entry = (kind: string, data: Record<string, unknown>): JournalEntry => ({ seq: ++seq, at: AT, kind, data });
const budgetPark = (taskId: string, spent: number, limit = 1000): JournalEntry[] => [
  entry('budget.reached', { taskId, goalId: 'g1', scope: 'task', kind: 'tokens', limit, spent, orderId: 'o', workerId: 'w' }),
  entry('task.parked', { taskId, reason: 'budget reached: …', backupRef: `refs/polly/backup/${taskId}/1`, worktree: `/w/${taskId}` }),
];

function plan(id: string, keys: string[], budgets: PlanRecord['budgets'] = { perTask: null, perGoal: { usd: 5 } }): PlanRecord {
  return {
    id,
    goalId: 'g1',
    createdAt: AT,
    tasks: keys.map((key) => ({
      key,
      title: `task ${key}`,
      purpose: 'implement',
      worker: 'pi',
      model: null,
      reviewer: 'codex',
      prompt: `Do ${key}.`,
      acceptance: { commands: ['npm test'], criteria: [] },
      dependsOn: [],
    })),
    admission: null,
    gate: 'approved',
    budgets,
    askedAt: AT,
    decidedAt: AT,
    decidedBy: 'human:t',
  };
}

/** p1 with tasks a (parked for its budget: 1,500 of 1,000 tokens), b (parked for a full disk) and c (parked for a human). */
function parkedRegistry(): { reg: Registry; parks: Map<string, ParkCause> } {
  const reg = emptyRegistry();
  reg.plans.p1 = plan('p1', ['a', 'b', 'c']);
  const ledger = (tokens: number) => ({ turns: [], totals: { ...emptyTotals(), turns: 1, inputTokens: tokens - 100, outputTokens: 100, costUsd: 0.02 }, byRole: {} });
  reg.tasks['p1-a'] = makeTask('p1-a', 'pi', { planId: 'p1', status: 'parked', budget: { tokens: 1000 }, ledger: ledger(1500) as never, worktree: '/w/p1-a' });
  reg.tasks['p1-b'] = makeTask('p1-b', 'pi', { planId: 'p1', status: 'parked', ledger: ledger(200) as never });
  reg.tasks['p1-c'] = makeTask('p1-c', 'pi', { planId: 'p1', status: 'parked' });
  const journal = [
    ...budgetPark('p1-a', 1500),
    entry('task.parked', { taskId: 'p1-b', reason: 'ENOSPC', ioFault: 'ENOSPC', worktree: '/w/p1-b' }),
    entry('task.parked', { taskId: 'p1-c', reason: 'parked for a human: 3 fix rounds used', pr: { number: 1 } }),
  ];
  return { reg, parks: parkCauses(journal) };
}

function refusal(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (isPollyError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('why a task was parked, from the journal', () => {
  it('a budget stop, a disk fault, a human park; a retry forgets the park, a later park gets its own cause', () => {
    const journal = [
      ...budgetPark('p1-a', 1500),
      entry('task.parked', { taskId: 'p1-b', reason: 'ENOSPC', ioFault: 'ENOSPC' }),
      entry('budget.reached', { taskId: 'p1-c', scope: 'goal', kind: 'usd', limit: 1, spent: 1.2 }),
      entry('task.parked', { taskId: 'p1-c', reason: 'budget' }),
      entry('task.retried', { taskId: 'p1-c', planId: 'p2', previousStatus: 'parked' }),
      entry('task.parked', { taskId: 'p1-c', reason: 'fix rounds used' }),
      entry('task.retried', { taskId: 'p1-b', planId: 'p3', previousStatus: 'parked' }),
    ];
    const causes = parkCauses(journal);
    expect(causes.get('p1-a')).toEqual({ cause: 'budget', scope: 'task', kind: 'tokens', limit: 1000, spent: 1500, seq: journal[1]!.seq });
    expect(causes.get('p1-c')).toEqual({ cause: 'other', seq: journal[6]!.seq });
    expect(causes.has('p1-b')).toBe(false);
    expect(parkCauses(journal.slice(0, 3)).get('p1-b')).toEqual({ cause: 'io_fault', code: 'ENOSPC', seq: journal[2]!.seq });
  });
});

describe('retrying a parked task', () => {
  it('a budget stop goes on under a higher budget, written on the retry plan with the goal budget of its plan', () => {
    const { reg, parks } = parkedRegistry();
    const retry = retryPlan(reg, ['p1-a'], { parks, budget: { tokens: 5000 } });
    expect(retry.retries).toEqual({ a: 'p1-a' });
    expect(retry.plan.tasks[0]).toMatchObject({ key: 'a', budget: { tokens: 5000 } });
    expect(retry.plan.tasks[0]!.prompt).toContain('an earlier attempt of task p1-a ended parked');
    expect(retry.plan.budgets).toEqual({ per_task: null, per_goal: { usd: 5 } });
  });

  it('under the budget it already reached, it is refused with the spend and a budget that would do', () => {
    const { reg, parks } = parkedRegistry();
    const spent = refusal(() => retryPlan(reg, ['p1-a'], { parks }));
    expect(spent.code).toBe('conflict');
    expect(spent.message).toBe(
      "polly retry: task p1-a already reached its budget (1000 tokens: tokens 1500 ≥ limit 1000, counted over every attempt so far), so the retry would stop before its first model call; nothing was proposed. Give it a higher one: polly retry p1-a --budget '{tokens: 3000}'",
    );
    expect(refusal(() => retryPlan(reg, ['p1-a'], { parks, budget: { tokens: 1200, usd: 3 } })).message).toContain(
      "already reached the budget given ($3.00 and 1200 tokens: tokens 1500 ≥ limit 1200, counted over every attempt so far), so the retry would stop before its first model call; nothing was proposed. Give it a higher one: polly retry p1-a --budget '{tokens: 3000, usd: 3}'",
    );
    // No limit at all is a budget too.
    expect(retryPlan(reg, ['p1-a'], { parks, budget: null }).plan.tasks[0]!.budget).toBeNull();
  });

  it('the goal budget counts the retried tasks: one they reached is refused, naming --goal-budget', () => {
    const { reg, parks } = parkedRegistry();
    const r = refusal(() => retryPlan(reg, ['p1-a'], { parks, budget: { tokens: 9000 }, goalBudget: { usd: 0.01 } }));
    expect(r.message).toContain('p1-a already reached the goal budget given ($0.0100: cost $0.0200 ≥ limit $0.0100');
    expect(r.message).toContain("polly retry p1-a --goal-budget '{usd: 0.04}'");
  });

  it('a disk fault is retried under the budget it ran under; a park for a human is left to the human', () => {
    const { reg, parks } = parkedRegistry();
    expect(retryPlan(reg, ['p1-b'], { parks }).plan.tasks[0]).toMatchObject({ key: 'b', budget: null });
    const human = refusal(() => retryPlan(reg, ['p1-c'], { parks }));
    expect(human.code).toBe('conflict');
    expect(human.message).toContain('task p1-c is parked; only a task that stopped');
    expect(human.message).toContain('A task parked for a human (not for its budget or a full disk) waits with its PR');
    // Without the journal's word, a parked task is a human's.
    expect(refusal(() => retryPlan(reg, ['p1-a'], { budget: { tokens: 9000 } })).message).toContain('task p1-a is parked');
  });

  it('the takeover moves the task from parked to queued under the retry plan with the approved budget', () => {
    const { reg, parks } = parkedRegistry();
    const retry = retryPlan(reg, ['p1-a'], { parks, budget: { tokens: 5000 } });
    const record: PlanRecord = { ...plan('p2', []), tasks: retry.plan.tasks, retries: retry.retries, budgets: { perTask: null, perGoal: { usd: 5 } } };
    const t = reg.tasks['p1-a']!;
    expect(takeOverForRetry(t, record, 'a', AT)).toBe('parked');
    expect(t).toMatchObject({ status: 'queued', planId: 'p2', budget: { tokens: 5000 }, worktree: '/w/p1-a', statusReason: null });
    expect(t.retriedFrom).toEqual([{ planId: 'p1', status: 'parked', reason: null, at: AT }]);
  });

  it('the hints after a run name the command that continues a budget stop with a higher budget', () => {
    const { reg, parks } = parkedRegistry();
    reg.tasks['p1-a']!.statusReason = 'budget reached: the task budget (1000 tokens): tokens 1500 ≥ limit 1000. The worker was stopped and its work kept; …';
    const hints = retryHints(reg, ['p1-a', 'p1-b', 'p1-c'], parks);
    expect(hints).toEqual([
      "[polly] p1-a parked: budget reached: the task budget (1000 tokens): tokens 1500 ≥ limit 1000; its work stays in /w/p1-a on polly/p1-a. Continue it there with: polly retry p1-a --budget '{tokens: 3000}'",
      '[polly] p1-b parked. Continue it there with: polly retry p1-b',
    ]);
  });
});

describe('--budget spelling', () => {
  it('takes a plan file budget or null, and names the value and the spelling otherwise', () => {
    expect(parseBudgetText('{tokens: 400000}', '--budget')).toEqual({ tokens: 400000 });
    expect(parseBudgetText('{"usd": 2, "tokens": 5}', '--budget')).toEqual({ usd: 2, tokens: 5 });
    expect(parseBudgetText('null', '--budget')).toBeNull();
    for (const [text, problem] of [
      ['{tokns: 5}', 'is not a budget: Unrecognized key'],
      ['{tokens: 0}', 'is not a budget: tokens:'],
      ['{}', 'is not a budget: a budget needs usd, tokens or both'],
      ['{tokens: [', 'is not YAML'],
      ['40000', 'is not a budget'],
    ] as const) {
      const r = refusal(() => parseBudgetText(text, '--budget'));
      expect(r.code).toBe('bad_input');
      expect(r.message).toContain(`--budget ${JSON.stringify(text)} ${problem}`);
      expect(r.message).toContain("e.g. --budget '{tokens: 400000}'");
    }
  });
});
