/**
 * Text a worker wrote (a review finding, a summary, a reason) never reaches a
 * terminal or a forge with its control characters: a reviewer's finding with an ANSI CSI (`ESC [2J`,
 * clear screen), an OSC (`ESC ]0;…BEL`, set the window title) and a C1 CSI (`\x9b`) is stored, posted
 * (line comment, PR body) and printed (`polly pr show`, `polly status`, the dashboard) with them
 * shown as `\xNN` (brain/core/visible-text.ts). Pure functions over data, no I/O.
 */
import { describe, expect, it } from 'vitest';
import { formatPullRequest } from '../../../brain/commands/pr.js';
import { formatStatus } from '../../../brain/commands/status.js';
import { renderPrBody } from '../../../brain/forge/pr-body.js';
import type { LocalPullRequest } from '../../../brain/registry/registry-schema.js';
import type { StatusReport } from '../../../brain/registry/status-report.js';
import { escapeHtml } from '../../../brain/ui/ui-pages.js';
import { visibleLine, visibleText } from '../../../brain/core/visible-text.js';
import { parseFindings, reviewFromFindings } from '../../../workers/review-findings.js';

const ESCAPES = 'clear\u001b[2J title\u001b]0;owned\u0007 c1\u009b2J';
const SHOWN = 'clear\\x1b[2J title\\x1b]0;owned\\x07 c1\\x9b2J';
// Any C0 control but tab and newline, DEL, or a C1 control.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('worker-written text is escape-filtered wherever Polly stores, posts or prints it', () => {
  const answer = JSON.stringify({ blocking: [{ file: 'src/a\u001b[31m.js', line: 1, message: ESCAPES }], non_blocking: [] });

  it('a finding is stored and posted with its control characters shown', () => {
    const findings = parseFindings(`Here you go:\n${answer}`);
    expect(findings.blocking).toEqual([{ file: 'src/a\\x1b[31m.js', line: 1, message: SHOWN }]);
    const review = reviewFromFindings(findings, { reviewer: 'pi', round: 1 });
    expect(JSON.stringify(review)).not.toMatch(/\\u001b|\\u009b/);
    expect(`${review.body}${review.comments.map((c) => c.body).join('')}`).not.toMatch(RAW);
  });

  // Records written before the filter (or by a human) still hold raw text: the printers filter too.
  const raw = { file: 'src/a.js', line: 1, message: ESCAPES };

  it('the PR body and `polly pr show` show them, never send them', () => {
    const body = renderPrBody({
      taskId: 't1',
      title: 'Fix',
      prompt: `Do it ${ESCAPES}`,
      acceptance: { commands: ['npm test'], criteria: [] },
      checks: [{ command: 'npm test', exitCode: 1, output: `FAIL ${ESCAPES}`, durationMs: 10, timedOut: false } as never],
      reviews: [{ reviewer: 'pi', round: 1, blocking: [raw], nonBlocking: [], at: '2026-12-01T00:00:00Z' }],
    });
    expect(body).toContain(SHOWN);
    expect(body).not.toMatch(RAW);
    const pr: LocalPullRequest = {
      number: 1,
      taskId: 't1',
      title: `Fix ${ESCAPES}`,
      body,
      head: 'polly/t1',
      base: 'main',
      headCommit: 'a'.repeat(40),
      state: 'draft',
      reviews: [{ event: 'REQUEST_CHANGES', body: `review ${ESCAPES}`, comments: [raw], at: '2026-12-01T00:00:00Z' }],
      createdAt: '2026-12-01T00:00:00Z',
      updatedAt: '2026-12-01T00:00:00Z',
    };
    const shown = formatPullRequest(pr).join('\n');
    expect(shown).toContain(`src/a.js:1: ${SHOWN}`);
    expect(shown).not.toMatch(RAW);
  });

  it('`polly status` and the dashboard show them, never send them', () => {
    const none = { totals: { turns: 0 } } as never;
    const report: StatusReport = {
      repoRoot: '/r',
      health: { state: 'none', pid: null, since: null, heartbeatAt: null, waiting: { tasks: 0, plans: 0 }, line: 'Brain not running' },
      brain: null,
      brainGone: null,
      unattended: [],
      goals: [{ id: 'g1', text: `goal ${ESCAPES}`, status: 'running', planIds: [], createdAt: '2026-12-01T00:00:00Z', reason: null, spent: none, brain: none }],
      plans: [],
      tasks: [
        {
          id: 't1',
          title: `Fix ${ESCAPES}`,
          purpose: 'implement',
          worker: 'pi',
          reviewer: 'codex',
          status: 'parked',
          statusReason: `review said ${ESCAPES}`,
          spent: none,
          budget: null,
          branch: 'polly/t1',
          pr: null,
          prStatus: null,
        } as never,
      ],
      workers: [],
    };
    const shown = formatStatus(report).join('\n');
    expect(shown).toContain(`t1 parked: review said ${SHOWN}`);
    expect(shown).not.toMatch(RAW);
    expect(escapeHtml(ESCAPES)).toBe(SHOWN);
  });
});

describe('bidirectional controls and line breaks in worker-chosen one-line fields (issue 26)', () => {
  it('a file name with U+202E or a newline can neither reorder nor forge a line of polly output', () => {
    const findings = parseFindings(JSON.stringify({ blocking: [{ file: 'src/\u202egpj.js\nready: yes', line: 1, message: 'a\u2066b\u2028c\n' }], non_blocking: [] }));
    expect(findings.blocking[0]!.file).toBe('src/\\u{202e}gpj.js\\nready: yes');
    expect(findings.blocking[0]!.message).toBe('a\\u{2066}b\\u{2028}c\n');
    expect(visibleLine('x\ny\rz\u200f')).toBe('x\\ny\\x0dz\\u{200f}');
    expect(visibleText('keep\ttabs\nand lines')).toBe('keep\ttabs\nand lines');
    const pr = {
      number: 1,
      taskId: 't1',
      title: 'Fix\nstate:   merged',
      body: '',
      head: 'polly/t1',
      base: 'main',
      headCommit: 'a'.repeat(40),
      state: 'draft',
      reviews: [],
      createdAt: 'x',
      updatedAt: 'x',
    };
    const lines = formatPullRequest(pr as never);
    expect(lines[0]).toBe('#1 Fix\\nstate:   merged');
    expect(lines.join('\n').match(/^state:/gm)).toHaveLength(1);
  });
});
