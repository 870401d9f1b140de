/**
 * Reading a reviewer's attempts from the gate's decision log (brain/task-tools/gate-attempts.ts):
 * only lines appended since the turn started, only calls in the reviewer's own scratch dir, only
 * `blast_radius.*` denials, control characters made visible. Real files.
 */
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { visibleText } from '../../../brain/core/visible-text.js';
import { decisionLogMark, gateAttempts } from '../../../brain/task-tools/gate-attempts.js';

const line = (data: Record<string, unknown>) => `${JSON.stringify({ at: '2026-12-01T00:00:00.000Z', kind: 'gate.decision', data })}\n`;

describe('gateAttempts', () => {
  it('lists the blast_radius denials of this turn in this scratch dir, and nothing else', () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-gate-attempts-'));
    const log = join(dir, 'gate-decisions.jsonl');
    const scratch = join(dir, 'polly-review-a');
    writeFileSync(log, line({ role: 'review', cwd: scratch, decision: 'deny', rule: 'blast_radius.merge', input: 'gh pr merge 1 (before the turn)' }));
    const mark = decisionLogMark(log);
    expect(decisionLogMark(join(dir, 'missing'))).toBe(0);
    appendFileSync(log, line({ role: 'review', cwd: scratch, decision: 'allow', rule: 'allow', input: 'cat DIFF.patch' }));
    appendFileSync(log, line({ role: 'review', cwd: scratch, decision: 'deny', rule: 'purpose_guard.read_only', input: 'npm test' }));
    appendFileSync(log, line({ role: 'review', cwd: join(dir, 'polly-review-b'), decision: 'deny', rule: 'blast_radius.merge', input: 'another review' }));
    appendFileSync(log, 'not json\n');
    appendFileSync(log, line({ role: 'review', cwd: scratch, decision: 'deny', rule: 'blast_radius.merge', input: 'curl -X PUT\n  http://x/pulls/1/merge \u001b]0;title\u0007' }));
    appendFileSync(log, line({ role: 'review', cwd: join(scratch, 'sub'), decision: 'ask', rule: 'blast_radius.push_other_branch', input: 'git push o x' }));
    expect(gateAttempts(log, mark, scratch)).toEqual(['blast_radius.merge: curl -X PUT http://x/pulls/1/merge \\x1b]0;title\\x07', 'blast_radius.push_other_branch: git push o x']);
    expect(gateAttempts(log, decisionLogMark(log), scratch)).toEqual([]);
  });

  it("counts the lines the runner stamped with this turn's worker, whatever cwd they claim, and never another worker's", () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-gate-attempts-'));
    const log = join(dir, 'gate-decisions.jsonl');
    const scratch = join(dir, 'polly-review-a');
    writeFileSync(log, '');
    appendFileSync(log, line({ role: 'review', cwd: '/elsewhere', decision: 'deny', rule: 'blast_radius.merge', input: 'gh pr merge 1', worker: 'w-mine', task: 't1' }));
    appendFileSync(log, line({ role: 'review', cwd: scratch, decision: 'deny', rule: 'blast_radius.merge', input: 'gh pr merge 2', worker: 'w-other', task: 't2' }));
    expect(gateAttempts(log, 0, scratch, 5, 'w-mine')).toEqual(['blast_radius.merge: gh pr merge 1']);
  });

  it('shows control characters instead of sending them to a terminal', () => {
    expect(visibleText('a\u001b[2Jb\tc\u009bd\n')).toBe('a\\x1b[2Jb\tc\\x9bd\n');
  });
});
