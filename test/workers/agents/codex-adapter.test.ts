/**
 * The Codex adapter with the real `codex` CLI (0.171.0, devDependency) against the scripted model
 * server, in real git repositories: smoke, resume, orchestration cases 1 and 8, the read-only
 * sandbox; plus the pure parts (argv, event parser) on lines captured from codex 0.171.0.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PollyError } from '../../../brain/core/errors.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import type { AgentEvent, AgentRunOptions } from '../../../workers/agents/agent-adapter.js';
import { CODEX_PROMPT_PATTERNS, codexArgs, createCodexAdapter, createCodexEventParser, sandboxFailure, type CodexAdapterConfig } from '../../../workers/agents/codex-adapter.js';
import { repoStateDir } from '../../../workers/sandbox/agent-state-dir.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';

const SCRIPT = `
sessions:
  - name: smoke
    match: {task: smoke, role: implement}
    turns:
      - steps:
          - write: {path: notes/NEW.md, content: "hello\\nworld\\n"}
          - edit: {path: README.md, old: "test", new: "best"}
          - read: README.md
          - run: "echo ran > ran.txt && cat ran.txt"
          - finish: "Smoke done: wrote, edited, ran."
      - steps:
          - run: "echo second > second.txt"
          - finish: "Second turn done."
  - name: shell-only
    match: {task: shellonly}
    turns:
      - steps:
          - write: {path: a.txt, content: "it's here\\n"}
          - edit: {path: a.txt, old: "here", new: "there"}
          - finish: "ok"
  - name: case8
    match: {task: case8}
    turns:
      - steps:
          - write: {path: feature.txt, content: "feature\\n"}
          - run: "git add -A && git commit -m 'agent commit'"
          - finish: "Left the change uncommitted: git commit failed in the sandbox."
  - name: cancel
    match: {task: cancel}
    turns:
      - steps:
          - run: "sleep 47.25"
          - finish: "never reached"
  - name: readonly
    match: {task: ro, role: review}
    turns:
      - steps:
          - run: "echo nope > nope.txt"
          - finish: "Reviewed."
`;

let server: ScriptedModelServer;
const KEY = 'scripted-dummy-key-123';

beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
});
afterAll(async () => server?.close());

function config(extra: Partial<CodexAdapterConfig> = {}): CodexAdapterConfig {
  return {
    command: 'codex',
    model: 'gpt-5.5',
    provider: { id: 'scripted', base_url: `${server.url}/v1`, env_key: 'POLLY_SCRIPTED_KEY' },
    ...extra,
  };
}

function runOptions(cwd: string, stateRoot: string, extra: Partial<AgentRunOptions> = {}): AgentRunOptions {
  return {
    cwd,
    prompt: 'do the task',
    resumeSessionId: null,
    model: null,
    readOnly: false,
    gate: { args: [], env: {} },
    env: { ...(gitTestEnv() as Record<string, string>), POLLY_SCRIPTED_KEY: KEY },
    // Outside the OS temp dir, as Polly keeps it (workers/sandbox/agent-state-dir.ts): codex refuses
    // to start its sandbox helper when CODEX_HOME is under it, and these runs use codex's own sandbox.
    stateDir: join(repoStateDir(stateRoot), 'codex-adapter-test'),
    timeoutMs: 30_000,
    ...extra,
  };
}

/**
 * What codex told the model its commands printed, from the scripted server's record of the session's
 * requests (`function_call_output` items of the Responses API input). Codex 0.171 emits no
 * `command_execution` item for a command its bubblewrap sandbox refused, so the model's view is the
 * ground truth for "the command ran and failed".
 */
function toolOutputsSent(session: string, since: number): string[] {
  const outputs = new Set<string>();
  for (const q of server.requests.slice(since)) {
    if (q.session !== session) continue;
    const input = (q.body as { input?: Array<{ type?: string; output?: unknown }> }).input ?? [];
    for (const item of input) if (item.type === 'function_call_output') outputs.add(String(item.output));
  }
  return [...outputs];
}

const ofType = <T extends AgentEvent['type']>(events: AgentEvent[], type: T) => events.filter((e): e is Extract<AgentEvent, { type: T }> => e.type === type);

