/**
 * A person commits on `main` in the main checkout while a confined worker's turn runs (open since
 * session 4): the ref guard compared refs around the turn, took the person's commit for the
 * worker's, reset `main` and failed the task. Inside Polly's sandbox the git metadata is read-only
 * (workers/git/git-policy.ts), so the worker could not have moved `main`: the guard now counts only
 * what the sandbox could write (brain/task-tools/ref-guard-step.ts `confinement`).
 *
 * One `polly run` through the real `pi` (implementer) and the real `claude` (reviewer) against the
 * scripted model. The implementer's turn writes `STARTED` in its worktree and waits (bounded) for
 * `GO`; the test, seeing `STARTED`, commits on `main` with git as a person would, then writes `GO`.
 * Ground truth: `main` keeps the person's commit, nothing was quarantined, the task ends ready,
 * and the journal names the change as made outside the sandbox.
 * Needs `npm run build`; skipped where the worker runner has no sandbox.
 */
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { git } from '../helpers/git-repo.js';
import { attackRun, SANDBOXED, type Outcome, type Setting } from './attack-harness.js';

const TITLE = 'Add the greeting';

function script(): string {
  return stringify({
    sessions: [
      {
        name: 'implement-waits-for-the-person',
        match: { role: 'implement', contains: [TITLE] },
        turns: [
          {
            steps: [
              { write: { path: 'check.js', content: "console.log('hello');\n" } },
              // At most 60 s: the test writes GO as soon as its commit is made.
              { run: 'touch STARTED; i=0; while [ ! -f GO ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; rm -f STARTED GO' },
              { finish: 'Added the greeting.' },
            ],
          },
        ],
      },
      {
        name: 'review',
        match: { role: 'review', contains: [TITLE] },
        turns: [{ steps: [{ finish: '{"blocking": [], "non_blocking": []}' }] }],
      },
    ],
  });
}

/** Wait (at most `ms`) for the turn's STARTED in some worktree, then commit on main as a person, then let the turn go on. */
async function personCommitsDuringTheTurn(s: () => Setting | null, ms: number): Promise<string | null> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const setting = s();
    const dir = setting ? join(setting.repo, '.worktrees') : null;
    const wt = dir && existsSync(dir) ? readdirSync(dir).find((n) => existsSync(join(dir, n, 'STARTED'))) : undefined;
    if (setting && dir && wt) {
      writeFileSync(join(setting.repo, 'NOTES.md'), 'a person writes notes\n');
      git(setting.repo, ['add', 'NOTES.md']);
      git(setting.repo, ['commit', '-q', '-m', 'a person commits on main during the turn']);
      const commit = git(setting.repo, ['rev-parse', 'refs/heads/main']);
      writeFileSync(join(dir, wt, 'GO'), '');
      return commit;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}

describe.skipIf(!SANDBOXED)("a person's commit on main during a confined turn is kept, and the task does not fail for it (pi implements, claude reviews)", () => {
  let o: Outcome;
  let personCommit: string | null = null;
  beforeAll(async () => {
    let setting: Setting | null = null;
    const tasks = [
      {
        key: 'p1',
        title: TITLE,
        purpose: 'implement',
        worker: 'pi',
        reviewer: 'claude-code',
        prompt: 'Add the greeting.',
        acceptance: { commands: ['node check.js'], criteria: ['the check passes'] },
      },
    ];
    const person = personCommitsDuringTheTurn(() => setting, 200_000);
    o = await attackRun(
      'person-commit',
      tasks,
      (s) => {
        setting = s;
        return script();
      },
      0,
    );
    personCommit = await person;
  }, 300_000);
  afterAll(() => {
    if (o && !process.env.POLLY_ATTACK_KEEP) rmSync(o.s.root, { recursive: true, force: true });
  });

  it('the person committed while the turn waited', () => {
    expect(personCommit).toMatch(/^[0-9a-f]{40}$/);
  });

  it("main keeps the person's commit: not reset, not quarantined", () => {
    expect(git(o.s.repo, ['rev-parse', 'refs/heads/main'])).toBe(personCommit);
    expect(git(o.s.repo, ['for-each-ref', 'refs/polly/quarantine/'])).toBe('');
    expect(git(o.s.repo, ['log', '-1', '--format=%s', 'main'])).toBe('a person commits on main during the turn');
  });

  it('the task ends ready, and the journal names the change as made outside the sandbox', () => {
    const task = Object.values(o.registry.tasks)[0]!;
    process.stderr.write(`person commit: ${task.status}: ${task.statusReason ?? ''}\n`);
    expect(task.status).toBe('ready');
    expect(o.journal).not.toContain('"kind":"guard.ref_changed"');
    expect(o.journal).toMatch(/"kind":"guard.outside_change","data":\{[^\n]*"name":"refs\/heads\/main"/);
  });
});
