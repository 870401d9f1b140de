/**
 * The scripted model server run standalone (as `npm run demo` does): `node dist/scripts/scripted-model/server.js
 * --script FILE` prints `{"url": …}` once listening and stops on SIGTERM. Needs `npm run build`.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';

const SERVER = join(process.cwd(), 'dist/scripts/scripted-model/server.js');

describe('scripted model server, standalone', () => {
  it('prints its URL, answers Messages API calls, records them, and exits on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-sms-'));
    const file = join(dir, 'script.yaml');
    writeFileSync(file, 'sessions:\n  - match: {task: d1}\n    turns:\n      - steps: [{finish: "demo done"}]\n');
    const child = spawn(process.execPath, [SERVER, '--script', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: string) => {
        out += d;
        if (out.includes('\n')) resolve(out.split('\n')[0]!);
      });
      child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
    });
    const { url } = JSON.parse(line) as { url: string };
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: '[polly task=d1] go' }], tools: [{ name: 'Bash' }] }),
    });
    expect(((await res.json()) as { content: unknown[] }).content).toEqual([{ type: 'text', text: 'demo done' }]);
    const recorded = (await (await fetch(`${url}/_polly/requests`)).json()) as { session: string | null }[];
    expect(recorded.map((r) => r.session)).toEqual(['session-0']);
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
  });

  it('a bad script exits 2 naming the file and the problem', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-sms-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'turns: []\n');
    const child = spawn(process.execPath, [SERVER, '--script', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => (err += d));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(2);
    expect(err).toContain(file);
    expect(err).toContain('sessions');
  });
});

describe('scripted model server, latency_ms', () => {
  it("waits a session's latency_ms before each answer, other sessions not; a bad value is refused naming the session", async () => {
    const { startScriptedModelServer } = await import('../../scripts/scripted-model/server.js');
    const { parseModelScript } = await import('../../scripts/scripted-model/script.js');
    const script = parseModelScript(
      'sessions:\n  - name: slow\n    match: {task: s1}\n    latency_ms: 400\n    turns:\n      - steps: [{finish: "slow"}]\n  - name: fast\n    match: {task: f1}\n    turns:\n      - steps: [{finish: "fast"}]\n',
    );
    const server = await startScriptedModelServer({ script });
    try {
      const call = async (task: string) => {
        const t0 = performance.now();
        const res = await fetch(`${server.url}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: `[polly task=${task}] go` }] }),
        });
        const text = ((await res.json()) as { content: Array<{ text: string }> }).content[0]!.text;
        return { text, ms: performance.now() - t0 };
      };
      const slow = await call('s1');
      const fast = await call('f1');
      expect(slow.text).toBe('slow');
      expect(slow.ms).toBeGreaterThanOrEqual(390);
      expect(fast.text).toBe('fast');
      expect(fast.ms).toBeLessThan(slow.ms);
    } finally {
      await server.close();
    }
    expect(() => parseModelScript('sessions:\n  - name: x\n    latency_ms: -1\n    turns: []\n', 'bad.yaml')).toThrow(
      /bad\.yaml: sessions\[0\]\.latency_ms must be a number of milliseconds from 0 to 60000; got -1/,
    );
  });
});

describe('scripted model server, wait_for', () => {
  it("holds a session's answers until each session it waits for has sent a request; a name that is no other session is refused", async () => {
    const { startScriptedModelServer } = await import('../../scripts/scripted-model/server.js');
    const { parseModelScript } = await import('../../scripts/scripted-model/script.js');
    const script = parseModelScript(
      'sessions:\n  - name: a\n    match: {task: a1}\n    wait_for: [b]\n    turns:\n      - steps: [{finish: "a"}]\n  - name: b\n    match: {task: b1}\n    wait_for: [a]\n    turns:\n      - steps: [{finish: "b"}]\n',
    );
    const server = await startScriptedModelServer({ script });
    try {
      const call = async (task: string) => {
        const res = await fetch(`${server.url}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: `[polly task=${task}] go` }] }),
        });
        return ((await res.json()) as { content: Array<{ text: string }> }).content[0]!.text;
      };
      let answered = false;
      const a = call('a1').then((text) => {
        answered = true;
        return text;
      });
      // a's request has arrived (recorded) and waits: b has sent nothing yet.
      for (let i = 0; i < 100 && !server.requests.some((r) => r.session === 'a'); i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 200));
      expect(server.requests.map((r) => r.session)).toEqual(['a']);
      expect(answered).toBe(false);
      // b's request lets both go (a has started, so b does not wait).
      expect(await call('b1')).toBe('b');
      expect(await a).toBe('a');
      // Once both have started, nothing waits any more.
      expect(await call('a1')).toBe('a');
    } finally {
      await server.close();
    }
    expect(() => parseModelScript('sessions:\n  - name: x\n    wait_for: [y]\n    turns: []\n  - name: z\n    turns: []\n', 'bad.yaml')).toThrow(
      /bad\.yaml: sessions\[0\]\.wait_for must list the names of other sessions of this script \(z\); got "y"/,
    );
    expect(() => parseModelScript('sessions:\n  - name: x\n    wait_for: x\n    turns: []\n', 'bad.yaml')).toThrow(/sessions\[0\]\.wait_for must list/);
  });
});
