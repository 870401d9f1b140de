// `polly try`: a scripted two-task plan on a fixture repository with the real claude and pi CLIs
// and no API key in the environment; config.yaml is put back byte for byte afterwards.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { git, gitTestEnv } from '../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const cli = join(process.cwd(), 'dist/brain/cli.js');
const demo = join(process.cwd(), 'scripts/demo');

// The demo's plan with pi (not codex) as the second implementer: two tasks, two vendors, cross-reviewed.
const PLAN = readFileSync(join(demo, 'plan.yaml'), 'utf8').replace('    worker: codex\n', '    worker: pi\n');

describe.skipIf(!SANDBOXED)('polly try', () => {
  afterAll(() => stopTrackedBrains());

  it('runs a scripted two-task plan on a fixture repository with no API key, and restores the config', async () => {
    const { root, repo, origin } = sampleProjectWithOrigin('polly-try-');
    const env: NodeJS.ProcessEnv = gitTestEnv();
    for (const k of Object.keys(env)) if (/API_KEY|BASE_URL|_TOKEN$/.test(k)) delete env[k];
    const run = promisify(execFile);
    await run(process.execPath, [cli, 'init'], { cwd: repo, env });
    const configBefore = readFileSync(join(repo, '.polly/config.yaml'), 'utf8');
    const plan = join(root, 'plan.yaml');
    writeFileSync(plan, PLAN);

    const r = await run(process.execPath, [cli, 'try', plan, '--script', join(demo, 'workers-script.yaml'), '--yes', '--json'], { cwd: repo, env, timeout: 420_000 }).catch(
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    const out = JSON.parse(r.stdout) as { admitted: boolean; status: string; tasks: Array<{ key?: string; id: string; status: string; worker: string }> };
    expect(out.admitted, r.stderr).toBe(true);
    expect(out.tasks.map((t) => [t.worker, t.status]).sort(), r.stderr).toEqual([
      ['claude-code', 'ready'],
      ['pi', 'ready'],
    ]);
    expect(r.stderr).toContain('no API key is used');
    // As root (CI), the run's own allow_root_sandbox is said, not set silently.
    if (process.getuid?.() === 0) expect(r.stderr).toContain('for this run only, workers.claude-code.allow_root_sandbox is true');
    expect(r.stderr).toContain('[polly] commits by Polly Test <polly-test@example.invalid> (from environment)');
    expect(readFileSync(join(repo, '.polly/config.yaml'), 'utf8')).toBe(configBefore);
    // Polly never merges: main is where it was; both task branches are on origin
    expect(git(origin, ['branch', '--list', 'polly/*']).split('\n').length).toBe(2);
  }, 480_000);
});
