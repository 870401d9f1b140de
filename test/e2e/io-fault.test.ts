/**
 * A full disk never takes the Brain down (issue 27 item 6; brain/core/io-fault.ts). The repository,
 * its bare origin, its worktrees and `.polly/` live on a 160 MiB tmpfs (mounted here: root only;
 * CI runs as root, so under CI=true a failed mount fails the test). Real git, the real claude and
 * pi CLIs against the scripted model server, the real sandbox, `polly run plan.yaml --yes`:
 * - the filler task's check writes 400 MiB into its worktree: the file system is full and Polly's
 *   next write of that task's state fails with ENOSPC; the task is parked, its reason naming the
 *   file system, its free space and what to free;
 * - the sibling task goes ready, and `polly run` ends on its own;
 * - `polly status` names the nearly full file system and how much is free.
 * On code without it the ENOSPC is a fault of the order: retried, then the Brain's own writes
 * fail and `polly run` stops with the sibling unfinished.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitTestEnv } from '../helpers/git-repo.js';
import { type CliRun, runCliAsync } from '../helpers/registry-cli.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import type { Registry } from '../../brain/registry/registry-schema.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const FIXTURES = join(process.cwd(), 'test/fixtures/io-fault');

/** A 160 MiB tmpfs at a fresh directory, or why it cannot be mounted here. */
function smallFileSystem(): { dir: string } | { why: string } {
  const dir = mkdtempSync(join(tmpdir(), 'polly-small-fs-'));
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=160m', 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status === 0) return { dir };
  rmSync(dir, { recursive: true, force: true });
  return { why: `mount -t tmpfs failed (${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}): this test needs root` };
}

const fs = smallFileSystem();

it('has a small file system to fill', () => {
  if (process.env.CI === 'true') expect('why' in fs ? fs.why : null).toBeNull();
});

describe.skipIf(!SANDBOXED || 'why' in fs)('a worker that fills the disk', () => {
  const mount = 'dir' in fs ? fs.dir : '';
  let repo = '';
  let server: ScriptedModelServer | null = null;
  let result: CliRun = { code: null, stdout: '', stderr: '' };
  let env: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = mount;
    try {
      repo = sampleProjectWithOrigin('polly-io-fault-').repo;
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    env = gitTestEnv();
    const init = await runCliAsync(['init'], repo, env, 30_000);
    expect(init.code, init.stderr).toBe(0);
    server = await startScriptedModelServer({ script: parseModelScript(readFileSync(join(FIXTURES, 'workers-script.yaml'), 'utf8'), 'workers-script.yaml') });
    env = {
      ...env,
      ...useScriptedModels(repo, server.url, {
        extra: [
          [['worktrees', 'setup'], null],
          [['acceptance', 'commands'], ['true']],
        ],
      }),
    };
    const plan = join(repo, '..', 'plan.yaml');
    copyFileSync(join(FIXTURES, 'plan.yaml'), plan);
    result = await runCliAsync(['run', plan, '--yes', '--json'], repo, env, 300_000);
  }, 420_000);

  afterAll(async () => {
    await server?.close();
    await stopTrackedBrains();
    if (mount) {
      spawnSync('umount', ['-l', mount]);
      rmSync(mount, { recursive: true, force: true });
    }
  });

  const tasks = () => Object.values((JSON.parse(readFileSync(join(repo, '.polly', 'registry.json'), 'utf8')) as Registry).tasks);
  const byTitle = (title: string) => tasks().find((t) => t.title === title)!;

  it('parks the task whose write failed, naming the file system and its free space, and the sibling finishes', async () => {
    const said = `${result.stdout}\n${result.stderr}`.slice(-4000);
    const filler = byTitle('Fill the disk');
    expect(filler.status, `${filler.statusReason}\n${said}`).toBe('parked');
    expect(filler.statusReason).toContain('I/O fault (ENOSPC)');
    expect(filler.statusReason).toContain(`the file system mounted at ${mount}`);
    expect(filler.statusReason).toMatch(/MiB free of 160 MiB/);
    const sibling = byTitle('Add the sibling marker');
    expect(sibling.status, `${sibling.statusReason}\n${said}`).toBe('ready');
    // polly run ended on its own (not by the test's timeout).
    expect(result.code, said).not.toBeNull();
    const status = await runCliAsync(['status'], repo, env, 30_000);
    expect(status.stdout).toMatch(new RegExp(`disk: [\\d.]+ MiB free of 160 MiB on ${mount}`));
    expect(status.stdout).toContain('parked');
  });
});
