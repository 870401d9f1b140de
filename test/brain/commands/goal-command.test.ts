/**
 * `polly goal` when the Brain's LLM session cannot start: a clear reason on stderr and exit 1
 * within seconds — not a Brain restarted in a loop (a newcomer ran into that as root).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');
const isRoot = process.getuid?.() === 0;

describe('polly goal', () => {
  it('needs the goal text (exit 2)', () => {
    const repo = createTestRepo();
    spawnSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv() });
    const r = spawnSync(process.execPath, [cli, 'goal'], { cwd: repo.dir, env: gitTestEnv(), encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/state the goal in quotes/);
  });

  it.runIf(isRoot)(
    'as root without allow_root_sandbox: the goal fails at once, saying why and how to fix it',
    () => {
      const repo = createTestRepo();
      const env = gitTestEnv();
      spawnSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env });
      const started = Date.now();
      const r = spawnSync(process.execPath, [cli, 'goal', 'add a thing'], { cwd: repo.dir, env, encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stderr).toBe(1);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(r.stderr).toMatch(/goal g1: failed — agent_refused: .*allow_root_sandbox: true/s);
      // The reason once: on stderr with the progress; stdout has the result line only.
      expect(r.stdout).toBe('goal g1: failed\n');
      expect(r.stderr.match(/allow_root_sandbox: true/g)).toHaveLength(1);
      expect(r.stderr).not.toMatch(/started it again/);
      // polly status says why the goal failed, in its text and in --json.
      const status = spawnSync(process.execPath, [cli, 'status'], { cwd: repo.dir, env, encoding: 'utf8' });
      expect(status.stdout).toMatch(/^ {2}g1 failed: agent_refused: .*allow_root_sandbox: true/m);
      const json = JSON.parse(spawnSync(process.execPath, [cli, 'status', '--json'], { cwd: repo.dir, env, encoding: 'utf8' }).stdout) as {
        goals: Array<{ id: string; reason: string | null }>;
      };
      expect(json.goals).toMatchObject([{ id: 'g1', reason: expect.stringMatching(/allow_root_sandbox: true/) }]);
    },
    90_000,
  );
});
