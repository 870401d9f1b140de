/**
 * Enforcement in Codex: the real `codex` CLI (0.171.0) with Polly's gate installed by
 * `prepareGate('codex', …)` (a PreToolUse command hook, the git/gh shims, the workspace-write
 * sandbox), driven by the scripted model server. The model tries a force-push, a `gh pr merge`,
 * a write into `.git/hooks/`, and a plain push of its own branch: the first three come back to the
 * model as the gate's denials and leave no trace; the last one runs.
 *
 * Needs the built gate (`dist/gate/*.js`): `npm test` builds first.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareGate } from '../../../gate/hooks/harness-gate.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { createCodexAdapter } from '../../../workers/agents/codex-adapter.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';
import { repoStateDir } from '../../../workers/sandbox/agent-state-dir.js';

const SCRIPT = `
sessions:
  - name: gate
    match: {task: g1, role: implement}
    turns:
      - steps:
          - run: "git push --force origin polly/g1"
          - run: "gh pr merge 1 --squash"
          - write: {path: .git/hooks/pre-commit, content: "#!/bin/sh\\nexit 0\\n"}
          - run: "git ls-remote origin; test -e .git/hooks/pre-commit && echo HOOK-PRESENT || echo NO-HOOK"
          - run: "git push origin polly/g1"
          - finish: "Tried everything."
`;

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
});
afterAll(async () => server?.close());

describe('the gate inside the real codex', () => {
  it('denies force-push, gh pr merge and a .git/hooks write with the gate reason, and lets a plain push of the task branch run', async () => {
    const repo = createTestRepo();
    repo.git(['checkout', '-q', '-b', 'polly/g1']);
    repo.write('feature.txt', 'feature\n');
    const head = repo.commitAll('feature');
    const journal = join(repo.root, 'gate-decisions.jsonl');
    const gate = await prepareGate('codex', {
      role: 'implement',
      context: { repoRoot: repo.dir, worktree: repo.dir, branch: 'polly/g1', defaultBranch: 'main', home: homedir() },
      stateDir: join(repoStateDir(repo.root), 'gate-enforcement-codex', 'gate'),
      journalPath: journal,
    });
    const adapter = createCodexAdapter({
      command: 'codex',
      model: 'gpt-5.5',
      provider: { id: 'scripted', base_url: `${server.url}/v1`, env_key: 'POLLY_SCRIPTED_KEY' },
    });
    const before = server.requests.length;
    const r = await adapter.start({
      cwd: repo.dir,
      prompt: '[polly task=g1 role=implement] Ship it.',
      resumeSessionId: null,
      model: null,
      readOnly: false,
      gate: { args: gate.args, env: gate.env },
      env: { ...(gitTestEnv() as Record<string, string>), POLLY_SCRIPTED_KEY: 'dummy-key' },
      // outside the OS temp dir: codex refuses to start its sandbox helper when CODEX_HOME is under it
      stateDir: join(repoStateDir(repo.root), 'gate-enforcement-codex'),
      timeoutMs: 60_000,
    }).result;
    expect(r.status, r.message ?? r.stderr).toBe('ok');
    expect(r.finalText).toBe('Tried everything.');

    // What came back to the model after each step (request k+1 carries step k's tool result).
    const turns = server.requests.slice(before).filter((q) => q.session === 'gate');
    expect(turns).toHaveLength(6);
    const resultOf = (step: number) => turns[step + 1]!.view!.lastToolResult!;
    for (const step of [0, 1, 2]) {
      const res = resultOf(step);
      expect(res.isError, res.text).toBe(true);
      expect(res.text).toMatch(/blocked by PreToolUse hook: Polly gate: denied \(.+\): .+/);
    }
    expect(resultOf(0).text).toContain('git push --force origin polly/g1');
    expect(resultOf(1).text).toContain('gh pr merge 1 --squash');
    expect(resultOf(2).text).toContain('.git/hooks/pre-commit');
    // No trace: before the plain push the remote had no polly/g1 and no hook was written.
    expect(resultOf(3).isError).toBe(false);
    expect(resultOf(3).text).toContain('NO-HOOK');
    expect(resultOf(3).text).toContain('refs/heads/main');
    expect(resultOf(3).text).not.toContain('refs/heads/polly/g1');
    expect(existsSync(join(repo.dir, '.git', 'hooks', 'pre-commit'))).toBe(false);
    // The plain push ran: the remote has the branch at the task's commit.
    expect(resultOf(4).isError, resultOf(4).text).toBe(false);
    expect(repo.git(['--git-dir', repo.remote, 'rev-parse', 'refs/heads/polly/g1'])).toBe(head);
    expect(repo.git(['--git-dir', repo.remote, 'rev-parse', 'refs/heads/main'])).not.toBe(head);

    // Every decision was journaled: the three denials among them.
    const entries = readFileSync(journal, 'utf8').trim().split('\n');
    const denies = entries.filter((l) => l.includes('"deny"'));
    expect(denies.length).toBeGreaterThanOrEqual(3);
  }, 90_000);
});
