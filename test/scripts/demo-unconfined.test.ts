/**
 * `npm run demo` on a machine without bubblewrap (issue 31 item 1): a PATH holding every program
 * but `bwrap` stands in for a fresh machine. The demo runs its scripted workers unconfined in its
 * own sample repository, says so at its start and in its summary with the install line, and ends
 * as it does with the sandbox: exit 0, two task branches on origin, the default branch untouched;
 * each PR body carries the unconfined warning.
 * (With the sandbox present the same goal runs confined in test/brain/ui/ui-dashboard.test.ts.)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pathWithoutBwrap } from '../helpers/no-bwrap-path.js';
import { gitTestEnv } from '../helpers/git-repo.js';

const DEMO = join(process.cwd(), 'dist', 'scripts', 'demo.js');
const dir = join(mkdtempSync(join(tmpdir(), 'polly-demo-nobwrap-')), 'demo');
const bin = pathWithoutBwrap();

afterAll(() => {
  rmSync(join(dir, '..'), { recursive: true, force: true });
  rmSync(bin, { recursive: true, force: true });
});

describe('npm run demo without bubblewrap', () => {
  it('runs the scripted workers unconfined in the sample repository, says so twice, and ends with two ready PRs', async () => {
    const env = { ...gitTestEnv(), PATH: bin };
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [DEMO, '--dir', dir], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('exit', (c) => resolve({ code: c, stdout: out, stderr: err }));
    });
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stderr).toContain("[demo] NOTE: Polly's sandbox cannot start here (bubblewrap is not installed");
    expect(stderr).toContain('run UNCONFINED, in this sample repository only');
    expect(stderr).toContain('apt-get install bubblewrap');
    expect(stdout).toMatch(/^Sandbox: NONE, the workers ran unconfined \(bubblewrap is not installed.*apt-get install bubblewrap/m);
    expect(stdout).toMatch(/^Default branch main: unchanged, no merges/m);
    expect(stdout).toMatch(/^Branches on origin: polly\/\S+, polly\/\S+$/m);
    const reg = JSON.parse(readFileSync(join(dir, 'stats', '.polly', 'registry.json'), 'utf8')) as {
      tasks: Record<string, { purpose: string; status: string; pr: unknown }>;
      pullRequests: Record<string, { body: string }>;
    };
    const implemented = Object.values(reg.tasks).filter((t) => t.purpose === 'implement');
    expect(implemented.map((t) => t.status)).toEqual(['ready', 'ready']);
    expect(implemented.every((t) => t.pr !== null)).toBe(true);
    // Each PR says it was made without the sandbox, for the human who reviews it.
    const bodies = Object.values(reg.pullRequests).map((p) => p.body);
    expect(bodies).toHaveLength(2);
    for (const body of bodies) expect(body).toContain("**Warning: this work ran without Polly's sandbox** (`workers.allow_unconfined: true`)");
    // Only the sample repository was set to run unconfined.
    expect(readFileSync(join(dir, 'stats', '.polly', 'config.yaml'), 'utf8')).toMatch(/allow_unconfined: true/);
  }, 240_000);
});
