/**
 * The LLM brain host: the real `claude` (2.1.197) runs as the Brain against the scripted
 * model, with Polly's brain tools served by `node dist/brain/cli.js mcp --brain` over MCP and its
 * own tool calls gated with the `brain` role. One long-lived process; two turns over stream-json.
 * Needs `npm run build` (the MCP server and the gate hook run from dist/).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toInboxEvents } from '../../../brain/mcp/inbox-events.js';
import { BRAIN_SKILLS, brainSystemPrompt, loadBrainSkills } from '../../../brain/llm/brain-prompt.js';
import { loadConfig } from '../../../brain/config/config.js';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { brainClaudeArgs, firstBrainMessage, pollyMcpInitProblem, startLlmBrain, wakeMessage, type LlmBrain } from '../../../brain/llm/llm-brain.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { mapClaudeTool, pollyMcpDecision } from '../../../gate/hooks/harness-tools.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import { createTestRepo, gitTestEnv, type TestRepo } from '../../helpers/git-repo.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');

const planTask = (reviewer: string) => ({
  key: 't1',
  title: 'Add the x module',
  purpose: 'implement',
  worker: 'codex',
  reviewer,
  prompt: 'Create src/x.js exporting x = 1, with a test.',
  acceptance: { commands: ['npm test'], criteria: ['x is exported'] },
});

const SCRIPT = {
  sessions: [
    {
      name: 'brain',
      match: { task: 'g1', role: 'brain' },
      turns: [
        {
          steps: [
            { call: { tool: 'mcp__polly__polly_status', input: {} } },
            { call: { tool: 'mcp__polly__plan_propose', input: { goal_id: 'g1', tasks: [planTask('codex')] } } },
            { call: { tool: 'mcp__polly__plan_propose', input: { goal_id: 'g1', tasks: [planTask('claude-code')] } } },
            { write: { path: 'src/x.js', content: 'export const x = 1;\n' } },
            { write: { path: 'docs/notes.md', content: '# Brain notes\n\nPlan p2 waits for approval.\n' } },
            { finish: 'Plan p2 admitted; waiting for approval.' },
          ],
        },
        {
          steps: [{ call: { tool: 'mcp__polly__sys_read_inbox', input: { wait_s: 20 } } }, { finish: 'Read the inbox: p1 refused, p2 waits for a human.' }],
        },
        { steps: [{ call: { tool: 'mcp__polly__polly_status', input: {} } }, { finish: 'Resumed after the restart.' }] },
      ],
    },
  ],
};

/** Live processes whose command line mentions `needle` (from /proc). */
function processesMentioning(needle: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(needle) && Number(pid) !== process.pid) out.push(`${pid}: ${cmd.slice(0, 200)}`);
    } catch {
      // gone
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

let server: ScriptedModelServer;
let repo: TestRepo;
let brain: LlmBrain;
const events: AgentEvent[] = [];
let turn1: { ok: boolean; text: string; sessionId: string | null };

/**
 * The real CLI behind a 7 s delay: `polly mcp --brain` as slow to start as on a loaded machine.
 * claude 2.1.197 on its own starts the turn after 5 s with the server "pending" (no Polly tools);
 * the Brain's claude must wait for it (llm-brain.ts sets MCP_CONNECT_TIMEOUT_MS).
 */
function slowStartingCli(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'polly-slow-cli-')), 'slow-cli.mjs');
  writeFileSync(file, `await new Promise((r) => setTimeout(r, 7000));\nprocess.argv[1] = ${JSON.stringify(cli)};\nawait import(${JSON.stringify(pathToFileURL(cli).href)});\n`);
  return file;
}

beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(JSON.stringify(SCRIPT)) });
  repo = createTestRepo({ 'README.md': '# demo\n', 'src/a.js': 'export const a = 1;\n' });
  execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  const config = await loadConfig(repo.dir);
  config.workers['claude-code'].allow_root_sandbox = true; // this container runs tests as root
  const pollyDir = join(repo.dir, '.polly');
  brain = startLlmBrain({
    repoRoot: repo.dir,
    pollyDir,
    config,
    goal: { id: 'g1', text: 'Add an x module.' },
    stateDir: join(pollyDir, 'brain', 'g1'),
    env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-test-brain-key' },
    resumeSessionId: null,
    cliPath: slowStartingCli(),
    onEvent: (e) => events.push(e),
  });
});

