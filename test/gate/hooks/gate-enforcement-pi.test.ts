/**
 * Enforcement in pi: the real `pi` with the gate from `prepareGate('pi', …)` (an extension
 * loaded with `--no-extensions -e <file>` whose `tool_call` handler returns `{block: true, reason}`,
 * plus git/gh shims first on PATH), driven by the scripted model over OpenAI chat completions.
 * The model tries a force-push, a `gh pr merge`, a write into `.git/hooks/`, and a plain push of its
 * own branch: the first three come back to the model as denials carrying the gate's reason and leave
 * no trace (disk, remote, forge CLI); the last runs. Needs `npm run build` (the extension imports
 * dist/gate/pi-extension.js).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestRepo } from '../../helpers/git-repo.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import { createPiAdapter } from '../../../workers/agents/pi-adapter.js';
import { prepareGate } from '../../../gate/hooks/harness-gate.js';

const SCRIPT = `
sessions:
  - name: gate-pi
    match: {task: gp1, role: implement}
    turns:
      - steps:
          - run: git push --force origin polly/gp1
          - run: gh pr merge 1 --squash
          - write: {path: .git/hooks/pre-commit, content: "#!/bin/sh\\nexit 0\\n"}
          - run: git ls-remote origin
          - run: git push origin polly/gp1
          - finish: "Tried the forbidden things; pushed my branch."
  - name: review-pi
    match: {task: gp2, role: review}
    turns:
      - steps:
          - read: src/a.js
          - call: {tool: ls, input: {path: src}}
          - write: {path: src/a.js, content: "hijacked\\n"}
          - finish: "Review: LGTM."
`;

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
});
afterAll(async () => {
  await server.close();
});

describe('gate enforcement inside the real pi', () => {
  it('denies force-push, gh pr merge and a .git/hooks write; lets a plain push of the task branch run', async () => {
    const repo = createTestRepo({ 'src/a.js': 'export const a = 1;\n' });
    repo.git(['checkout', '-q', '-b', 'polly/gp1']);
    repo.write('src/a.js', 'export const a = 2;\n');
    const head = repo.commitAll('work on gp1');
    const tmp = mkdtempSync(join(tmpdir(), 'polly-gate-pi-'));
    const home = join(tmp, 'home');
    mkdirSync(home);
    // A recording `gh` behind the shims: any call that got past the gate would leave a line here.
    const fakeBin = join(tmp, 'fake-bin');
    const ghLog = join(tmp, 'gh-calls.log');
    mkdirSync(fakeBin);
    writeFileSync(join(fakeBin, 'gh'), `#!/bin/sh\necho "gh $*" >> '${ghLog}'\n`);
    chmodSync(join(fakeBin, 'gh'), 0o755);
    const journalPath = join(tmp, 'decisions.jsonl');
    const gate = await prepareGate('pi', {
      role: 'implement',
      context: { repoRoot: repo.dir, worktree: repo.dir, branch: 'polly/gp1', defaultBranch: 'main', home },
      stateDir: join(tmp, 'gate'),
      journalPath,
      basePath: `${fakeBin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    });
    expect(gate.args).toContain('-e');

    const adapter = createPiAdapter({
      command: 'pi',
      model: null,
      provider: null,
      customProvider: { baseUrl: `${server.url}/v1`, apiKeyEnv: 'POLLY_SCRIPTED_API_KEY', models: ['scripted'] },
    });
    const r = await adapter.start({
      cwd: repo.dir,
      prompt: '[polly task=gp1 role=implement] Ship the change.',
      resumeSessionId: null,
      model: null,
      readOnly: false,
      gate: { args: gate.args, env: gate.env },
      env: { POLLY_SCRIPTED_API_KEY: 'scripted-dummy-key', HOME: home },
      stateDir: join(tmp, 'worker'),
      timeoutMs: 40_000,
    }).result;
    expect(r.status, `${r.message}\n${r.stderr}`).toBe('ok');
    expect(r.command).toEqual(expect.arrayContaining(['--no-extensions', '-e', gate.args[gate.args.indexOf('-e') + 1]!]));
    expect(r.finalText).toBe('Tried the forbidden things; pushed my branch.');

    // What the model saw: each request's last tool result, in order (recorded by the server).
    const seen = server.requests
      .filter((q) => q.session === 'gate-pi')
      .map((q) => q.view?.lastToolResult?.text ?? null)
      .slice(1);
    expect(seen).toHaveLength(5);
    const [forcePush, merge, hookWrite, lsRemote, push] = seen;
    for (const denial of [forcePush, merge, hookWrite]) expect(denial).toMatch(/^Polly gate: denied \(/);
    expect(forcePush).toMatch(/blast_radius/);
    expect(forcePush).toMatch(/force/i);
    expect(merge).toMatch(/merge/i);
    expect(hookWrite).toMatch(/\.git/);
    // After the three denials the remote had no polly/gp1 (nothing was force-pushed).
    expect(lsRemote).toContain('refs/heads/main');
    expect(lsRemote).not.toContain('polly/gp1');
    expect(push).toContain('polly/gp1');

    // Chat completions carries no error flag on a tool message: pi's own events say which failed,
    // and their text is exactly what the model was sent.
    const results = r.events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
    expect(results.map((e) => e.isError)).toEqual([true, true, true, false, false]);
    expect(results.map((e) => e.output)).toEqual(seen);
    const calls = r.events.filter((e): e is Extract<AgentEvent, { type: 'tool_call' }> => e.type === 'tool_call');
    expect(calls.map((c) => c.tool)).toEqual(['bash', 'bash', 'write', 'bash', 'bash']);

    // No trace: no hook on disk, no gh call, and the plain push landed exactly the branch head.
    expect(existsSync(join(repo.dir, '.git/hooks/pre-commit'))).toBe(false);
    expect(existsSync(ghLog)).toBe(false);
    expect(repo.git(['ls-remote', 'origin', 'refs/heads/polly/gp1'])).toBe(`${head}\trefs/heads/polly/gp1`);
    expect(repo.git(['ls-remote', 'origin', 'refs/heads/main'])).not.toContain(head);

    // Every decision was journaled.
    const journal = readFileSync(journalPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(journal.length).toBeGreaterThanOrEqual(5);
    const text = JSON.stringify(journal);
    expect(text).toContain('git push --force origin polly/gp1');
    expect(text).toContain('deny');
    expect(text).toContain('allow');
  }, 60_000);

  it('as the reviewer (gate role review, read-only tools) pi reads through the gate and cannot write', async () => {
    const repo = createTestRepo({ 'src/a.js': 'export const a = 1;\n' });
    const tmp = mkdtempSync(join(tmpdir(), 'polly-gate-pi-review-'));
    const gate = await prepareGate('pi', {
      role: 'review',
      context: { repoRoot: repo.dir, worktree: repo.dir, branch: 'main', defaultBranch: 'main', home: tmp },
      stateDir: join(tmp, 'gate'),
      journalPath: null,
    });
    const adapter = createPiAdapter({
      command: 'pi',
      model: null,
      provider: null,
      customProvider: { baseUrl: `${server.url}/v1`, apiKeyEnv: 'POLLY_SCRIPTED_API_KEY', models: ['scripted'] },
    });
    const r = await adapter.start({
      cwd: repo.dir,
      prompt: '[polly task=gp2 role=review] Review the change.',
      resumeSessionId: null,
      model: null,
      readOnly: true,
      gate: { args: gate.args, env: gate.env },
      env: { POLLY_SCRIPTED_API_KEY: 'scripted-dummy-key', HOME: tmp },
      stateDir: join(tmp, 'worker'),
      timeoutMs: 40_000,
    }).result;
    expect(r.status, `${r.message}\n${r.stderr}`).toBe('ok');
    const results = r.events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
    expect(results.map((e) => [e.isError, e.output])).toEqual([
      [false, 'export const a = 1;\n'],
      [false, 'a.js'],
      [true, 'Tool write not found'],
    ]);
    expect(readFileSync(join(repo.dir, 'src/a.js'), 'utf8')).toBe('export const a = 1;\n');
    expect(repo.git(['status', '--porcelain'])).toBe('');
    expect(r.finalText).toBe('Review: LGTM.');
  }, 60_000);
});
