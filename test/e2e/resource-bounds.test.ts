/**
 * Resource bounds per sandbox (issue 27 item 5; workers/sandbox/resource-bounds.ts). Real git (a
 * bare origin), the real claude and pi CLIs against the scripted model server, the real bubblewrap
 * sandbox, `polly run plan.yaml --yes`. Four hostile tasks run beside a sibling:
 * - a fork bomb, a `/tmp` filler and a 4 GiB `fallocate` in the worktree, as acceptance checks (the
 *   checks' sandbox), and a multi-MiB stdout line from the real claude CLI (its model answers with
 *   one huge text);
 * - each fails only its own task, its reason naming the bound, its limit and the config key; the
 *   Brain (polly run) ends, and the sibling task goes ready.
 * On code without the bounds the fork bomb runs unbounded (so this test refuses to run where
 * processes cannot be bounded: a failure under CI=true), `/tmp` holds the 80 MiB, the 4 GiB file is
 * made, and the line is stored whole: no task names a bound.
 */
import { copyFileSync, readFileSync } from 'node:fs';
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
import { probeBoundsMechanism } from '../../workers/sandbox/resource-bounds.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const FIXTURES = join(process.cwd(), 'test/fixtures/resource-bounds');
const bounded = probeBoundsMechanism().processesBounded;

it('can bound processes here (a fork bomb must not run unbounded)', () => {
  // Root without a cgroup cannot be bounded (RLIMIT_NPROC never applies to uid 0): fail in CI, skip the rest elsewhere.
  if (process.env.CI === 'true') expect(bounded, 'polly doctor: processes are not bounded on this machine').toBe(true);
});

describe.skipIf(!SANDBOXED || !bounded)('hostile tasks beside a sibling', () => {
  let repo = '';
  let server: ScriptedModelServer | null = null;
  let result: CliRun = { code: null, stdout: '', stderr: '' };

  beforeAll(async () => {
    const project = sampleProjectWithOrigin('polly-bounds-');
    repo = project.repo;
    let env = gitTestEnv();
    const init = await runCliAsync(['init'], repo, env, 30_000);
    expect(init.code, init.stderr).toBe(0);
    const script = readFileSync(join(FIXTURES, 'workers-script.yaml'), 'utf8').replace('"LONG_TEXT"', JSON.stringify('y'.repeat(3 * 1024 * 1024)));
    server = await startScriptedModelServer({ script: parseModelScript(script, 'workers-script.yaml') });
    env = {
      ...env,
      ...useScriptedModels(repo, server.url, {
        extra: [
          [['worktrees', 'setup'], null],
          [['acceptance', 'commands'], ['true']],
          [['acceptance', 'timeout'], 60],
          // The line bound well below the 3 MiB line: claude, exiting, may flush only part of a huge last line to the pipe.
          [['workers', 'limits'], { max_processes: 128, tmp_mib: 32, output_line_kib: 128 }],
        ],
      }),
    };
    const plan = join(project.root, 'plan.yaml');
    copyFileSync(join(FIXTURES, 'plan.yaml'), plan);
    result = await runCliAsync(['run', plan, '--yes', '--json'], repo, env, 400_000);
  }, 480_000);

  afterAll(async () => {
    await server?.close();
    await stopTrackedBrains();
  });

  const tasks = () => Object.values((JSON.parse(readFileSync(join(repo, '.polly', 'registry.json'), 'utf8')) as Registry).tasks);
  const byTitle = (title: string) => tasks().find((t) => t.title === title)!;

  it('fails each hostile task alone, naming the bound, its limit and the key', () => {
    const said = `${result.stdout}\n${result.stderr}`;
    const cases: Array<[string, string, string]> = [
      ['Fork bomb', 'processes bound (128 processes', 'workers.limits.max_processes'],
      ['Fill tmp', '/tmp size bound (32 MiB', 'workers.limits.tmp_mib'],
      ['Huge file', 'file size bound (1024 MiB', 'workers.limits.file_size_mib'],
      ['Long line', 'output line bound (128 KiB', 'workers.limits.output_line_kib'],
    ];
    for (const [title, bound, key] of cases) {
      const t = byTitle(title);
      expect(t.status, `${title}: ${t.statusReason}\n${said.slice(-3000)}`).toBe('failed');
      expect(t.statusReason, title).toContain(bound);
      expect(t.statusReason, title).toContain(key);
    }
    // The over-long line was stored cut, with a marker, not whole.
    const registry = readFileSync(join(repo, '.polly', 'registry.json'), 'utf8');
    expect(registry.length).toBeLessThan(2 * 1024 * 1024);
  });

  it('lets the Brain and the sibling task finish', () => {
    const sibling = byTitle('Add the sibling marker');
    expect(sibling.status, `${sibling.statusReason}\n${result.stderr.slice(-3000)}`).toBe('ready');
    // polly run ended on its own (not by the test's timeout), non-zero for the failed tasks.
    expect(result.code).not.toBeNull();
    expect(result.code).not.toBe(0);
  });
});
