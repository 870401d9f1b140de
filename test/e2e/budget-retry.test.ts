// Budget stops have a way forward (issue 32 item 7), with the real claude and pi CLIs, the real
// sandbox and the scripted model server, no API key:
// - `polly try` of a plan whose two tasks have a 1-token budget: both are parked for it, each reason
//   naming the command that continues it with a higher budget;
// - `polly retry p1-t1` under the budget it already reached is refused before anything is proposed,
//   naming a budget that would do; `polly retry p1-t1 --budget '{tokens: N}'` continues it in the
//   same worktree to a ready PR, the new budget on the task and journaled (task.budget_changed);
// - p1-t2 from the dashboard in headless Chromium: the task page offers the form, the click
//   proposes the retry plan with the budget typed in, the plan page approves it, and `polly resume`
//   runs it to a ready PR.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { openRepoContext } from '../../brain/registry/repo-context.js';
import { createRepoUiSource } from '../../brain/ui/ui-source.js';
import { createUiServer, type UiServer } from '../../brain/ui/ui-server.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { keylessEnv, polly } from '../helpers/keyless-cli.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { chromiumPath, hasSystemPackages } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox and drives the dashboard in Chromium: skipped and
// listed without bubblewrap or chromium, a failure under CI=true (test/helpers/system-packages.ts).
const READY = hasSystemPackages(['bubblewrap', 'chromium'], import.meta.url);
const CHROMIUM = READY ? chromiumPath() : undefined;

const task = (key: string, what: string) => `  - key: ${key}
    title: Add ${what}()
    purpose: implement
    worker: claude-code
    reviewer: pi
    prompt: Add ${what}(xs) in src/${what}.js with a test in test/${what}.test.js.
    acceptance:
      commands: [node --test test/${what}.test.js]
      criteria: ["${what}() is tested"]
    budget: {tokens: 1}
`;
const PLAN = `goal: Add median() and mean()
tasks:
${task('t1', 'median')}${task('t2', 'mean')}`;

const indent = (text: string, n: number) =>
  text
    .split('\n')
    .map((l) => (l ? ' '.repeat(n) + l : l))
    .join('\n');

/** The implementer writes the function and its test, runs it, finishes; pi reviews clean. */
function session(what: string, body: string): string {
  const src = `export function ${what}(xs) {\n${body}\n}\n`;
  const test = `import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { ${what} } from '../src/${what}.js';\ntest('${what}', () => {\n  assert.equal(${what}([3, 1, 2]), 2);\n});\n`;
  return `  - name: implement-${what}
    match: {role: implement, contains: ["Add ${what}()"]}
    repeat_last: true
    turns:
      - steps:
          - write:
              path: src/${what}.js
              content: |
${indent(src, 16)}
          - write:
              path: test/${what}.test.js
              content: |
${indent(test, 16)}
          - run: node --test test/${what}.test.js
          - finish: "Added ${what}() with a test."
  - name: review-${what}
    match: {role: review, contains: ["Add ${what}()"]}
    turns:
      - steps:
          - finish: '{"blocking": [], "non_blocking": []}'
`;
}
const SCRIPT = `sessions:
${session('median', '  const s = [...xs].sort((a, b) => a - b);\n  return s[Math.floor(s.length / 2)];')}${session('mean', '  return xs.reduce((a, b) => a + b, 0) / xs.length;')}`;

