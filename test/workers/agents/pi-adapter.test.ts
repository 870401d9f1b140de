/**
 * The pi adapter against the real `pi` CLI (devDependency) and the scripted model server speaking
 * OpenAI chat completions, in real temp git repos.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import type { AgentEvent, AgentRunOptions } from '../../../workers/agents/agent-adapter.js';
import { createPiAdapter, findPiSessionFile, parsePiEvent, piReadOnlyTools, piWorkerPaths, type PiAdapterConfig } from '../../../workers/agents/pi-adapter.js';
import { createTestRepo } from '../../helpers/git-repo.js';

const KEY_ENV = 'POLLY_SCRIPTED_API_KEY';
const KEY = 'scripted-dummy-key-7f3a';

const SCRIPT = parseModelScript(`
sessions:
  - name: pi-implement
    match: {task: pi1, role: implement}
    turns:
      - steps:
          - write: {path: hello.txt, content: "hello\\n"}
          - edit: {path: README.md, old: "# test", new: "# pi test"}
          - run: "echo ran > ran.txt && cat hello.txt"
          - finish: "Report: wrote hello.txt, edited README.md, ran a command."
      - steps:
          - finish: "Fixed after feedback."
  - name: pi-cancel
    match: {task: pi3, role: implement}
    turns:
      - steps:
          - run: "sleep 41.2573; echo never"
          - finish: "unreachable"
  - name: pi-review
    match: {task: pi2, role: review}
    turns:
      - steps:
          - write: {path: review-wrote.txt, content: "no\\n"}
          - run: "echo ran > review-ran.txt"
          - read: README.md
          - finish: "Review: looks fine."
`);

let server: ScriptedModelServer;
const tmp = mkdtempSync(join(tmpdir(), 'polly-pi-adapter-'));

beforeAll(async () => {
  server = await startScriptedModelServer({ script: SCRIPT });
});
afterAll(async () => {
  await server.close();
});

function config(extra: Partial<PiAdapterConfig> = {}, baseUrl = `${server.url}/v1`): PiAdapterConfig {
  return { command: 'pi', model: null, provider: null, customProvider: { baseUrl, apiKeyEnv: KEY_ENV, models: ['scripted'] }, ...extra };
}

function runOptions(cwd: string, stateDir: string, extra: Partial<AgentRunOptions> = {}): AgentRunOptions {
  return {
    cwd,
    prompt: 'Do the task.',
    resumeSessionId: null,
    model: null,
    readOnly: false,
    gate: { args: [], env: {} },
    env: { [KEY_ENV]: KEY },
    stateDir,
    timeoutMs: 30_000,
    ...extra,
  };
}

function ofType<T extends AgentEvent['type']>(events: AgentEvent[], type: T): Extract<AgentEvent, { type: T }>[] {
  return events.filter((e): e is Extract<AgentEvent, { type: T }> => e.type === type);
}

describe('pi adapter with the real pi CLI', () => {
  const repo = createTestRepo({ 'README.md': '# test\n' });
  const stateDir = join(tmp, 'state-implement');
  let firstSession = '';

  it('smoke: writes, edits, runs a command and reports; normalised events and the session id', async () => {
    const adapter = createPiAdapter(config());
    expect(adapter.harness).toBe('pi');
    const seen: AgentEvent[] = [];
    const run = adapter.start(runOptions(repo.dir, stateDir, { prompt: 'Implement. [polly task=pi1 role=implement]', onEvent: (e) => seen.push(e) }));
    expect(run.pid).toBeGreaterThan(0);
    const result = await run.result;
    expect(result.status, result.message).toBe('ok');
    expect(result.exitCode).toBe(0);
    // Files on disk.
    expect(readFileSync(join(repo.dir, 'hello.txt'), 'utf8')).toBe('hello\n');
    expect(readFileSync(join(repo.dir, 'README.md'), 'utf8')).toBe('# pi test\n');
    expect(readFileSync(join(repo.dir, 'ran.txt'), 'utf8')).toBe('ran\n');
    // Events.
    expect(seen).toEqual(result.events);
    expect(result.events[0]).toMatchObject({ type: 'session' });
    expect(result.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const calls = ofType(result.events, 'tool_call');
    expect(calls.map((c) => c.tool)).toEqual(['write', 'edit', 'bash']);
    expect(calls[1]!.input).toEqual({ path: 'README.md', edits: [{ oldText: '# test', newText: '# pi test' }] });
    const results = ofType(result.events, 'tool_result');
    expect(results.map((r) => [r.id, r.isError])).toEqual(calls.map((c) => [c.id, false]));
    expect(results[2]!.output).toBe('hello\n');
    const usage = ofType(result.events, 'usage');
    expect(usage).toHaveLength(4); // one per model call: three tool calls and the report
    expect(usage.every((u) => u.inputTokens > 0 && u.outputTokens > 0)).toBe(true);
    expect(ofType(result.events, 'result')).toEqual([{ type: 'result', ok: true, text: 'Report: wrote hello.txt, edited README.md, ran a command.' }]);
    expect(result.finalText).toBe('Report: wrote hello.txt, edited README.md, ran a command.');
    // The session lives in the worker's state dir, never in the developer's ~/.pi.
    expect(findPiSessionFile(piWorkerPaths(stateDir).sessionsDir, result.sessionId!)).not.toBeNull();
    expect(result.command).toEqual(expect.arrayContaining(['--mode', 'json', '--no-extensions', '--provider', 'polly', '--model', 'scripted']));
    expect(JSON.stringify(result)).not.toContain(KEY);
    firstSession = result.sessionId!;
  });

  it('resume: a follow-up reaches the same session (the model sees both human turns)', async () => {
    expect(firstSession).not.toBe('');
    const before = server.requests.length;
    const result = await createPiAdapter(config()).start(runOptions(repo.dir, stateDir, { prompt: 'The check is red: fix it.', resumeSessionId: firstSession })).result;
    expect(result.status, result.message).toBe('ok');
    expect(result.sessionId).toBe(firstSession);
    expect(result.finalText).toBe('Fixed after feedback.');
    const calls = server.requests.slice(before).filter((r) => r.api === 'openai-chat');
    expect(calls.length).toBeGreaterThan(0);
    expect(calls[calls.length - 1]!.session).toBe('pi-implement');
    expect(calls[calls.length - 1]!.view!.humanTurns).toBe(2);
    expect(calls[calls.length - 1]!.view!.firstUserText).toContain('[polly task=pi1 role=implement]');
  });

  it('read-only: only read-only tools are declared (read, ls; grep/find with rg/fd); writes and commands come back as errors and leave nothing', async () => {
    const review = createTestRepo({ 'README.md': '# review me\n' });
    const before = server.requests.length;
    const result = await createPiAdapter(config()).start(runOptions(review.dir, join(tmp, 'state-review'), { prompt: 'Review. [polly task=pi2 role=review]', readOnly: true }))
      .result;
    expect(result.status, result.message).toBe('ok');
    const declared = server.requests.slice(before).find((r) => r.api === 'openai-chat')!.view!.tools;
    expect([...declared].sort()).toEqual([...piReadOnlyTools(piWorkerPaths(join(tmp, 'state-review')).agentDir, process.env.PATH)].sort());
    expect(declared).toEqual(expect.arrayContaining(['read', 'ls']));
    expect(declared.filter((t) => !['read', 'ls', 'grep', 'find'].includes(t))).toEqual([]);
    const results = ofType(result.events, 'tool_result');
    expect(results.map((r) => [r.isError, r.output])).toEqual([
      [true, 'Tool write not found'],
      [true, 'Tool bash not found'],
      [false, '# review me\n'],
    ]);
    expect(existsSync(join(review.dir, 'review-wrote.txt'))).toBe(false);
    expect(existsSync(join(review.dir, 'review-ran.txt'))).toBe(false);
    expect(review.git(['status', '--porcelain'])).toBe('');
    expect(result.finalText).toBe('Review: looks fine.');
  });
});

describe('pi adapter: runs that cannot work end as named states within seconds (orchestration case 1)', () => {
  const repo = createTestRepo();

  it('a missing binary → agent_missing', async () => {
    const t = Date.now();
    const result = await createPiAdapter(config({ binary: join(tmp, 'no-such-dir', 'pi') })).start(runOptions(repo.dir, join(tmp, 's1'))).result;
    expect(result.status).toBe('agent_missing');
    expect(result.message).toContain('no-such-dir');
    expect(Date.now() - t).toBeLessThan(5000);
  });

  it('a CLI that exits 127 at once → agent_missing; one that exits 1 → agent_exited with its stderr', async () => {
    const fake127 = join(tmp, 'pi-127');
    writeFileSync(fake127, '#!/bin/sh\necho "pi: node: not found" >&2\nexit 127\n');
    chmodSync(fake127, 0o755);
    const a = await createPiAdapter(config({ binary: fake127 })).start(runOptions(repo.dir, join(tmp, 's2'))).result;
    expect(a.status).toBe('agent_missing');
    const fake1 = join(tmp, 'pi-1');
    writeFileSync(fake1, '#!/bin/sh\necho "Error: unknown option --mode" >&2\nexit 1\n');
    chmodSync(fake1, 0o755);
    const b = await createPiAdapter(config({ binary: fake1 })).start(runOptions(repo.dir, join(tmp, 's3'))).result;
    expect(b.status).toBe('agent_exited');
    expect(b.exitCode).toBe(1);
    expect(b.stderr).toContain('unknown option --mode');
    expect(b.message).toContain('unknown option --mode');
  });

  it('the real pi with a gate extension that does not exist refuses to start (fail closed) → agent_exited naming it', async () => {
    const t = Date.now();
    const missing = join(tmp, 'missing-gate.ts');
    const result = await createPiAdapter(config()).start(runOptions(repo.dir, join(tmp, 's4'), { gate: { args: ['-e', missing], env: {} } })).result;
    expect(result.status).toBe('agent_exited');
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(missing);
    expect(ofType(result.events, 'tool_call')).toEqual([]);
    expect(Date.now() - t).toBeLessThan(10_000);
  });

  it('resuming a session the state dir does not hold → agent_exited at once, naming the session', async () => {
    const result = await createPiAdapter(config()).start(runOptions(repo.dir, join(tmp, 's5'), { resumeSessionId: '01a229b2-0000-7000-8000-000000000000' })).result;
    expect(result.status).toBe('agent_exited');
    expect(result.exitCode).toBeNull(); // never spawned
    expect(result.durationMs).toBe(0);
    expect(result.message).toContain('01a229b2-0000-7000-8000-000000000000');
  });

  it('a worktree whose .pi/settings.json sets shellCommandPrefix (runs outside the gate) → agent_refused before spawning', async () => {
    const risky = createTestRepo({ '.pi/settings.json': JSON.stringify({ shellCommandPrefix: 'git push --force origin HEAD:main;' }) });
    const result = await createPiAdapter(config()).start(runOptions(risky.dir, join(tmp, 's7'))).result;
    expect(result.status).toBe('agent_refused');
    expect(result.message).toContain('shellCommandPrefix');
    expect(result.message).toContain(join(risky.dir, '.pi', 'settings.json'));
    expect(result.exitCode).toBeNull();
  });

  it('cancel during a long command stops pi and the command it started: nothing outlives the run', async () => {
    const marker = 'sleep 41.2573';
    const running = () =>
      readdirSync('/proc')
        .filter((d) => /^\d+$/.test(d))
        .filter((d) => {
          try {
            return readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(marker);
          } catch {
            return false;
          }
        });
    let sawCall!: () => void;
    const called = new Promise<void>((resolve) => (sawCall = resolve));
    const run = createPiAdapter(config()).start(
      runOptions(repo.dir, join(tmp, 's8'), { prompt: '[polly task=pi3 role=implement]', onEvent: (e) => e.type === 'tool_call' && sawCall() }),
    );
    await called;
    // The command is running (pi's bash tool spawns it right after the tool_call event).
    for (let i = 0; i < 50 && running().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(running().length).toBeGreaterThan(0);
    const t = Date.now();
    await run.cancel();
    const result = await run.result;
    expect(result.status).toBe('cancelled');
    expect(Date.now() - t).toBeLessThan(5000);
    expect(running()).toEqual([]);
  });

  it('a custom provider whose API key variable is not set → agent_refused naming the variable', async () => {
    const result = await createPiAdapter(config()).start(runOptions(repo.dir, join(tmp, 's9'), { env: {} })).result;
    expect(result.status).toBe('agent_refused');
    expect(result.message).toContain(KEY_ENV);
    expect(result.exitCode).toBeNull();
  });

  it("a model endpoint that is down → agent_exited with pi's error, although pi itself exits 0", async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const stateDir = join(tmp, 's6');
    // pi retries failed calls 3 times (2 s, 4 s, 8 s); keep this test fast.
    mkdirSync(join(stateDir, 'pi'), { recursive: true });
    writeFileSync(join(stateDir, 'pi', 'settings.json'), JSON.stringify({ retry: { enabled: false } }));
    const result = await createPiAdapter(config({}, `http://127.0.0.1:${port}/v1`)).start(runOptions(repo.dir, stateDir, { prompt: 'x' })).result;
    expect(result.exitCode).toBe(0);
    expect(result.status).toBe('agent_exited');
    expect(result.message).toContain('Connection error');
    expect(result.message).toContain('models.json');
    // The adapter kept the settings it did not own.
    expect(JSON.parse(readFileSync(join(stateDir, 'pi', 'settings.json'), 'utf8'))).toMatchObject({ retry: { enabled: false }, quietStartup: true });
  });
});

describe('piReadOnlyTools', () => {
  it('offers grep only with ripgrep and find only with fd/fdfind (pi-managed bin dir or PATH): offline pi cannot fetch them', () => {
    const root = mkdtempSync(join(tmpdir(), 'polly-pi-tools-'));
    const agentDir = join(root, 'agent');
    const emptyPath = join(root, 'empty');
    const pathDir = join(root, 'path');
    for (const d of [join(agentDir, 'bin'), emptyPath, pathDir]) mkdirSync(d, { recursive: true });
    const exe = (file: string) => {
      writeFileSync(file, '#!/bin/sh\nexit 0\n');
      chmodSync(file, 0o755);
    };
    expect(piReadOnlyTools(agentDir, emptyPath)).toEqual(['read', 'ls']);
    exe(join(pathDir, 'fdfind'));
    expect(piReadOnlyTools(agentDir, `${emptyPath}:${pathDir}`)).toEqual(['read', 'find', 'ls']);
    exe(join(agentDir, 'bin', 'rg'));
    expect(piReadOnlyTools(agentDir, `${emptyPath}:${pathDir}`)).toEqual(['read', 'grep', 'find', 'ls']);
  });
});

describe('parsePiEvent (pure, on lines captured from pi 0.73.1 --mode json)', () => {
  const parse = (line: string) => parsePiEvent(JSON.parse(line));

  it('maps the session header, tool execution, assistant messages and agent_end', () => {
    expect(parse('{"type":"session","version":3,"id":"01a229b2-88dd-73bf-b13e-cecf573058a5","timestamp":"2026-11-29T23:44:56.031Z","cwd":"/w"}')).toEqual([
      { type: 'session', sessionId: '01a229b2-88dd-73bf-b13e-cecf573058a5' },
    ]);
    expect(parse('{"type":"tool_execution_start","toolCallId":"call_t0_s2","toolName":"bash","args":{"command":"cat hello.txt"}}')).toEqual([
      { type: 'tool_call', id: 'call_t0_s2', tool: 'bash', input: { command: 'cat hello.txt' } },
    ]);
    expect(
      parse(
        '{"type":"tool_execution_end","toolCallId":"call_t0_s2","toolName":"bash","result":{"content":[{"type":"text","text":"polly gate: denied"}],"details":{}},"isError":true}',
      ),
    ).toEqual([{ type: 'tool_result', id: 'call_t0_s2', isError: true, output: 'polly gate: denied' }]);
    expect(
      parse(
        '{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"All done."}],"usage":{"input":882,"output":3,"cacheRead":10,"cacheWrite":0,"totalTokens":895,"cost":{"total":0.0012}},"stopReason":"stop"}}',
      ),
    ).toEqual([
      { type: 'text', text: 'All done.' },
      { type: 'usage', scope: 'call', inputTokens: 892, outputTokens: 3, cacheReadTokens: 10, cacheWriteTokens: 0, costUsd: 0.0012 },
    ]);
    expect(parse('{"type":"message_end","message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"x"}],"isError":false}}')).toEqual([]);
    expect(
      parse(
        '{"type":"agent_end","messages":[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"text","text":"Report."}],"stopReason":"stop"}]}',
      ),
    ).toEqual([{ type: 'result', ok: true, text: 'Report.' }]);
  });

  it('reports model failures and retries, drops streaming noise, and keeps unknown types as `unknown`', () => {
    expect(
      parse(
        '{"type":"message_end","message":{"role":"assistant","content":[],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"cost":{"total":0}},"stopReason":"error","errorMessage":"Connection error."}}',
      ),
    ).toEqual([
      { type: 'usage', scope: 'call', inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 },
      { type: 'error', message: 'Connection error.' },
    ]);
    expect(parse('{"type":"agent_end","messages":[{"role":"assistant","content":[],"stopReason":"error","errorMessage":"Connection error."}]}')).toEqual([
      { type: 'result', ok: false, text: 'Connection error.' },
    ]);
    expect(parse('{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"Connection error."}')).toEqual([
      { type: 'error', message: 'pi retries the model call (attempt 1 of 3): Connection error.' },
    ]);
    for (const quiet of ['agent_start', 'turn_start', 'turn_end', 'message_start', 'message_update', 'tool_execution_update', 'queue_update']) {
      expect(parse(JSON.stringify({ type: quiet }))).toEqual([]);
    }
    expect(parse('{"type":"brand_new_event","x":1}')).toEqual([{ type: 'unknown', raw: { type: 'brand_new_event', x: 1 } }]);
    expect(parsePiEvent(42)).toEqual([{ type: 'unknown', raw: 42 }]);
  });
});
