import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import { scrubbedProcessEnv, spawnAgentProcess } from '../../../workers/agents/agent-process.js';

const node = process.execPath;
const tmp = mkdtempSync(join(tmpdir(), 'polly-agent-process-'));

/** A trivial stream parser: `{t:"session",id}`, `{t:"text",text}`, `{t:"result",ok,text}`; others throw. */
function parseLine(json: unknown): AgentEvent[] {
  const j = json as { t?: string; id?: string; text?: string; ok?: boolean };
  if (j.t === 'session') return [{ type: 'session', sessionId: String(j.id) }];
  if (j.t === 'text') return [{ type: 'text', text: String(j.text) }];
  if (j.t === 'result') return [{ type: 'result', ok: j.ok !== false, text: String(j.text) }];
  throw new Error('unknown event');
}

function runNode(code: string, extra: Partial<Parameters<typeof spawnAgentProcess>[0]> = {}) {
  return spawnAgentProcess({
    command: node,
    args: ['-e', code],
    cwd: tmp,
    env: scrubbedProcessEnv(),
    parseLine,
    redact: [],
    ...extra,
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('spawnAgentProcess', () => {
  it('parses JSON lines, keeps non-JSON and unknown events as `unknown`, and ends ok with the session and result', async () => {
    const code = `
      const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
      let input = '';
      process.stdin.on('data', (d) => (input += d));
      process.stdin.on('end', () => {
        out({ t: 'session', id: 'S-1' });
        process.stdout.write('not json at all\\n');
        out({ t: 'brand-new-event', x: 1 });
        out({ t: 'text', text: 'got ' + input.trim() });
        process.stdout.write(JSON.stringify({ t: 'result', text: 'final report' })); // no trailing newline
      });`;
    const seen: AgentEvent[] = [];
    const run = runNode(code, { stdin: 'the prompt with sk-SECRET-123', redact: ['sk-SECRET-123'], onEvent: (e) => seen.push(e) });
    expect(run.pid).toBeGreaterThan(0);
    const r = await run.result;
    expect(r.status).toBe('ok');
    expect(r.exitCode).toBe(0);
    expect(r.sessionId).toBe('S-1');
    expect(r.finalText).toBe('final report');
    expect(r.events.map((e) => e.type)).toEqual(['session', 'unknown', 'unknown', 'text', 'result']);
    expect(r.events[1]).toEqual({ type: 'unknown', raw: 'not json at all' });
    expect(r.events[2]).toEqual({ type: 'unknown', raw: { t: 'brand-new-event', x: 1 } });
    expect(r.events[3]).toEqual({ type: 'text', text: 'got the prompt with [redacted]' });
    expect(seen).toEqual(r.events);
  });

  it('a missing binary is agent_missing at once', async () => {
    const r = await spawnAgentProcess({ command: join(tmp, 'no-such-cli'), args: [], cwd: tmp, env: scrubbedProcessEnv(), parseLine, redact: [] }).result;
    expect(r.status).toBe('agent_missing');
    expect(r.message).toMatch(/ENOENT/);
    expect(r.durationMs).toBeLessThan(3000);
  });

  it('a missing working directory is agent_exited naming it, not agent_missing', async () => {
    const r = await spawnAgentProcess({ command: node, args: ['-e', '0'], cwd: join(tmp, 'no-such-dir'), env: scrubbedProcessEnv(), parseLine, redact: [] }).result;
    expect(r.status).toBe('agent_exited');
    expect(r.message).toContain('no-such-dir');
  });

  it('exit 127 is agent_missing; a non-executable file is agent_missing', async () => {
    const script = join(tmp, 'wrapper-127.sh');
    writeFileSync(script, '#!/bin/sh\necho "wrapper: real-cli: not found" >&2\nexit 127\n');
    chmodSync(script, 0o755);
    const r = await spawnAgentProcess({ command: script, args: [], cwd: tmp, env: scrubbedProcessEnv(), parseLine, redact: [] }).result;
    expect(r.status).toBe('agent_missing');
    expect(r.stderr).toContain('not found');
    const plain = join(tmp, 'not-executable');
    writeFileSync(plain, 'x');
    chmodSync(plain, 0o644);
    const r2 = await spawnAgentProcess({ command: plain, args: [], cwd: tmp, env: scrubbedProcessEnv(), parseLine, redact: [] }).result;
    // root may execute a 0644 file only if some x bit is set; EACCES either way.
    expect(r2.status).toBe('agent_missing');
  });

  it('an instant non-zero exit is agent_exited with its stderr (secrets redacted)', async () => {
    const r = await runNode(`console.error('error: unknown option --bogus (key tok-ABCDEF)'); process.exit(1)`, { redact: ['tok-ABCDEF'] }).result;
    expect(r.status).toBe('agent_exited');
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('unknown option --bogus');
    expect(r.stderr).not.toContain('tok-ABCDEF');
    expect(r.message).toContain('exited 1');
    expect(r.events.at(-1)).toMatchObject({ type: 'error' });
  });

  it('exit 0 without a result event is agent_exited', async () => {
    const r = await runNode(`console.log(JSON.stringify({t:'text',text:'hi'}))`).result;
    expect(r.status).toBe('agent_exited');
    expect(r.message).toMatch(/without reporting a result/);
  });

  it('a prompt waiting for a human is blocked_on_prompt and killed within seconds', async () => {
    const t0 = Date.now();
    const r = await runNode(`process.stdout.write('Do you trust the files in this folder? (y/n) '); setInterval(() => {}, 1000)`, {
      promptGraceMs: 500,
    }).result;
    expect(r.status).toBe('blocked_on_prompt');
    expect(r.message).toContain('trust the files');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('prompt-like text followed by real progress is not a block', async () => {
    const r = await runNode(`console.error('Do you want to continue? (y/n)'); setTimeout(() => { console.log(JSON.stringify({t:'result',text:'done'})); }, 100)`, {
      promptGraceMs: 1500,
    }).result;
    expect(r.status).toBe('ok');
  });

  it('a timeout is timed_out', async () => {
    const t0 = Date.now();
    const r = await runNode(`setInterval(() => {}, 1000)`, { timeoutMs: 300 }).result;
    expect(r.status).toBe('timed_out');
    expect(r.message).toContain('300 ms');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('cancel kills the whole process group, escalating to SIGKILL when TERM is ignored (grandchildren too)', async () => {
    const code = `
      const { spawn } = require('node:child_process');
      process.on('SIGTERM', () => {}); // ignore TERM: the runner must escalate to KILL
      const g = spawn(process.execPath, ['-e', 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000)'], { stdio: 'ignore' });
      console.log(JSON.stringify({ t: 'session', id: String(g.pid) }));
      setInterval(() => {}, 1000);`;
    let ready: (pid: number) => void = () => {};
    const grandchild = new Promise<number>((res) => (ready = res));
    const run = runNode(code, { onEvent: (e) => e.type === 'session' && ready(Number(e.sessionId)) });
    const gpid = await grandchild;
    expect(alive(gpid)).toBe(true);
    await run.cancel();
    const r = await run.result;
    expect(r.status).toBe('cancelled');
    expect(r.signal).toBe('SIGKILL');
    await new Promise((res) => setTimeout(res, 200));
    expect(alive(gpid)).toBe(false);
  });

  it('cancel() and an abort signal end the run as cancelled', async () => {
    const run = runNode(`setInterval(() => {}, 1000)`);
    setTimeout(() => void run.cancel(), 200);
    const r = await run.result;
    expect(r.status).toBe('cancelled');
    expect(alive(run.pid)).toBe(false);

    const ac = new AbortController();
    const run2 = runNode(`setInterval(() => {}, 1000)`, { signal: ac.signal });
    setTimeout(() => ac.abort(), 200);
    expect((await run2.result).status).toBe('cancelled');
  });

  it('classify can refine the status (e.g. a refusal on stderr)', async () => {
    const r = await runNode(`console.error('--dangerously-skip-permissions cannot be used with root/sudo privileges'); process.exit(1)`, {
      classify: (o) => (/root\/sudo/.test(o.stderr) ? { status: 'agent_refused', message: 'refused as root' } : null),
    }).result;
    expect(r.status).toBe('agent_refused');
    expect(r.message).toBe('refused as root');
  });

  it('scrubbedProcessEnv drops GIT_* and adds extras', () => {
    const env = scrubbedProcessEnv({ A: '1' }, { GIT_DIR: '/x', PATH: '/bin', GIT_INDEX_FILE: 'i' });
    expect(env).toEqual({ PATH: '/bin', A: '1' });
  });
});
