/**
 * What people read about a PR (a newcomer's pass found each of these wrong): the PR body keeps
 * "Review _pending_" only until the review is in; a cross-review with zero findings reads as such,
 * not as "commented"; the goal summary says what FINDINGS `0/1` means; its cost section names the
 * harness whose cost is unknown and marks a scripted model's cost (test/brain/registry/cost-marking.test.ts
 * for the ledger itself). Pure functions only (the
 * body's update on the forge: test/brain/task-tools/pr-step-local.test.ts and pr-step-github.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { SUMMARY_LEGEND, formatSummary } from '../../../brain/commands/follow-goal.js';
import { prBodyInputOf, renderPrBody } from '../../../brain/forge/pr-body.js';
import { reviewText } from '../../../brain/forge/pr-status.js';
import { addTurn, costNote, ledgerTurn, type LedgerTurn } from '../../../brain/registry/cost-ledger.js';
import { makeTask } from '../../helpers/worker-tools.js';

const usage = (input: number, output: number, cost: number | null) =>
  ({ type: 'usage', scope: 'turn', inputTokens: input, outputTokens: output, cacheReadTokens: null, cacheWriteTokens: null, costUsd: cost }) as const;
const turn = (workerId: string, harness: LedgerTurn['harness'], role: LedgerTurn['role'], cost: number | null, endpoint: string | null): LedgerTurn =>
  ledgerTurn([usage(1000, 10, cost)], { at: '2026-12-01T00:00:00Z', role, harness, workerId, orderId: `o-${workerId}`, status: 'ok', endpoint });

const SCRIPTED = 'http://127.0.0.1:43609';

describe('the PR body', () => {
  const review = {
    reviewer: 'pi' as const,
    round: 1,
    blocking: [],
    nonBlocking: [{ file: 'src/stats.js', line: 3, message: 'consider a float test' }],
    at: '2026-12-01T00:00:00Z',
  };
  const ledger = [turn('w1', 'claude-code', 'implement', 0.0802, SCRIPTED), turn('w2', 'pi', 'review', null, `${SCRIPTED}/v1`)].reduce(
    (l, t) => addTurn(l, t),
    undefined as ReturnType<typeof addTurn> | undefined,
  )!;
  const body = renderPrBody({
    taskId: 'p2-t1',
    title: 'Fix sum()',
    prompt: 'fix it',
    acceptance: { commands: ['npm test'], criteria: [] },
    checks: [],
    reviews: [review],
    worker: 'claude-code',
    ledger,
  });

  it('shows the review once there is one, and says pending only before', () => {
    expect(body).toContain('### Round 1 by `pi`: no blocking findings');
    expect(body).not.toContain('_pending_');
    expect(renderPrBody({ taskId: 't', title: 'T', prompt: 'p', acceptance: { commands: [], criteria: [] }, checks: [], reviews: [] })).toContain('## Review\n\n_pending_');
  });

  it("names the harness whose cost is unknown and why, and marks the scripted model's cost as not billed", () => {
    expect(body).toContain('| implement | 1 | 1000 | 10 | 0 | $0.0802 not billed |');
    expect(body).toContain('| review | 1 | 1000 | 10 | 0 | unknown |');
    expect(body).toMatch(/Unknown for pi \(pi has no price for a model on an endpoint Polly configured/);
    expect(body).not.toMatch(/codex/);
    expect(body).toContain(`Not billed: the model behind ${SCRIPTED} runs on this machine`);
    expect(body).toContain('Polly has no price table');
    expect(costNote([turn('w9', 'codex', 'implement', null, null)])).toContain('codex (codex reports tokens but never a cost)');
  });

  it("warns in the body Polly writes for a task that ran unconfined (built from the task's record, as open_draft_pr, mark_ready and the landing sync build it)", () => {
    const warning = "this work ran without Polly's sandbox";
    const unconfined = makeTask('p3-t1', 'pi', { unconfined: 'bubblewrap is not installed; the turn ran with workers.allow_unconfined: true' });
    const written = renderPrBody(prBodyInputOf(unconfined));
    expect(written).toContain(warning);
    expect(written).toContain('bubblewrap is not installed');
    expect(renderPrBody(prBodyInputOf(makeTask('p3-t2', 'pi')))).not.toContain(warning);
  });
});

describe('review and findings in words', () => {
  it('a COMMENT review says what the cross-review found instead of "commented"', () => {
    const round = (blocking: number, nonBlocking: number) => ({ reviewer: 'pi', blocking: Array(blocking).fill({}), nonBlocking: Array(nonBlocking).fill({}) });
    expect(reviewText('commented', [round(0, 0)])).toBe('no findings (pi)');
    expect(reviewText('commented', [round(2, 0), round(0, 1)])).toBe('no blocking findings, 1 non-blocking (pi)');
    expect(reviewText('commented', [round(2, 1)])).toBe('2 blocking (pi)');
    expect(reviewText('commented', [])).toBe('commented');
    expect(reviewText('changes_requested', [round(1, 0)])).toBe('changes_requested');
    expect(reviewText('none')).toBe('none');
  });

  it('the goal summary explains FINDINGS under the table', () => {
    const lines = formatSummary([
      {
        task: 'p2-t1',
        title: 'Fix sum()',
        worker: 'claude-code',
        reviewer: 'pi',
        status: 'ready',
        checks: 'red → green',
        findings: '0/1',
        pr: { number: 2, url: 'u', state: 'ready' },
        seconds: 91,
      },
    ]);
    expect(lines[0]).toMatch(/FINDINGS/);
    expect(lines.at(-1)).toBe(SUMMARY_LEGEND);
    expect(SUMMARY_LEGEND).toMatch(/FINDINGS: .*blocking\/non-blocking/);
    expect(formatSummary([])).not.toContain(SUMMARY_LEGEND);
  });
});