type Task = { id: string; status: string; statusReason: string | null; worktree: string | null; budget?: unknown; planId: string; pr: { number: number } | null };
type Registry = { tasks: Record<string, Task>; plans: Record<string, { id: string; gate: string; decidedBy: string | null; tasks: Array<{ key: string; budget?: unknown }> }> };
const registry = (repo: string): Registry => JSON.parse(readFileSync(join(repo, '.polly/registry.json'), 'utf8')) as Registry;
const journal = (repo: string): Array<{ kind: string; data: Record<string, unknown> }> =>
  readFileSync(join(repo, '.polly/journal.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

describe.skipIf(!READY)('a task parked for its budget goes on with a higher one', () => {
  let browser: Browser | undefined;
  let ui: UiServer | undefined;
  afterAll(async () => {
    await ui?.close();
    await browser?.close();
    await stopTrackedBrains();
  });

  it('polly retry --budget and the dashboard form continue parked tasks in their worktrees to ready PRs; a spent budget is refused first', async () => {
    const { root, repo } = sampleProjectWithOrigin('polly-budget-retry-');
    const env = keylessEnv();
    expect((await polly(['init'], repo, env)).code).toBe(0);
    // The dashboard checks the repository's own config before it proposes (as polly retry does
    // without --script): as root (CI), claude-code needs the opt-in of a disposable machine, and
    // the pi reviewer of a budgeted task must be metered (the plan gate refuses a budget on pi with
    // no workers.pi.base_url: brain/plan/budgets.ts `unmeteredBudgets`). The --script commands point
    // it at the scripted server for their length; nothing calls this address.
    const config = join(repo, '.polly/config.yaml');
    const doc = parseDocument(readFileSync(config, 'utf8'));
    doc.setIn(['workers', 'claude-code', 'allow_root_sandbox'], true);
    doc.setIn(['workers', 'pi', 'base_url'], 'http://127.0.0.1:9/v1');
    writeFileSync(config, doc.toString());
    const plan = join(root, 'plan.yaml');
    writeFileSync(plan, PLAN);
    const scriptFile = join(root, 'script.yaml');
    writeFileSync(scriptFile, SCRIPT);

    const first = await polly(['try', plan, '--script', scriptFile, '--yes', '--json'], repo, env);
    expect(first.code, first.stderr).toBe(1);
    const parked = registry(repo).tasks;
    for (const id of ['p1-t1', 'p1-t2']) {
      expect(parked[id]?.status, first.stderr).toBe('parked');
      expect(parked[id]!.statusReason).toMatch(
        new RegExp(`^budget reached: the task budget \\(1 tokens\\): tokens \\d+ ≥ limit 1\\. .*polly retry ${id} --budget '\\{tokens: \\d+\\}'`),
      );
    }
    const worktree1 = parked['p1-t1']!.worktree;
    expect(worktree1).toBeTruthy();

    // Under the budget it already reached, the retry would stop before its first model call: refused, nothing proposed.
    const spent = await polly(['retry', 'p1-t1', '--script', scriptFile, '--yes'], repo, env);
    expect(spent.code, spent.stderr).toBe(1);
    expect(spent.stderr).toMatch(
      /task p1-t1 already reached its budget \(1 tokens: tokens \d+ ≥ limit 1, counted over every attempt so far\).*nothing was proposed.*polly retry p1-t1 --budget '\{tokens: \d+\}'/,
    );
    expect(Object.keys(registry(repo).plans)).toEqual(['p1']);
    // A malformed budget is bad input naming the value.
    const bad = await polly(['retry', 'p1-t1', '--budget', '{tokns: 5}'], repo, env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--budget "{tokns: 5}" is not a budget');

    const cont = await polly(['retry', 'p1-t1', '--budget', '{tokens: 50000000}', '--script', scriptFile, '--yes', '--json'], repo, env);
    expect(cont.stderr).toContain('retrying p1-t1 (parked: budget reached');
    expect(cont.stderr).toContain('budget 1 tokens → 50000000 tokens');
    expect(cont.code, cont.stderr).toBe(0);
    const t1 = registry(repo).tasks['p1-t1']!;
    expect(t1).toMatchObject({ status: 'ready', worktree: worktree1, budget: { tokens: 50000000 }, planId: 'p2' });
    expect(t1.pr).not.toBeNull();
    expect(registry(repo).plans.p2).toMatchObject({ gate: 'approved', tasks: [{ key: 't1', budget: { tokens: 50000000 } }] });
    const j1 = journal(repo);
    expect(j1.filter((e) => e.kind === 'task.retried').map((e) => e.data)).toEqual([expect.objectContaining({ taskId: 'p1-t1', planId: 'p2', previousStatus: 'parked' })]);
    expect(j1.filter((e) => e.kind === 'task.budget_changed').map((e) => e.data)).toEqual([{ taskId: 'p1-t1', planId: 'p2', from: { tokens: 1 }, to: { tokens: 50000000 } }]);

    // p1-t2 from the dashboard: the task page's form, then the plan gate.
    if (!CHROMIUM) throw new Error('chromium is not installed (CI installs it: .ci/run)');
    const ctx = await openRepoContext(repo, env);
    ui = await createUiServer(
      { source: createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config }), user: 'human:tester (polly ui)' },
      { pollMs: 100 },
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(ui.loginUrl);
    await page.goto(`${page.url()}tasks/p1-t2`);
    await page.locator('#retry').waitFor();
    expect(await page.locator('#retry').textContent()).toContain("polly retry p1-t2 --budget '{tokens:");
    expect(Number(await page.locator('#retry-tokens').inputValue())).toBeGreaterThan(1);
    await page.locator('#retry-tokens').fill('60000000');
    await page.locator('#retry-budget').click();
    await page.waitForURL(/\/plans\/p3\?notice=/, { timeout: 30_000 }).catch(async (error: Error) => {
      throw new Error(`${error.message}; the page shows ${JSON.stringify((await page.locator('body').textContent())?.slice(0, 800))}`);
    });
    expect(await page.locator('p.notice').first().textContent()).toContain('Retry plan p3 proposed for p1-t2');
    expect(await page.locator('#plan-tasks').textContent()).toContain('60000000 tokens');
    expect(registry(repo).plans.p3).toMatchObject({ gate: 'pending', tasks: [{ key: 't2', budget: { tokens: 60000000 } }] });
    // No Brain runs now (the last command's ended with it): the page says what starts one.
    await Promise.all([page.waitForURL(/\/plans\/p3\?notice=/), page.locator('#approve').click()]);
    expect(await page.locator('p.notice').first().textContent()).toBe('Plan p3 is approved, but no Brain runs: nothing of it runs until polly resume p3 starts one.');
    expect(registry(repo).plans.p3).toMatchObject({ gate: 'approved', decidedBy: 'human:tester (polly ui)' });

    const resumed = await polly(['resume', 'p3', '--script', scriptFile], repo, env);
    expect(resumed.code, resumed.stderr).toBe(0);
    const t2 = registry(repo).tasks['p1-t2']!;
    expect(t2).toMatchObject({ status: 'ready', worktree: parked['p1-t2']!.worktree, budget: { tokens: 60000000 }, planId: 'p3' });
    expect(
      journal(repo)
        .filter((e) => e.kind === 'task.budget_changed' && e.data.taskId === 'p1-t2')
        .map((e) => e.data),
    ).toEqual([{ taskId: 'p1-t2', planId: 'p3', from: { tokens: 1 }, to: { tokens: 60000000 } }]);
  }, 900_000);
});