describe('codex adapter with the real codex CLI', () => {
  it('smoke: writes, edits, reads and runs in a repo, reports, and resumes the same session', async () => {
    const repo = createTestRepo({ 'README.md': '# test repo\n' });
    const adapter = createCodexAdapter(config());
    const seen: AgentEvent[] = [];
    const run = adapter.start(runOptions(repo.dir, repo.root, { prompt: '[polly task=smoke role=implement] Do the smoke task.', onEvent: (e) => seen.push(e) }));
    expect(run.pid).toBeGreaterThan(0);
    const r = await run.result;
    expect(r.status, r.message ?? r.stderr).toBe('ok');
    expect(readFileSync(join(repo.dir, 'notes/NEW.md'), 'utf8')).toBe('hello\nworld\n');
    expect(readFileSync(join(repo.dir, 'README.md'), 'utf8')).toBe('# best repo\n');
    expect(readFileSync(join(repo.dir, 'ran.txt'), 'utf8')).toBe('ran\n');
    expect(r.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.finalText).toBe('Smoke done: wrote, edited, ran.');
    expect(seen).toEqual(r.events);

    const calls = ofType(r.events, 'tool_call');
    expect(calls.map((c) => c.tool)).toEqual(['apply_patch', 'apply_patch', 'shell', 'shell']);
    expect(JSON.stringify(calls[0]!.input)).toContain('notes/NEW.md');
    expect(JSON.stringify(calls[3]!.input)).toContain('echo ran > ran.txt');
    const results = ofType(r.events, 'tool_result');
    expect(results.map((x) => x.isError)).toEqual([false, false, false, false]);
    expect(results[2]!.output).toContain('# best repo');
    expect(results.map((x) => x.id)).toEqual(calls.map((c) => c.id));
    const usage = ofType(r.events, 'usage');
    expect(usage).toHaveLength(1);
    expect(usage[0]!.inputTokens).toBeGreaterThan(0);
    expect(ofType(r.events, 'result')).toEqual([{ type: 'result', ok: true, text: 'Smoke done: wrote, edited, ran.' }]);
    // The prompt went on stdin, the key never into argv or the result.
    expect(r.command.join(' ')).not.toContain('Do the smoke task');
    expect(JSON.stringify(r)).not.toContain(KEY);
    // Codex kept its state in the worker's state dir.
    expect(existsSync(join(repoStateDir(repo.root), 'codex-adapter-test', 'codex', 'sessions'))).toBe(true);

    const before = server.requests.length;
    const again = await adapter.start(runOptions(repo.dir, repo.root, { prompt: 'Acceptance is red: fix it.', resumeSessionId: r.sessionId })).result;
    expect(again.status, again.message ?? again.stderr).toBe('ok');
    expect(again.sessionId).toBe(r.sessionId);
    expect(again.finalText).toBe('Second turn done.');
    expect(readFileSync(join(repo.dir, 'second.txt'), 'utf8')).toBe('second\n');
    const resumed = server.requests.slice(before).filter((q) => q.api === 'openai-responses');
    expect(resumed.length).toBeGreaterThan(0);
    for (const q of resumed) {
      expect(q.session).toBe('smoke');
      expect(q.view?.humanTurns).toBe(2);
    }
  }, 60_000);

  it('without apply_patch (a model codex has no metadata for) writes and edits through its shell tool', async () => {
    const repo = createTestRepo();
    const r = await createCodexAdapter(config({ model: 'scripted-model' })).start(runOptions(repo.dir, repo.root, { prompt: '[polly task=shellonly] go' })).result;
    expect(r.status, r.message ?? r.stderr).toBe('ok');
    expect(readFileSync(join(repo.dir, 'a.txt'), 'utf8')).toBe("it's there\n");
    expect(ofType(r.events, 'tool_call').map((c) => c.tool)).toEqual(['shell', 'shell']);
    // codex says it has no metadata for the model: a notice, not a failure.
    expect(ofType(r.events, 'error').some((e) => e.message.includes('scripted-model'))).toBe(true);
  });

  it('orchestration case 8: in a linked worktree git commit fails in the sandbox, the run is ok, the files stay', async () => {
    const repo = createTestRepo();
    const wt = join(repo.root, 'wt');
    repo.git(['worktree', 'add', '-q', '-b', 'polly/case8', wt]);
    const head = repo.git(['rev-parse', 'polly/case8']);
    const before = server.requests.length;
    const r = await createCodexAdapter(config()).start(runOptions(wt, repo.root, { prompt: '[polly task=case8] go' })).result;
    expect(r.status, r.message ?? r.stderr).toBe('ok');
    expect(toolOutputsSent('case8', before).join('\n')).toMatch(/Read-only file system|Permission denied|index\.lock/);
    expect(readFileSync(join(wt, 'feature.txt'), 'utf8')).toBe('feature\n');
    expect(repo.git(['rev-parse', 'polly/case8'])).toBe(head);
    expect(repo.git(['-C', wt, 'status', '--porcelain'])).toContain('feature.txt');
  });

  it('read-only purposes run in the read-only sandbox: writes fail, nothing lands on disk', async () => {
    const repo = createTestRepo();
    // The gate's args set sandbox_mode="workspace-write" as a default; the explicit --sandbox wins.
    const gate = { args: ['-c', 'sandbox_mode="workspace-write"'], env: {} };
    const before = server.requests.length;
    const r = await createCodexAdapter(config()).start(runOptions(repo.dir, repo.root, { prompt: '[polly task=ro role=review] review', readOnly: true, gate })).result;
    expect(r.status, r.message ?? r.stderr).toBe('ok');
    expect(r.command).toContain('read-only');
    const sent = server.requests.slice(before).find((q) => q.session === 'readonly')!.body as { client_metadata: Record<string, string> };
    expect(JSON.parse(sent.client_metadata['x-codex-turn-metadata']!).sandbox_mode).toBe('read-only');
    expect(toolOutputsSent('readonly', before).join('\n')).toMatch(/Read-only file system/);
    expect(existsSync(join(repo.dir, 'nope.txt'))).toBe(false);
  });

  it('cancel stops codex and the sandboxed command it started in its own session: nothing outlives the run', async () => {
    const repo = createTestRepo();
    const sleeping = () =>
      execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => /\bsleep 47\.25$/.test(l.trim()));
    let started!: () => void;
    const toolStarted = new Promise<void>((resolve) => (started = resolve));
    const run = createCodexAdapter(config()).start(runOptions(repo.dir, repo.root, { prompt: '[polly task=cancel] wait', onEvent: (e) => e.type === 'tool_call' && started() }));
    await toolStarted;
    for (let i = 0; i < 50 && sleeping().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(sleeping().length).toBeGreaterThan(0);
    await run.cancel();
    const r = await run.result;
    expect(r.status).toBe('cancelled');
    for (let i = 0; i < 30 && sleeping().length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(sleeping()).toEqual([]);
  });

  it('orchestration case 1: a missing binary ends agent_missing, an instant exit agent_exited with stderr, within seconds', async () => {
    const repo = createTestRepo();
    const t0 = Date.now();
    const missing = await createCodexAdapter(config({ binary: join(repo.root, 'no-such-codex') })).start(runOptions(repo.dir, repo.root)).result;
    expect(missing.status).toBe('agent_missing');
    expect(missing.message).toContain('no-such-codex');

    const bad = await createCodexAdapter(config()).start(runOptions(repo.dir, repo.root, { gate: { args: ['--no-such-flag'], env: {} } })).result;
    expect(bad.status).toBe('agent_exited');
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr).toContain('--no-such-flag');
    expect(bad.message).toContain('--no-such-flag');
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('an unreachable model endpoint ends agent_exited within seconds; missing credentials end agent_refused before starting', async () => {
    const repo = createTestRepo();
    const t0 = Date.now();
    const down = await createCodexAdapter(config({ provider: { id: 'down', base_url: 'http://127.0.0.1:9/v1', env_key: 'POLLY_SCRIPTED_KEY' }, maxRetries: 0 })).start(
      runOptions(repo.dir, repo.root),
    ).result;
    expect(down.status).toBe('agent_exited');
    expect(down.message).toMatch(/Connection failed/);
    expect(Date.now() - t0).toBeLessThan(15_000);

    const noKey = await createCodexAdapter(config()).start(runOptions(repo.dir, repo.root, { env: gitTestEnv() as Record<string, string> })).result;
    expect(noKey.status).toBe('agent_refused');
    expect(noKey.message).toContain('POLLY_SCRIPTED_KEY');
    const env = { ...(gitTestEnv() as Record<string, string>) };
    delete env.OPENAI_API_KEY;
    delete env.CODEX_API_KEY;
    const noAuth = await createCodexAdapter(config({ provider: null })).start(runOptions(repo.dir, repo.root, { env })).result;
    expect(noAuth.status).toBe('agent_refused');
    expect(noAuth.message).toMatch(/codex has no credentials.*codex login/);
  });

  it('refuses a provider codex cannot take, naming the field', () => {
    expect(() => createCodexAdapter(config({ provider: { id: 'bad id', base_url: 'http://x/v1', env_key: 'K' } }))).toThrow(PollyError);
    expect(() => createCodexAdapter(config({ provider: { id: 'p', base_url: 'ftp://x', env_key: 'K' } }))).toThrow(/base_url "ftp:\/\/x"/);
  });
});

describe('codex argv', () => {
  const opts = { cwd: '/w', model: null, readOnly: false, resumeSessionId: null, gate: { args: ['-c', 'hooks.x=1'], env: {} } };
  it('starts a new session with the sandbox, the provider and the gate, prompt on stdin', () => {
    expect(codexArgs(opts, { command: 'codex', model: 'gpt-5.5', provider: { id: 'p1', base_url: 'http://h/v1', env_key: 'K' } })).toEqual([
      'exec',
      '--json',
      '--skip-git-repo-check',
      '--sandbox',
      'workspace-write',
      '-C',
      '/w',
      '-c',
      'approval_policy="never"',
      '--disable',
      'unbounded_connection_retries',
      '-m',
      'gpt-5.5',
      '-c',
      'model_providers.p1={name="p1", base_url="http://h/v1", wire_api="responses", env_key="K"}',
      '-c',
      'model_provider="p1"',
      '-c',
      'hooks.x=1',
      '-',
    ]);
  });
  it('resumes with exec-level flags before `resume <id>`, read-only when asked', () => {
    const args = codexArgs({ ...opts, readOnly: true, resumeSessionId: 'abc', model: 'm2' }, { command: 'codex', model: 'm1', provider: null });
    expect(args.slice(-3)).toEqual(['resume', 'abc', '-']);
    expect(args).toContain('read-only');
    expect(args[args.indexOf('-m') + 1]).toBe('m2');
    expect(args.join(' ')).not.toContain('model_provider');
  });
});

describe('codex --json event parser', () => {
  // Lines captured from codex 0.171.0 (`codex exec --json`) against the scripted model server.
  const CAPTURED = [
    '{"type":"thread.started","thread_id":"01a229b3-a456-7a02-af75-8e3de92a9144"}',
    '{"type":"turn.started"}',
    '{"type":"item.started","item":{"id":"item_0","type":"file_change","changes":[{"path":"/tmp/ws/notes/NEW.md","kind":"add"}],"status":"in_progress"}}',
    '{"type":"item.completed","item":{"id":"item_0","type":"file_change","changes":[{"path":"/tmp/ws/notes/NEW.md","kind":"add"}],"status":"completed"}}',
    '{"type":"item.started","item":{"id":"item_4","type":"command_execution","command":"/bin/bash -lc \'exit 3\'","aggregated_output":"","exit_code":null,"status":"in_progress"}}',
    '{"type":"item.completed","item":{"id":"item_4","type":"command_execution","command":"/bin/bash -lc \'exit 3\'","aggregated_output":"","exit_code":3,"status":"failed"}}',
    '{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `test-model` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}',
    '{"type":"item.completed","item":{"id":"item_5","type":"agent_message","text":"All done [report]."}}',
    '{"type":"turn.completed","usage":{"input_tokens":44284,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":293,"reasoning_output_tokens":0}}',
  ];

  it('normalises the captured stream', () => {
    const parse = createCodexEventParser();
    const events = CAPTURED.flatMap((l) => parse(JSON.parse(l)));
    expect(events).toEqual([
      { type: 'session', sessionId: '01a229b3-a456-7a02-af75-8e3de92a9144' },
      { type: 'tool_call', id: 'item_0', tool: 'apply_patch', input: { changes: [{ path: '/tmp/ws/notes/NEW.md', kind: 'add' }] } },
      { type: 'tool_result', id: 'item_0', isError: false, output: 'add /tmp/ws/notes/NEW.md' },
      { type: 'tool_call', id: 'item_4', tool: 'shell', input: { command: "/bin/bash -lc 'exit 3'" } },
      { type: 'tool_result', id: 'item_4', isError: true, output: '' },
      { type: 'error', message: 'Model metadata for `test-model` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.' },
      { type: 'text', text: 'All done [report].' },
      { type: 'usage', scope: 'turn', inputTokens: 44284, outputTokens: 293, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
      { type: 'result', ok: true, text: 'All done [report].' },
    ]);
  });

  it('turns turn.failed into a failed result, a completed-only item into call + result, and the unknown into unknown', () => {
    const parse = createCodexEventParser();
    expect(parse({ type: 'turn.failed', error: { message: 'stream disconnected' } })).toEqual([
      { type: 'error', message: 'stream disconnected' },
      { type: 'result', ok: false, text: 'stream disconnected' },
    ]);
    expect(
      parse({
        type: 'item.completed',
        item: { id: 'i9', type: 'mcp_tool_call', server: 'polly', tool: 'workflow_list', arguments: {}, status: 'completed', result: { content: [] } },
      }).map((e) => e.type),
    ).toEqual(['tool_call', 'tool_result']);
    expect(parse({ type: 'thread.archived', x: 1 })).toEqual([{ type: 'unknown', raw: { type: 'thread.archived', x: 1 } }]);
    expect(parse('text')).toEqual([{ type: 'unknown', raw: 'text' }]);
  });
});

describe('prompt detection', () => {
  const hits = (text: string) => CODEX_PROMPT_PATTERNS.some((p) => p.test(text));
  it('ignores codex log lines quoting a blocked command, still sees a real prompt', () => {
    expect(hits('2026-11-29T23:46:47.301921Z ERROR codex_core::tools::router: error=Command blocked by PreToolUse hook: no. Command: echo "Do you want to go? [y/N]"\n')).toBe(
      false,
    );
    expect(hits('Reading additional input from stdin...\n')).toBe(false);
    expect(hits('Do you want to continue? [y/N] ')).toBe(true);
    expect(hits('some warning\nPlease log in to continue')).toBe(true);
  });
});

describe('sandbox failure detection', () => {
  // The sandbox runs here (bundled bubblewrap as root); these outputs are the messages bubblewrap
  // prints where it cannot create namespaces, so this part is tested on text only.
  it('reports a sandbox that cannot start, and nothing for ordinary failures', () => {
    const failed: AgentEvent[] = [
      { type: 'tool_call', id: '1', tool: 'shell', input: {} },
      {
        type: 'tool_result',
        id: '1',
        isError: true,
        output: 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.\n',
      },
    ];
    expect(sandboxFailure(failed)).toMatch(/codex's own sandbox cannot run here.*bwrap: No permissions.*apt-get install bubblewrap/);
    expect(sandboxFailure([{ type: 'tool_result', id: '1', isError: true, output: 'npm ERR! test failed' }])).toBeNull();
    expect(sandboxFailure([...failed, { type: 'tool_result', id: '2', isError: false, output: 'hello' }])).toBeNull();
  });

  it('reports codex 0.171 refused a user namespace (in a chroot, or a container whose seccomp forbids one)', () => {
    // The events of a real codex turn in a chroot of a fresh Debian root (scripts/fresh-machine-check.sh
    // before it used pivot_root): its apply_patch calls and its shell command all failed.
    const events: AgentEvent[] = [
      { type: 'tool_call', id: 'item_2', tool: 'apply_patch', input: {} },
      { type: 'tool_result', id: 'item_2', isError: true, output: 'add /tmp/demo/stats/.worktrees/p2-t2/src/median.js' },
      { type: 'tool_call', id: 'item_4', tool: 'shell', input: {} },
      { type: 'tool_result', id: 'item_4', isError: true, output: 'error building bubblewrap command: cannot establish app-server socket mount isolation\n' },
    ];
    expect(sandboxFailure(events)).toMatch(/codex's own sandbox cannot run here.*error building bubblewrap command.*apt-get install bubblewrap/);
  });
});
