/**
 * The `polly ui` command as a user runs it (the built CLI in a real repository): it prints the
 * URL with this session's token on stdout only (never on stderr), the token opens a session, and a
 * non-loopback --host is refused with exit 2 unless --allow-remote.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');
const stops: Array<() => void> = [];
afterEach(() => {
  while (stops.length) stops.pop()!();
});

function initRepo(): string {
  const repo = createTestRepo();
  execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv(), stdio: 'pipe' });
  return repo.dir;
}

describe('polly ui', () => {
  it('prints the login URL on stdout only; the token opens a session once; Enter prints another; Ctrl-C stops it', async () => {
    const dir = initRepo();
    const child = spawn(process.execPath, [cli, 'ui', '--json'], { cwd: dir, env: gitTestEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    stops.push(() => child.kill('SIGKILL'));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const deadline = Date.now() + 60_000;
    while (!stderr.includes('Ctrl-C to stop')) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`polly ui did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const first = stdout;
    const out = JSON.parse(first) as { url: string; loginUrl: string; port: number };
    expect(out.url).toBe(`http://127.0.0.1:${out.port}`);
    const token = new URL(out.loginUrl).searchParams.get('token')!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(stderr).toContain(out.url);
    expect(stderr).not.toContain(token);

    expect((await fetch(`${out.url}/`)).status).toBe(401);
    const login = await fetch(out.loginUrl, { redirect: 'manual' });
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const root = login.headers.get('location')!;
    const home = await fetch(`${out.url}${root}`, { headers: { cookie } });
    expect(home.status).toBe(200);
    expect(await home.text()).toContain('Goals &amp; plans');
    expect((await fetch(out.loginUrl, { redirect: 'manual' })).status).toBe(401); // once only

    child.stdin.write('\n');
    const next = Date.now() + 30_000;
    while (!stdout.slice(first.length).trim().endsWith('}')) {
      if (Date.now() > next) throw new Error(`no second login URL after Enter: ${stdout}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const again = JSON.parse(stdout.slice(first.length)) as { loginUrl: string };
    expect(again.loginUrl).not.toBe(out.loginUrl);
    expect(stderr).not.toContain(new URL(again.loginUrl).searchParams.get('token')!);
    expect((await fetch(again.loginUrl, { redirect: 'manual' })).status).toBe(303);

    child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    expect(code).toBe(0);
  }, 90_000);

  it('refuses a non-loopback --host without --allow-remote (exit 2, saying why)', () => {
    const dir = initRepo();
    const r = spawnSync(process.execPath, [cli, 'ui', '--host', '0.0.0.0'], { cwd: dir, env: gitTestEnv(), encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/refusing to listen on "0\.0\.0\.0", which is not a loopback address.*--allow-remote/);
  }, 90_000);
});
