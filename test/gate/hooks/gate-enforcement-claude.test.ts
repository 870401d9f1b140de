/**
 * Enforcement in Claude Code: the real `claude` with the gate from `prepareGate` (a
 * PreToolUse command hook passed with --settings, plus git/gh shims on PATH), driven by the
 * scripted model. The model tries a force-push, a `gh pr merge`, a write into `.git/hooks/`, and a
 * plain push of its own branch: the first three come back to the model as denials carrying the
 * gate's reason and leave no trace; the last runs. Needs `npm run build` (the hook runs from dist/).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestRepo } from '../../helpers/git-repo.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import type { RecordedRequest } from '../../../scripts/scripted-model/api-route.js';
import { createClaudeCodeAdapter } from '../../../workers/agents/claude-code-adapter.js';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import { prepareGate } from '../../../gate/hooks/harness-gate.js';

const SCRIPT = `
sessions:
  - name: gate-claude
    match: {task: g1, role: implement}
    turns:
      - steps:
          - run: git push --force origin polly/g1
          - run: gh pr merge 1 --squash
          - write: {path: .git/hooks/pre-commit, content: "#!/bin/sh\\nexit 0\\n"}
          - run: git ls-remote origin
          - run: git push origin polly/g1
          - finish: "Tried the forbidden things; pushed my branch."
  - name: gate-claude-review
    match: {task: g2, role: review}
    turns:
      - steps:
          - run: cat src/a.js
          - run: echo tampered > src/a.js
          - write: {path: REVIEW.md, content: "notes\\n"}
          - finish: "Review done."
`;

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
});
afterAll(async () => {
  await server.close();
});

describe('gate enforcement inside the real Claude Code', () => {
  it('denies force-push, gh pr merge and a .git/hooks write; lets a plain push of the task branch run', async () => {
    const repo = createTestRepo({ 'src/a.js': 'export const a = 1;\n' });
    repo.git(['checkout', '-q', '-b', 'polly/g1']);
    repo.write('src/a.js', 'export const a = 2;\n');
    const head = repo.commitAll('work on g1');
    const home = mkdtempSync(join(tmpdir(), 'polly-home-'));
    const gateDir = mkdtempSync(join(tmpdir(), 'polly-gate-'));
    const journalPath = join(gateDir, 'decisions.jsonl');
    const gate = await prepareGate('claude-code', {
      role: 'implement',
      context: { repoRoot: repo.dir, worktree: repo.dir, branch: 'polly/g1', defaultBranch: 'main', home },
      stateDir: join(gateDir, 'state'),
      journalPath,
    });
    expect(gate.args[0]).toBe('--settings');

    const adapter = createClaudeCodeAdapter({ command: 'claude', model: null, allow_root_sandbox: true });
    const r = await adapter.start({
      cwd: repo.dir,
      prompt: '[polly task=g1 role=implement] Ship the change.',
      resumeSessionId: null,
      model: 'claude-sonnet-4-5',
      readOnly: false,
      gate: { args: gate.args, env: gate.env },
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-scripted-dummy-key', HOME: home },
      stateDir: mkdtempSync(join(tmpdir(), 'polly-claude-state-')),
      timeoutMs: 40_000,
    }).result;
    expect(r.status, `${r.message}\n${r.stderr}`).toBe('ok');
    expect(r.finalText).toBe('Tried the forbidden things; pushed my branch.');

    // What the model saw: each request's last tool result, in order (recorded by the server).
    const seen = server.requests
      .filter((q: RecordedRequest) => q.session === 'gate-claude')
      .map((q) => q.view?.lastToolResult ?? null)
      .slice(1);
    expect(seen).toHaveLength(5);
    const [forcePush, merge, hookWrite, lsRemote, push] = seen;
    for (const denial of [forcePush, merge, hookWrite]) {
      expect(denial?.isError).toBe(true);
      expect(denial?.text).toMatch(/^Polly gate: denied \(/);
    }
    expect(forcePush?.text).toMatch(/blast_radius/);
    expect(forcePush?.text).toMatch(/force/i);
    expect(merge?.text).toMatch(/merge/i);
    expect(hookWrite?.text).toMatch(/\.git/);
    // After the three denials the remote had no polly/g1 (nothing was force-pushed).
    expect(lsRemote?.isError).toBe(false);
    expect(lsRemote?.text).toContain('refs/heads/main');
    expect(lsRemote?.text).not.toContain('polly/g1');
    expect(push?.isError).toBe(false);
    expect(push?.text).toContain('polly/g1');

    // No trace on disk; the plain push landed exactly the branch head.
    expect(existsSync(join(repo.dir, '.git/hooks/pre-commit'))).toBe(false);
    expect(repo.git(['ls-remote', 'origin', 'refs/heads/polly/g1'])).toBe(`${head}\trefs/heads/polly/g1`);
    expect(repo.git(['ls-remote', 'origin', 'refs/heads/main'])).not.toContain(head);

    // The same story in the normalised events.
    const results = r.events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
    expect(results.map((e) => e.isError)).toEqual([true, true, true, false, false]);

    // Every decision was journaled.
    const journal = readFileSync(journalPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(journal.length).toBeGreaterThanOrEqual(5);
    const text = JSON.stringify(journal);
    expect(text).toContain('git push --force origin polly/g1');
    expect(text).toContain('deny');
    expect(text).toContain('allow');
  }, 60_000);

  it('a read-only role (review) may read through Bash but not write, by Bash or by a write tool', async () => {
    const repo = createTestRepo({ 'src/a.js': 'export const a = 1;\n' });
    const gateDir = mkdtempSync(join(tmpdir(), 'polly-gate-'));
    const gate = await prepareGate('claude-code', {
      role: 'review',
      context: { repoRoot: repo.dir, worktree: repo.dir, branch: 'polly/g2', defaultBranch: 'main', home: mkdtempSync(join(tmpdir(), 'polly-home-')) },
      stateDir: join(gateDir, 'state'),
      journalPath: null,
    });
    const r = await createClaudeCodeAdapter({ command: 'claude', model: null, allow_root_sandbox: true }).start({
      cwd: repo.dir,
      prompt: '[polly task=g2 role=review] Review the change.',
      resumeSessionId: null,
      model: null,
      readOnly: true,
      gate: { args: gate.args, env: gate.env },
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-scripted-dummy-key' },
      stateDir: mkdtempSync(join(tmpdir(), 'polly-claude-state-')),
      timeoutMs: 40_000,
    }).result;
    expect(r.status, `${r.message}\n${r.stderr}`).toBe('ok');
    const results = r.events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
    expect(results.map((e) => e.isError)).toEqual([false, true, true]);
    expect(results[0]!.output).toContain('export const a = 1;');
    expect(results[1]!.output).toMatch(/^Polly gate: denied \(/);
    expect(results[2]!.output).toMatch(/Write/);
    expect(readFileSync(join(repo.dir, 'src/a.js'), 'utf8')).toBe('export const a = 1;\n');
    expect(existsSync(join(repo.dir, 'REVIEW.md'))).toBe(false);
  }, 60_000);
});
