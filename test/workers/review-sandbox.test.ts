/**
 * "A reviewer given a diff cannot name the worktree's path": the review sandbox (a scratch dir
 * with DIFF.patch and CONTRACT.md only), and the real Claude Code as the reviewer through
 * dispatch_review: nothing it is sent names the worktree, and its write attempts — by Bash and by
 * a write tool, into its scratch dir and into the worktree by absolute path — are denied, leaving
 * no trace.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { isPollyError } from '../../brain/core/errors.js';
import { createLocalForge } from '../../brain/forge/local-forge.js';
import { createDispatchReviewTool } from '../../brain/task-tools/dispatch-review.js';
import { createOpenDraftPrTool } from '../../brain/task-tools/open-draft-pr.js';
import { createPushTool } from '../../brain/task-tools/push.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import type { AgentEvent } from '../../workers/agents/agent-adapter.js';
import { createGitRunner } from '../../workers/git/git.js';
import { createReviewSandbox, produceReviewDiff, WORKTREE_PLACEHOLDER } from '../../workers/review-sandbox.js';
import { recordingSupervisor } from '../helpers/recording-supervisor.js';
import { createWorkerSupervisor } from '../../workers/supervisor/worker-supervisor.js';
import { git } from '../helpers/git-repo.js';
import { createGreenTask, createPrStepSetting, scriptedAgentEnv, testConfig, toolRunner } from '../helpers/pr-step-fixture.js';

const servers: ScriptedModelServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

describe('review sandbox', () => {
  test('a scratch dir under the OS temp dir with only DIFF.patch and CONTRACT.md; neither they, the prompt nor the dir path name the worktree', async () => {
    const s = createPrStepSetting({ 'README.md': '# x\n', 'src/add.js': 'export const add = 0;\n' });
    const task = await createGreenTask(s, 'sb1', { 'src/add.js': 'export const add = (a, b) => a + b;\n' });
    const wt = task.worktree!;
    // The change and a failing check quote the worktree path: both must reach the reviewer redacted.
    const diff = await produceReviewDiff({ repoRoot: s.repo.dir, baseBranch: 'main', head: 'polly/sb1', git: createGitRunner() });
    expect(diff.diff).toBe(`${git(s.repo.dir, ['diff', '--no-renames', 'origin/main...polly/sb1'])}\n`);
    const quoted = `${diff.diff}+// built in ${wt}/dist\n`;
    const checks = [...task.checks, { command: 'npm test', exitCode: 1, timedOut: false, durationMs: 900, output: `Error: cannot find ${wt}/dist/add.js` }];
    const sb = await createReviewSandbox({ task: { ...task, checks }, diff: quoted, round: 2 });
    try {
      expect(sb.dir.startsWith(tmpdir())).toBe(true);
      expect(sb.dir.startsWith(s.repo.dir)).toBe(false);
      expect(sb.dir).not.toContain(wt);
      expect(basename(sb.dir)).not.toContain(basename(wt));
      expect(readdirSync(sb.dir).sort()).toEqual(['CONTRACT.md', 'DIFF.patch']);
      const patch = readFileSync(sb.files.diff, 'utf8');
      const contract = readFileSync(sb.files.contract, 'utf8');
      for (const text of [patch, contract, sb.prompt]) {
        expect(text).not.toContain(wt);
        expect(text).not.toContain(`.worktrees/${basename(wt)}`);
      }
      expect(patch).toContain(`+// built in ${WORKTREE_PLACEHOLDER}/dist`);
      expect(patch.startsWith(diff.diff)).toBe(true);
      expect(contract).toContain(`cannot find ${WORKTREE_PLACEHOLDER}/dist/add.js`);
      expect(contract).toContain('add(a, b) returns the sum');
      expect(contract).toContain('`npm test`: failed (exit 1)');
      expect(sb.prompt.split('\n')[0]).toBe('[polly task=sb1 role=review]');
      expect(sb.prompt).toContain('review round 2');
      expect(sb.prompt).toContain('"non_blocking"');
      expect(sb.prompt).toMatch(/Do NOT edit, write, create or delete any file/);
      expect(statSync(sb.files.diff).mode & 0o222).toBe(0);
    } finally {
      await sb.dispose();
    }
    expect(existsSync(sb.dir)).toBe(false);

    // A root inside the worktree is refused.
    const inside = await createReviewSandbox({ task, diff: diff.diff, stateRoot: join(wt, 'tmp') }).catch((e: unknown) => e);
    expect(isPollyError(inside) && inside.code).toBe('bad_input');
    const inRepo = await createReviewSandbox({ task, diff: diff.diff, repoRoot: s.repo.dir, stateRoot: join(s.repo.dir, '.polly') }).catch((e: unknown) => e);
    expect(isPollyError(inRepo) && inRepo.code).toBe('bad_input');
    expect((inRepo as Error).message).toMatch(/inside the repository/);
  });

  test('the real Claude Code as reviewer: its requests never name the worktree; Bash and Write attempts into the scratch dir and the worktree are denied and leave no trace, and its Write calls (a tool the review role lacks) fail the task by name', async () => {
    const s = createPrStepSetting({ 'README.md': '# x\n', 'src/add.js': 'export const add = 0;\n' });
    const task = await createGreenTask(s, 'c1', { 'src/add.js': 'export const add = (a, b) => a + b;\n' }, { worker: 'codex', reviewer: 'claude-code' });
    const wt = task.worktree!;
    const script = parseModelScript(`
sessions:
  - name: review-c1
    match: {task: c1, role: review}
    turns:
      - steps:
          - run: cat DIFF.patch
          - run: ls -A
          - run: echo hacked > NOTES.md
          - write: {path: NOTES.md, content: "notes\\n"}
          - run: echo hacked >> ${wt}/src/add.js
          - write: {path: ${wt}/REVIEW.md, content: "notes\\n"}
          - finish: '{"blocking": [], "non_blocking": []}'
`);
    const server = await startScriptedModelServer({ script });
    servers.push(server);
    const config = testConfig(server.url);
    const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store });
    const supervisor = recordingSupervisor(createWorkerSupervisor({ repoRoot: s.repo.dir, store: s.store, config, stateRoot: join(s.outside, 'workers') }));
    const runner = toolRunner(s, { forge, supervisor, config, agentEnv: scriptedAgentEnv(server.url, join(s.outside, 'home')) });
    let scratch = '';
    const review = createDispatchReviewTool({ keepSandbox: true, onSandbox: (sb) => (scratch = sb.dir) });
    expect((await runner.run(createPushTool(), 'c1', 'o1')).outcome).toBe('ok');
    expect(await runner.run(createOpenDraftPrTool(), 'c1', 'o2')).toMatchObject({ outcome: 'ok', data: { reviewer: 'claude-code' } });

    const r = await runner.run(review, 'c1', 'o3');
    const result = supervisor.results[0];
    // Write is no tool of the review role: calling it is an attempt outside the role, named in the failure.
    expect(r.outcome, `${r.note}\n${result?.stderr ?? ''}`).toBe('failure');
    expect(r.note).toMatch(
      /the reviewer called tools its read-only role does not have during the claude-code review turn: Write \{"file_path":"[^"]*\/NOTES\.md".*\| Write \{"file_path":"[^"]*\/REVIEW\.md"/,
    );
    expect(supervisor.requests[0]).toMatchObject({ harness: 'claude-code', role: 'review', purpose: 'review', cwd: scratch });

    const results = result!.events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
    expect(results.map((e) => e.isError)).toEqual([false, false, true, true, true, true]);
    expect(results[0]!.output).toContain('+export const add = (a, b) => a + b;');
    expect(results[1]!.output.trim().split(/\s+/)).toEqual(['CONTRACT.md', 'DIFF.patch']);
    for (const denied of [results[2]!, results[4]!]) {
      expect(denied.output).toMatch(/^Polly gate: denied \(purpose_guard\.read_only\)/);
      expect(denied.output).toMatch(/review role is read-only/);
    }
    for (const refused of [results[3]!, results[5]!]) expect(refused.output).toMatch(/Write/);

    // Nothing changed on disk: the scratch dir still holds its two files, the worktree is clean.
    expect(readdirSync(scratch).sort()).toEqual(['CONTRACT.md', 'DIFF.patch']);
    expect(readFileSync(join(wt, 'src/add.js'), 'utf8')).toBe('export const add = (a, b) => a + b;\n');
    expect(existsSync(join(wt, 'REVIEW.md'))).toBe(false);
    expect(git(wt, ['status', '--porcelain'])).toBe('');

    // Every request sent before the script itself typed the worktree path (step 5, so the session's
    // 6th request) is free of it: prompt, system prompt, tool results, listings.
    const session = server.requests.filter((q) => q.session === 'review-c1');
    expect(session.length).toBe(7);
    expect(JSON.stringify(session[5]!.body)).toContain(wt);
    const before = server.requests.filter((q) => q.id < session[5]!.id);
    expect(before.length).toBeGreaterThanOrEqual(5);
    const text = JSON.stringify(before.map((q) => q.body));
    expect(text).toContain('DIFF.patch');
    expect(text).toContain(scratch);
    expect(text).not.toContain(wt);
    expect(text).not.toContain(`.worktrees/c1`);
  }, 90_000);
});
