/**
 * One reviewer fallback (brain/plan/plan-agents.ts `reviewerFor`): the plan's reviewer, else the
 * first of `review.pairs[worker]`, else nobody — and the Brain's task record, the agents a plan
 * starts, the PR step's choice and the compiled workflow all give the same answer for the same task.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type PollyConfig } from '../../../brain/config/config-schema.js';
import { planAgentUses, reviewerFor } from '../../../brain/plan/plan-agents.js';
import { compiledReviewer } from '../../../brain/plan/plan-compiler.js';
import { planTaskRecord } from '../../../brain/process/brain-process.js';
import type { PlanRecord, PlanTaskSpec } from '../../../brain/registry/registry-schema.js';
import { chooseReviewer } from '../../../brain/task-tools/open-draft-pr.js';

const spec = (reviewer: PlanTaskSpec['reviewer']): PlanTaskSpec => ({
  key: 'a',
  title: 'a',
  purpose: 'implement',
  worker: 'codex',
  model: null,
  reviewer,
  prompt: 'do a',
  acceptance: { commands: ['true'], criteria: [] },
  dependsOn: [],
});

function withPairs(pairs: Partial<PollyConfig['review']['pairs']>): PollyConfig {
  const config = structuredClone(DEFAULT_CONFIG);
  config.review.pairs = { ...config.review.pairs, ...pairs } as PollyConfig['review']['pairs'];
  return config;
}

describe('one reviewer fallback', () => {
  it.each([
    ["the plan's reviewer", spec('pi'), withPairs({ codex: ['claude-code'] }), 'pi'],
    ['the first of review.pairs[worker]', spec(null), withPairs({ codex: ['claude-code', 'pi'] }), 'claude-code'],
    ['nobody: no reviewer and no pair', spec(null), withPairs({ codex: [] }), null],
  ] as const)('%s: every user of the fallback gives the same answer', (_name, task, config, expected) => {
    expect(reviewerFor(task, config.review.pairs)).toBe(expected);
    const at = '2026-12-01T00:00:00.000Z';
    const plan: PlanRecord = { id: 'p1', goalId: null, createdAt: at, tasks: [task], admission: null, gate: 'approved', askedAt: null, decidedAt: at, decidedBy: 'test' };
    const record = planTaskRecord(plan, task, config, at);
    expect(record.reviewer).toBe(expected);
    expect(planAgentUses([task], config).find((u) => u.role === 'reviewer')?.harness ?? null).toBe(expected);
    const chosen = chooseReviewer(record, config);
    expect('reviewer' in chosen ? chosen.reviewer : null).toBe(expected);
    // Nobody to review: compiled with the worker itself, so the checker refuses it as the same vendor.
    expect(compiledReviewer(task, config.review.pairs)).toBe(expected ?? task.worker);
  });
});
