// An acceptance command that is not found (exit 127: not installed, or hidden by the sandbox like a
// pyenv shim under HOME) fails the task at once, naming the command and what to do: the agent's
// attempts are not spent on the environment. The real run_acceptance tool in a real worktree (in
// Polly's sandbox where bubblewrap works), then the real send_followup, which must not resume it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalForge } from '../../brain/forge/local-forge.js';
import { COMMAND_NOT_FOUND, commandNotFoundReason, runAcceptanceTool } from '../../brain/task-tools/run-acceptance.js';
import { sendFollowup } from '../../brain/task-tools/send-followup.js';
import { createGreenTask, createPrStepSetting, noAgents, testConfig, toolRunner } from '../helpers/pr-step-fixture.js';

describe('an acceptance command that is not found', () => {
  it('fails the task at once with the command, exit 127 and what to do; no feedback, the agent is not resumed', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    await createGreenTask(s, 'nf1', { 'a.txt': 'a\n' });
    await s.store.update((d) => {
      d.tasks.nf1!.acceptance.commands = ['true', 'polly-no-such-program -m pytest'];
      d.tasks.nf1!.sessionId = 'session-1';
    });
    const config = testConfig(null);
    const tools = toolRunner(s, { forge: createLocalForge({ repoRoot: s.repo.dir, store: s.store }), supervisor: noAgents, config, agentEnv: {} });
    const before = (await s.store.read()).tasks.nf1!.attempts;
    const out = await tools.run(runAcceptanceTool, 'nf1', 'o-acc');
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    const task = (await s.store.read()).tasks.nf1!;
    expect(task.status).toBe('failed');
    expect(task.statusReason).toMatch(/^acceptance command "polly-no-such-program -m pytest" exited 127 \(command not found: .*polly-no-such-program.*not found\): /);
    expect(task.statusReason).toContain('no agent attempt was spent');
    expect(task.statusReason).toContain('Run polly doctor');
    expect(out.note).toBe(`run_acceptance: ${task.statusReason}`);
    expect(task.feedback).toBeNull();
    expect(task.attempts).toBe(before);
    expect(task.checks.map((c) => [c.command, c.exitCode])).toEqual([
      ['true', 0],
      ['polly-no-such-program -m pytest', COMMAND_NOT_FOUND],
    ]);
    const journal = readFileSync(join(s.repo.dir, '.polly', 'journal.jsonl'), 'utf8');
    expect(journal).toMatch(/"task\.checks".*"notFound":true/);
    // The workflow's TESTS_RED emits send_followup: a failed task is not resumed (noAgents throws if it were).
    const followup = await tools.run(sendFollowup, 'nf1', 'o-fix');
    expect(followup).toMatchObject({ outcome: 'failure', permanent: true });
    expect(followup.note).toContain('is failed');
  }, 60_000);

  it("says where to look: HOME hidden by the sandbox when confined, the PATH when not; quotes the shell's line", () => {
    const result = { command: 'python -m pytest', output: 'collecting\nsh: 1: python: not found\n' };
    const confined = commandNotFoundReason(result, true);
    expect(confined).toMatch(/^acceptance command "python -m pytest" exited 127 \(command not found: sh: 1: python: not found\): /);
    expect(confined).toContain("(pyenv, asdf or nvm shims), which Polly's sandbox hides");
    expect(commandNotFoundReason(result, false)).toContain('not installed or not on the PATH Polly passes to commands');
    expect(commandNotFoundReason({ command: 'x\u001b[31m', output: '' }, false)).toMatch(/^acceptance command "x\\x1b\[31m" exited 127 \(command not found\): /);
  });
});
