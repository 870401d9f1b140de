// `polly status` through the real CLI, over registries written by the real store.
import { addTurn } from '../../../brain/registry/cost-ledger.js';
import { mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { formatTable } from '../../../brain/commands/table.js';
import { reasonLine } from '../../../brain/registry/status-report.js';
import { cannotRunReason } from '../../../brain/task-tools/run-acceptance.js';
import { classifyCannotRun } from '../../../workers/check-runner.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { runCli } from '../../helpers/registry-cli.js';
import { sampleTask } from '../../helpers/registry-sample.js';

describe('polly status', () => {
  it('before init: not_initialized (exit 1) telling to run polly init', () => {
    const repo = createTestRepo();
    const r = runCli(['status'], repo.dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Run "polly init"');
    expect(JSON.parse(runCli(['status', '--json'], repo.dir).stdout).error.code).toBe('not_initialized');
  });

  it('after init: --json is valid JSON with empty sections', () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const r = runCli(['status', '--json'], repo.dir);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      repoRoot: repo.dir,
      health: { state: 'none', pid: null, since: null, heartbeatAt: null, waiting: { tasks: 0, plans: 0 }, line: 'Brain not running' },
      brain: null,
      brainGone: null,
      unattended: [],
      goals: [],
      plans: [],
      tasks: [],
      workers: [],
    });
    const human = runCli(['status'], repo.dir);
    expect(human.code).toBe(0);
    // The Brain's health is the first line (issue 32 item 1).
    expect(human.stdout.split('\n')[0]).toBe(`Polly in ${repo.dir} · Brain not running`);
    expect(human.stdout).toContain('Tasks (0)');
  });

  it('validates the config: a misspelt key is reported with file:line:column (exit 2)', () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const path = join(repo.dir, '.polly/config.yaml');
    writeFileSync(path, readFileSync(path, 'utf8').replace('max_attempts:', 'max_atempts:'));
    const r = runCli(['status'], repo.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`${path}:\\d+:\\d+: acceptance\\.max_atempts: unknown key "max_atempts"`));
  });

  it('shows goals, plans, tasks (with worker, reviewer, branch, PR) and workers', async () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    await store.update((d) => {
      d.goals.g1 = { id: 'g1', text: 'add a --verbose flag', createdAt: '2026-11-29T10:00:00.000Z', status: 'running', planIds: ['p1'] };
      d.plans.p1 = {
        id: 'p1',
        goalId: 'g1',
        createdAt: '2026-11-29T10:01:00.000Z',
        tasks: [],
        admission: { admitted: true, line: 'admitted: p1', violations: [], pathsExplored: 4, statesSeen: 9 },
        gate: 'approved',
        askedAt: null,
        decidedAt: null,
        decidedBy: 'me',
      };
      for (const id of ['t10', 't2']) d.tasks[id] = sampleTask(id);
      d.tasks.t2!.status = 'pr_open';
      d.tasks.t2!.pr = { forge: 'local', number: 3, url: 'local:3', state: 'draft' };
      // A pi implementer turn that reported its cost and a codex review turn that could not (codex reports none).
      const at = '2026-11-29T10:04:00.000Z';
      d.tasks.t2!.ledger = addTurn(
        addTurn(undefined, {
          at,
          role: 'implement',
          harness: 'pi',
          workerId: 'w0',
          orderId: 'o1',
          status: 'ok',
          reported: true,
          inputTokens: 1200,
          outputTokens: 300,
          cacheReadTokens: 200,
          cacheWriteTokens: 0,
          costUsd: 0.0025,
        }),
        {
          at,
          role: 'review',
          harness: 'codex',
          workerId: 'w9',
          orderId: 'o2',
          status: 'ok',
          reported: true,
          inputTokens: 400,
          outputTokens: 100,
          cacheReadTokens: 0,
          cacheWriteTokens: null,
          costUsd: null,
        },
      );
      d.tasks.t2!.budget = { tokens: 5000 };
      d.pullRequests['3'] = {
        number: 3,
        taskId: 't2',
        title: 't2',
        body: '',
        head: 'polly/t2',
        base: 'main',
        headCommit: 'b'.repeat(40),
        state: 'draft',
        reviews: [
          { event: 'REQUEST_CHANGES', body: 'rename it', comments: [{ file: 'src/a.ts', line: 4, message: 'rename it' }], at: '2026-11-29T10:04:00.000Z', author: 'human' },
        ],
        mergeability: { state: 'conflicts', files: ['src/a.ts'], baseCommit: 'c'.repeat(40), headCommit: 'b'.repeat(40), checkedAt: '2026-11-29T10:05:00.000Z' },
        createdAt: '2026-11-29T10:03:00.000Z',
        updatedAt: '2026-11-29T10:05:00.000Z',
      };
      // A merged local PR (its last merge check was clean) and a merged GitHub PR the watcher never saw:
      // both end states, not "merge unknown".
      d.tasks.t3 = sampleTask('t3');
      d.tasks.t3.status = 'merged';
      d.tasks.t3.pr = { forge: 'local', number: 4, url: 'local:4', state: 'merged' };
      d.pullRequests['4'] = {
        ...d.pullRequests['3'],
        number: 4,
        taskId: 't3',
        head: 'polly/t3',
        state: 'merged',
        reviews: [],
        mergeability: { state: 'clean', files: [], baseCommit: 'c'.repeat(40), headCommit: 'b'.repeat(40), checkedAt: '2026-11-29T10:05:00.000Z' },
      };
      // A failed task: its reason's first line shows in the human view (bounded: the end, where the fix is, stays),
      // with a worker's terminal escape shown, never obeyed.
      d.tasks.t5 = sampleTask('t5');
      d.tasks.t5.status = 'failed';
      d.tasks.t5.statusReason = `the worker failed: agent_refused: \u001b[31m${'x'.repeat(400)} set allow_root_sandbox: true in .polly/config.yaml\nsecond line`;
      d.tasks.t4 = sampleTask('t4');
      d.tasks.t4.status = 'merged';
      d.tasks.t4.pr = { forge: 'github', number: 7, url: 'https://github.com/o/r/pull/7', state: 'merged' };
      d.workers.w1 = {
        id: 'w1',
        taskId: 't10',
        harness: 'claude-code',
        pid: process.pid,
        pgid: process.pid,
        sessionId: 's-1',
        startedAt: '2026-11-29T10:02:00.000Z',
        heartbeatAt: '2026-11-29T10:03:00.000Z',
        supervisor: null,
      };
      // A worker that has exited is history, not a live worker.
      d.workers.w0 = {
        id: 'w0',
        taskId: 't2',
        harness: 'pi',
        pid: 2147483640,
        pgid: 2147483640,
        sessionId: null,
        startedAt: '2026-11-29T10:00:00.000Z',
        heartbeatAt: '2026-11-29T10:01:00.000Z',
        supervisor: null,
      };
    });
    const json = JSON.parse(runCli(['status', '--json'], repo.dir).stdout);
    expect(json.tasks.map((t: { id: string }) => t.id)).toEqual(['t2', 't3', 't4', 't5', 't10']);
    expect(json.tasks[1].prStatus).toEqual({ review: 'none', checks: 'none', conflicts: 'merged', conflictFiles: [] });
    expect(json.tasks[2].prStatus).toEqual({ review: 'none', checks: 'none', conflicts: 'merged', conflictFiles: [] });
    expect(json.tasks[0]).toEqual({
      id: 't2',
      title: 'task t2: make the widget configurable',
      purpose: 'implement',
      worker: 'claude-code',
      reviewer: 'codex',
      status: 'pr_open',
      branch: 'polly/t2',
      worktree: '.worktrees/t2',
      // No remote host holds its worktree (workers.hosts): this machine only, and no HOST column below.
      host: null,
      pr: { forge: 'local', number: 3, url: 'local:3', state: 'draft' },
      prStatus: { review: 'changes_requested', checks: 'none', conflicts: 'conflicts', conflictFiles: ['src/a.ts'] },
      statusReason: null,
      budget: { tokens: 5000 },
      spent: {
        totals: { turns: 2, inputTokens: 1600, outputTokens: 400, cacheReadTokens: 200, cacheWriteTokens: 0, costUsd: 0.0025, unknownCostTurns: 1 },
        cost: { usd: 0.0025, complete: false },
        byRole: {
          implement: { turns: 1, inputTokens: 1200, outputTokens: 300, cacheReadTokens: 200, cacheWriteTokens: 0, costUsd: 0.0025, unknownCostTurns: 0 },
          review: { turns: 1, inputTokens: 400, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, unknownCostTurns: 1 },
        },
      },
    });
    expect(json.tasks[1].spent.cost).toEqual({ usd: 0, complete: true });
    expect(json.plans).toEqual([
      {
        id: 'p1',
        goalId: 'g1',
        gate: 'approved',
        admitted: true,
        tasks: 0,
        createdAt: '2026-11-29T10:01:00.000Z',
        budgets: null,
        // The plan's (and its goal's) roll-up: the sum of its tasks' ledgers (t10 has spent nothing).
        spent: { totals: json.tasks[0].spent.totals, cost: { usd: 0.0025, complete: false } },
      },
    ]);
    expect(json.goals[0].spent).toEqual(json.plans[0].spent);
    expect(json.goals[0]).toMatchObject({ id: 'g1', status: 'running', text: 'add a --verbose flag' });
    expect(json.workers).toHaveLength(1);
    expect(json.workers[0]).toMatchObject({ id: 'w1', taskId: 't10', harness: 'claude-code', pid: process.pid });
    const out = runCli(['status'], repo.dir).stdout;
    const taskLines = out.split('\n').filter((l) => /^\s+(ID\s+TITLE|t2\s|t10\s)/.test(l));
    expect(out).toMatch(/\n\s+t3\s.*#4 merged\s+review none, checks none, merged\n/);
    expect(out).toMatch(/\n\s+t4\s.*#7 merged\s+review none, checks none, merged\n/);
    expect(out).not.toContain('merge unknown');
    expect(taskLines[0]).toMatch(/ID\s+TITLE\s+PURPOSE\s+WORKER\s+REVIEWER\s+STATUS\s+SPENT\s+BUDGET\s+BRANCH\s+PR\s+PR STATE$/);
    expect(taskLines[1]).toMatch(
      /^\s+t2\s+task t2: make the widget configurab…\s+implement\s+claude-code\s+codex\s+pr_open\s+2000 tok, ≥ \$0\.0025 \(some turns unknown\)\s+5000 tokens\s+polly\/t2\s+#3 draft\s+review changes_requested, checks none, conflicts: src\/a\.ts$/,
    );
    expect(taskLines[2]).toMatch(/t10 .* queued\s+-\s+-\s+polly\/t10\s+-\s+-$/);
    expect(out).toContain('Plans (1)');
    // No Brain runs (as after the registry restore a registry_corrupt error advises): the tasks nothing moves are named with the command.
    expect(json.unattended).toEqual([
      { id: 't2', status: 'pr_open' },
      { id: 't10', status: 'queued' },
    ]);
    expect(out).toContain('2 unfinished tasks with no Brain (t2 pr_open, t10 queued): run polly resume to adopt their workers and finish them');
    const why = out.split('\n').slice(out.split('\n').findIndex((l) => l.startsWith('Why')));
    expect(why[0]).toBe('Why (the first line of each reason, and its fix; polly status --json has them whole)');
    expect(why[1]).toMatch(/^ {2}t5 failed: the worker failed: agent_refused: \\x1b\[31mx+ … x+ set allow_root_sandbox: true in \.polly\/config\.yaml$/);
    expect(why[1]!.length).toBeLessThanOrEqual(2 + 't5 failed: '.length + 300 + 12);
    expect(out).not.toContain('second line');
    expect(out).not.toContain('\u001b');
    // --watch is for a person, --json for a program: not both
    const both = runCli(['status', '--json', '--watch'], repo.dir);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--watch and --json together');
    expect(out).toMatch(/p1\s+g1\s+yes\s+approved\s+0/);
  });

  it('a corrupt registry fails with registry_corrupt naming the backup; nothing is reset', async () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    await store.update((d) => void (d.tasks.t1 = sampleTask('t1')));
    writeFileSync(store.paths.registry, '{"schemaVersion": 1, "goals": {');
    const r = runCli(['status', '--json'], repo.dir);
    expect(r.code).toBe(1);
    const err = JSON.parse(r.stdout).error;
    expect(err.code).toBe('registry_corrupt');
    expect(err.backup).toBe(store.paths.backup);
    expect(r.stderr).toContain(`cp '${store.paths.backup}' '${store.paths.registry}'`);
    expect(readFileSync(store.paths.registry, 'utf8')).toBe('{"schemaVersion": 1, "goals": {');
  });

  it('rejects unknown flags and extra arguments with exit 2', () => {
    const repo = createTestRepo();
    mkdirSync(join(repo.dir, '.polly'));
    expect(runCli(['status', '--wacth'], repo.dir)).toMatchObject({ code: 2 });
    expect(runCli(['status', '--wacth'], repo.dir).stderr).toContain('"--wacth"');
    expect(runCli(['status', 'now'], repo.dir).code).toBe(2);
  });
});

