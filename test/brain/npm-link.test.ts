/**
 * The README's install path from a clone, `npm link --ignore-scripts`, is clean: no install-scripts
 * warning (plain `npm link` prints one for Polly's own `prepare` under npm 11, which treats it as a
 * link dependency's script that no `allowScripts` covers) and a working `polly` on the prefix's PATH.
 * A temp global prefix (`npm_config_prefix`): the machine's global packages are not touched.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const prefix = realpathSync(mkdtempSync(join(tmpdir(), 'polly-npm-link-')));
afterAll(() => rmSync(prefix, { recursive: true, force: true }));

/** Run a command with a bound; its output and exit code. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: process.cwd(), env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 90_000 });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('npm link from the clone', () => {
  it('the README command links polly without the install-scripts warning and the linked polly runs', { timeout: 120_000 }, async () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme).toContain('`npm link --ignore-scripts`');
    const env = { ...process.env, npm_config_prefix: prefix, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
    const link = await run('npm', ['link', '--ignore-scripts'], env);
    expect(link.code, link.out).toBe(0);
    expect(link.out).not.toMatch(/install-scripts|allowScripts/);
    const help = await run(join(prefix, 'bin', 'polly'), ['help'], env);
    expect(help.code, help.out).toBe(0);
    expect(help.out).toMatch(/Polly never merges/);
  });
});
