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