afterAll(async () => {
  await brain?.close();
  await server?.close();
});

describe('the LLM brain host (real claude, scripted model, polly mcp --brain)', () => {
  it('turn 1: polly_status, a same-vendor plan refused with its counterexample, the revision admitted', async () => {
    turn1 = await brain.turn(firstBrainMessage({ id: 'g1', text: 'Add an x module.' }));
    expect(turn1.ok, `${turn1.text}\n${JSON.stringify(events.filter((e) => e.type === 'error'))}`).toBe(true);
    expect(events.filter((e) => e.type === 'error')).toEqual([]); // polly's MCP server was connected at init, 7 s late
    expect(turn1.text).toBe('Plan p2 admitted; waiting for approval.');
    expect(turn1.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(brain.sessionId()).toBe(turn1.sessionId);

    const calls = events.filter((e): e is Extract<AgentEvent, { type: 'tool_call' }> => e.type === 'tool_call').map((e) => e.tool);
    expect(calls.slice(0, 3)).toEqual(['mcp__polly__polly_status', 'mcp__polly__plan_propose', 'mcp__polly__plan_propose']);

    // What the model received after each plan_propose (claude 2.1 shows the model the structured
    // content, which carries the instruction too): the refusal with its counterexample, then the admission.
    const brainRequests = server.requests.filter((r) => r.session === 'brain');
    const received = brainRequests.map((r) => r.view?.lastToolResult?.text ?? '').filter((t) => t.includes('"plan_id"'));
    expect(received).toHaveLength(2);
    const refusal = received[0]!;
    expect(refusal).toMatch(/REFUSED/);
    expect(refusal).toMatch(/t1\/reviewer-vendor-differs/);
    const refused = JSON.parse(refusal.slice(refusal.indexOf('{'))) as { admitted: boolean; counterexamples: string[]; instruction: string };
    expect(refused.admitted).toBe(false);
    expect(refused.counterexamples[0]).toMatch(/\n {2}1\. START .*\n {2}2\. /); // the shortest counterexample, step by step
    expect(refused.instruction).toContain(refused.counterexamples[0]);
    expect(refused.instruction).toMatch(/plan_propose again/);
    expect(received[1]).toMatch(/Plan p2 is admitted and waits at the plan gate/);
    // The system prompt states the role and lists the skills.
    const system = brainRequests[0]?.view?.system ?? '';
    expect(system).toContain('You never write business code');
    for (const s of BRAIN_SKILLS) expect(system).toContain(`- ${s}: `);
    // ...and Claude Code loaded them from CLAUDE_CONFIG_DIR/skills: its skill listing reaches the model.
    const body = JSON.stringify(brainRequests[0]?.body);
    for (const s of loadBrainSkills()) expect(body).toContain(s.description.slice(0, 60));
    expect(existsSync(join(repo.dir, '.polly/brain/g1/claude/skills/fanout/SKILL.md'))).toBe(true);

    const reg = await createFileRegistryStore(join(repo.dir, '.polly')).read();
    expect(Object.values(reg.plans).map((p) => [p.id, p.gate, p.goalId])).toEqual([
      ['p1', 'refused', 'g1'],
      ['p2', 'pending', 'g1'],
    ]);
  });

  it('its own writes pass the gate with the brain role: src/x.js denied, docs/notes.md written; polly MCP calls allowed by allow.polly_mcp', () => {
    const results = events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
    const calls = events.filter((e): e is Extract<AgentEvent, { type: 'tool_call' }> => e.type === 'tool_call');
    const resultOf = (pathEnd: string) => {
      const call = calls.find((c) => c.tool === 'Write' && String((c.input as { file_path?: string }).file_path).endsWith(pathEnd));
      return results.find((r) => r.id === call?.id);
    };
    expect(resultOf('src/x.js')).toMatchObject({ isError: true });
    expect(resultOf('src/x.js')?.output).toMatch(/purpose_guard\.brain.*never source/);
    expect(existsSync(join(repo.dir, 'src/x.js'))).toBe(false);
    expect(resultOf('docs/notes.md')).toMatchObject({ isError: false });
    expect(readFileSync(join(repo.dir, 'docs/notes.md'), 'utf8')).toContain('Plan p2 waits');

    const decisions = readFileSync(join(repo.dir, '.polly', 'gate-decisions.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { data?: Record<string, unknown> } & Record<string, unknown>)
      .map((e) => (e.data ?? e) as Record<string, unknown>);
    const mcp = decisions.filter((d) => d.rule === 'allow.polly_mcp');
    expect(mcp.map((d) => d.input)).toEqual(['mcp__polly__polly_status', 'mcp__polly__plan_propose', 'mcp__polly__plan_propose']);
    expect(mcp.every((d) => d.role === 'brain' && d.decision === 'allow')).toBe(true);
    expect(decisions.find((d) => d.rule === 'purpose_guard.brain')).toMatchObject({ decision: 'deny', role: 'brain' });
  });

  it('turn 2: a wake message reaches the same session and sys_read_inbox returns the plan events at once', async () => {
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const inbox = toInboxEvents(await store.journal(0));
    expect(inbox.map((e) => e.kind)).toEqual(['plan.refused', 'plan.proposed']);
    const wake = wakeMessage(inbox);
    const before = events.length;
    const started = Date.now();
    const t2 = await brain.turn(wake);
    expect(t2.ok, t2.text).toBe(true);
    expect(t2.text).toBe('Read the inbox: p1 refused, p2 waits for a human.');
    expect(t2.sessionId).toBe(turn1.sessionId);
    expect(Date.now() - started).toBeLessThan(15_000); // far below the 20 s wait: events were there

    const last = server.requests.filter((r) => r.session === 'brain').at(-1);
    expect(last?.view?.humanTurns).toBe(2);
    expect(last?.turnIndex).toBe(1);
    const mine = events.slice(before);
    const call = mine.find((e): e is Extract<AgentEvent, { type: 'tool_call' }> => e.type === 'tool_call');
    expect(call?.tool).toBe('mcp__polly__sys_read_inbox');
    const result = mine.find((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result' && e.id === call?.id);
    expect(result?.isError).toBe(false);
    expect(result?.output).toMatch(/2 event\(s\)/);
    const inboxResult = JSON.parse(result!.output.slice(result!.output.indexOf('{'))) as { events: Array<{ kind: string; planId: string }> };
    expect(inboxResult.events.map((e) => [e.kind, e.planId])).toEqual([
      ['plan.refused', 'p1'],
      ['plan.proposed', 'p2'],
    ]);
    expect((await store.read()).inboxCursor).toBe(inbox.at(-1)!.seq);
  });

  it('close() ends claude, its MCP server and its hooks: nothing is left behind', async () => {
    const pid = brain.pid;
    expect(alive(pid)).toBe(true);
    expect(processesMentioning(join(repo.dir, '.polly')).length).toBeGreaterThan(0); // the MCP server (--registry <pollyDir>)
    await brain.close();
    const exit = await brain.exited;
    expect(exit.code).toBe(0);
    expect(alive(pid)).toBe(false);
    expect(processesMentioning(repo.dir)).toEqual([]);
    expect(exit.stderr).not.toContain('sk-test-brain-key');
    // A turn after close is an answer, not a hang.
    const late = await brain.turn('hello?');
    expect(late.ok).toBe(false);
    expect(late.text).toMatch(/has exited.*resumeSessionId/);
  });
});

describe('after a Brain restart', () => {
  it('a new process with resumeSessionId continues the same conversation (third human turn)', async () => {
    const config = await loadConfig(repo.dir);
    config.workers['claude-code'].allow_root_sandbox = true;
    const pollyDir = join(repo.dir, '.polly');
    const again = startLlmBrain({
      repoRoot: repo.dir,
      pollyDir,
      config,
      goal: { id: 'g1', text: 'Add an x module.' },
      stateDir: join(pollyDir, 'brain', 'g1'),
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-test-brain-key' },
      resumeSessionId: turn1.sessionId,
      cliPath: cli,
    });
    try {
      const t3 = await again.turn(wakeMessage([]));
      expect(t3.ok, t3.text).toBe(true);
      expect(t3.text).toBe('Resumed after the restart.');
      expect(again.sessionId()).toBe(turn1.sessionId);
      const last = server.requests.filter((r) => r.session === 'brain').at(-1);
      expect(last?.view?.humanTurns).toBe(3);
      expect(last?.view?.lastToolResult?.isError).toBe(false); // polly_status answered over MCP at once
    } finally {
      await again.close();
    }
    expect(processesMentioning(repo.dir)).toEqual([]);
  });
});

describe('LLM brain pieces', () => {
  it('messages: the first carries the scripted-model marker on line 1; a wake digest ends with sys_read_inbox', () => {
    const first = firstBrainMessage({ id: 'g7', text: 'Make the CLI faster.' });
    expect(first.split('\n')[0]).toBe('[polly task=g7 role=brain] Goal g7');
    expect(first).toContain('Make the CLI faster.');
    const wake = wakeMessage([
      { seq: 4, at: '2026-11-30T00:00:00Z', kind: 'task.finished', taskId: 't1', status: 'done' },
      { seq: 5, at: '2026-11-30T00:00:01Z', kind: 'plan.approved', planId: 'p2' },
    ]);
    expect(wake).toContain('- #4 task.finished: taskId=t1 status=done');
    expect(wake).toContain('- #5 plan.approved: planId=p2');
    expect(wake.trim().split('\n').at(-1)).toMatch(/^Call sys_read_inbox/);
    const many = wakeMessage(Array.from({ length: 25 }, (_, i) => ({ seq: i + 1, at: 'x', kind: 'task.status' })));
    expect(many).toContain('… and 5 more');
  });

  it('init: a polly MCP server that is not connected is reported', () => {
    const init = (status: string) => ({ type: 'system', subtype: 'init', mcp_servers: [{ name: 'polly', status }] });
    expect(pollyMcpInitProblem(init('connected'))).toBeNull();
    expect(pollyMcpInitProblem(init('failed'))).toMatch(/is failed.*mcp --brain/);
    expect(pollyMcpInitProblem({ type: 'system', subtype: 'init', mcp_servers: [] })).toMatch(/is missing/);
    expect(pollyMcpInitProblem({ type: 'assistant' })).toBeNull();
  });

  it('argv: stream-json in and out, strict MCP config, the appended prompt, model and resume, the gate last', () => {
    const args = brainClaudeArgs({
      mcpConfigPath: '/s/brain-mcp.json',
      systemPrompt: 'P',
      model: 'claude-sonnet-4-5',
      resumeSessionId: 'abc',
      gateArgs: ['--settings', '/s/gate/claude-settings.json'],
    });
    expect(args.slice(0, 6)).toEqual(['-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose']);
    expect(args).toContain('--strict-mcp-config');
    expect(args[args.indexOf('--mcp-config') + 1]).toBe('/s/brain-mcp.json');
    expect(args[args.indexOf('--append-system-prompt') + 1]).toBe('P');
    expect(args[args.indexOf('--resume') + 1]).toBe('abc');
    expect(args.slice(-2)).toEqual(['--settings', '/s/gate/claude-settings.json']);
  });

  it('skills: three SKILL.md files with name/description front matter, listed in the prompt', () => {
    const skills = loadBrainSkills();
    expect(skills.map((s) => s.name)).toEqual(['investigate', 'fanout', 'cross-review']);
    for (const s of skills) {
      expect(s.text.startsWith(`---\nname: ${s.name}\ndescription: `)).toBe(true);
      expect(s.description.length).toBeGreaterThan(80);
      expect(s.description.length).toBeLessThanOrEqual(1024);
    }
    const prompt = brainSystemPrompt({ skills, maxDispatches: 5 });
    expect(prompt).toMatch(/At most 5 dispatches per turn/);
    expect(prompt).toMatch(/never merges/);
    expect(prompt).not.toMatch(/\b(task|role)=/); // no tokens the scripted model matches on
  });

  it('gate: only the brain role may call polly MCP tools; workers and other servers stay denied', () => {
    expect(pollyMcpDecision('brain', 'mcp__polly__plan_propose')).toMatchObject({ decision: 'allow', rule: 'allow.polly_mcp' });
    for (const role of ['implement', 'review', 'explore', 'search'] as const) expect(pollyMcpDecision(role, 'mcp__polly__sys_session_send')).toBeNull();
    expect(pollyMcpDecision('brain', 'mcp__other__x')).toBeNull();
    expect(pollyMcpDecision('brain', 'mcp__polly__')).toBeNull();
    expect(mapClaudeTool('mcp__polly__sys_session_send', {})).toMatchObject({ ok: false });
  });

  it.runIf(process.getuid?.() === 0)('as root without allow_root_sandbox: agent_refused before anything starts', () => {
    const dir = '/tmp/polly-llm-brain-root-never-created';
    expect(() =>
      startLlmBrain({
        repoRoot: dir,
        pollyDir: join(dir, '.polly'),
        config: DEFAULT_CONFIG,
        goal: { id: 'g1', text: 'x' },
        stateDir: join(dir, '.polly/brain/g1'),
        env: {},
        resumeSessionId: null,
        cliPath: cli,
      }),
    ).toThrow(/allow_root_sandbox/);
    expect(existsSync(dir)).toBe(false);
  });

  it('without ANTHROPIC_API_KEY the Brain refuses at once, naming the variable (claude would wait "Not logged in")', async () => {
    const config = await loadConfig(repo.dir);
    config.workers['claude-code'].allow_root_sandbox = true;
    expect(() =>
      startLlmBrain({
        repoRoot: repo.dir,
        pollyDir: join(repo.dir, '.polly'),
        config,
        goal: { id: 'g8', text: 'x' },
        stateDir: join(mkdtempSync(join(tmpdir(), 'polly-llm-nokey-')), 'state'),
        env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' },
        resumeSessionId: null,
        cliPath: cli,
      }),
    ).toThrow(/set ANTHROPIC_API_KEY/);
  });

  it('claude dying mid-turn resolves the turn with ok: false and what to do (no hang)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-llm-brain-dies-'));
    const fake = join(dir, 'claude-dies');
    writeFileSync(fake, '#!/bin/sh\nread line\necho "boom: the model is gone" >&2\nexit 3\n', { mode: 0o755 });
    const config = await loadConfig(repo.dir);
    config.workers['claude-code'].allow_root_sandbox = true;
    const b = startLlmBrain({
      repoRoot: repo.dir,
      pollyDir: join(repo.dir, '.polly'),
      config,
      goal: { id: 'g9', text: 'x' },
      stateDir: join(dir, 'state'),
      env: { ANTHROPIC_API_KEY: 'sk-test-brain-key' },
      resumeSessionId: null,
      cliPath: cli,
      binary: fake,
    });
    const t = await b.turn(firstBrainMessage({ id: 'g9', text: 'x' }));
    expect(t.ok).toBe(false);
    expect(t.text).toMatch(/exited \(code 3.*boom: the model is gone.*resumeSessionId/);
    expect((await b.exited).code).toBe(3);
    await b.close();
  });

  it('polly mcp --brain serves the brain tools next to the workflow tools (tools/list over stdio)', async () => {
    // Listing only; the calls themselves are exercised through claude above.
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const client = new Client({ name: 'test', version: '1' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cli, 'mcp', '--brain', '--repo', repo.dir],
      env: gitTestEnv() as Record<string, string>,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    let names: string[];
    try {
      await client.connect(transport);
      names = (await client.listTools()).tools.map((t) => t.name);
    } catch (error) {
      throw new Error(`polly mcp --brain failed: ${(error as Error).message}\nstderr: ${stderr}`);
    } finally {
      await client.close();
    }
    expect(names).toEqual(expect.arrayContaining(['workflow_list', 'sys_session_send', 'sys_read_inbox', 'sys_cancel_task', 'plan_propose', 'polly_status']));
  });
});
