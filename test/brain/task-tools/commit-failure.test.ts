// Green checks whose commit git refuses: the task fails as a staging failure naming git's command
// and output, never as red acceptance; no attempt is spent and the agent is not told its green code
// is red (issue 35: "acceptance red after 3 attempts" and "has no feedback to send" on green code).
// The real run_acceptance tool in a real worktree; git refuses for real: a `.gitattributes` the
// worker wrote asks for an encoding its file's bytes are not in (gitattributes(5) working-tree-encoding).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { runAcceptanceTool } from '../../../brain/task-tools/run-acceptance.js';
import { sendFollowup } from '../../../brain/task-tools/send-followup.js';
import { createGreenTask, createPrStepSetting, noAgents, testConfig, toolRunner } from '../../helpers/pr-step-fixture.js';

describe('a green task whose commit git refuses', () => {
  it('fails as a staging failure with the git command and output; no attempt, no feedback, the agent is not resumed', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    const t = await createGreenTask(s, 'cf1', { 'a.txt': 'a\n' });
    // What the worker left after the commit above: uncommitted, for Polly's commit.
    writeFileSync(join(t.worktree!, '.gitattributes'), 'notes.txt working-tree-encoding=UTF-16\n');
    writeFileSync(join(t.worktree!, 'notes.txt'), 'abc');
    await s.store.update((d) => {
      d.tasks.cf1!.acceptance.commands = ['true'];
      d.tasks.cf1!.sessionId = 'session-1';
    });
    const tools = toolRunner(s, { forge: createLocalForge({ repoRoot: s.repo.dir, store: s.store }), supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    const before = (await s.store.read()).tasks.cf1!;
    const out = await tools.run(runAcceptanceTool, 'cf1', 'o-acc');
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    const task = (await s.store.read()).tasks.cf1!;
    expect(task.status).toBe('failed');
    expect(task.statusReason).toMatch(/^staging failed: the acceptance checks were green, but Polly could not commit the work \(git add .*exit 128: .*UTF-16/);
    expect(task.statusReason).toContain('no agent attempt was spent');
    expect(task.statusReason).toContain('polly retry cf1');
    expect(task.statusReason).not.toContain('acceptance red');
    expect(task.feedback).toBeNull();
    expect(task.attempts).toBe(before.attempts);
    expect(task.headCommit).toBe(before.headCommit);
    expect(task.checks.map((c) => [c.command, c.exitCode])).toEqual([['true', 0]]);
    const journal = readFileSync(join(s.repo.dir, '.polly', 'journal.jsonl'), 'utf8');
    expect(journal).toMatch(/"task\.commit_failed".*"exitCode":128/);
    // The workflow's failure branch emits send_followup: the failed task is not resumed (noAgents throws if it were).
    const followup = await tools.run(sendFollowup, 'cf1', 'o-fix');
    expect(followup).toMatchObject({ outcome: 'failure', permanent: true });
    expect(followup.note).toContain('is failed');
  }, 60_000);
});