describe("a reason's line in polly status", () => {
  it('keeps the fix whole: a long first line loses its middle before "Fix:", never the fix; a setup failure shows its Fix line', () => {
    // A real reason: an acceptance command whose runner is missing (about 700 characters).
    const result = { command: 'python -m pytest', exitCode: 127, timedOut: false, output: 'sh: 1: python: not found\n' };
    const reason = cannotRunReason(result, classifyCannotRun(result)!, true);
    const fix = reason.slice(reason.indexOf('Fix: '));
    expect(reason.length).toBeGreaterThan(300 + 40);
    const line = reasonLine(reason);
    expect(line.endsWith(fix)).toBe(true);
    expect(line).toMatch(/^acceptance command "python -m pytest" cannot run here/);
    // A setup failure: the first line, then its Fix line (the output between is --json's).
    const setup =
      'worktrees.setup "npm ci" exited 1; the agent was not started. Full log: /r/x.log\nLast lines:\nnpm error code EAI_AGAIN\nFix the command in .polly/config.yaml (worktrees.setup) or the project, then run the task again: polly retry p1-t1';
    expect(reasonLine(setup)).toBe(
      'worktrees.setup "npm ci" exited 1; the agent was not started. Full log: /r/x.log Fix the command in .polly/config.yaml (worktrees.setup) or the project, then run the task again: polly retry p1-t1',
    );
    // No fix: the first line, its middle elided.
    expect(reasonLine(`${'a'.repeat(400)} end`)).toMatch(/^a+ … a+ end$/);
  });
});

describe('formatTable', () => {
  it('aligns columns, cuts long cells with an ellipsis and prints - for empty cells', () => {
    const lines = formatTable(
      [
        { header: 'ID', value: (r: { id: string; t: string | null }) => r.id },
        { header: 'TITLE', value: (r) => r.t, max: 8 },
      ],
      [
        { id: 't1', t: 'a very long title' },
        { id: 't22', t: null },
      ],
    );
    expect(lines).toEqual(['ID   TITLE', 't1   a very …', 't22  -']);
  });
});
