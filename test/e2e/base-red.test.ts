/**
 * Base check first (issue 35): a plan whose acceptance commands are red on main. Real git (a bare
 * origin), the real claude and pi CLIs against the scripted model server, `polly run plan.yaml --yes`.
 * - t1's check is red on the base: the task waits as base_red naming the command and its output,
 *   its implementer session is never served (0 agent turns), no attempt is counted, and polly run
 *   exits non-zero saying why; `polly status --json` says so too.
 * - t2's check is in acceptance.known_red: the base check lets it through, the agent makes it pass,
 *   and the task ends ready.
 * On code without the base check t1 goes ready like t2 (its scripted session makes it green).
 */
import { copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
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
import { taskPage } from '../../brain/ui/ui-pages.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const FIXTURES = join(process.cwd(), 'test/fixtures/base-red');

describe.skipIf(!SANDBOXED)('polly run on a red base', () => {
  let repo = '';
  let server: ScriptedModelServer | null = null;
  let result: CliRun = { code: null, stdout: '', stderr: '' };
  let env: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    const project = sampleProjectWithOrigin('polly-base-red-');
    repo = project.repo;
    env = gitTestEnv();
    const init = await runCliAsync(['init'], repo, env, 30_000);
    expect(init.code, init.stderr).toBe(0);
    server = await startScriptedModelServer({ script: parseModelScript(readFileSync(join(FIXTURES, 'workers-script.yaml'), 'utf8'), 'workers-script.yaml') });
    const modelEnv = useScriptedModels(repo, server.url, {
      extra: [
        [['worktrees', 'setup'], null],
        // Both are project checks (the base check runs only those); one is known to be red.
        [
          ['acceptance', 'commands'],
          ['test -f fixed.txt', 'test -f known.txt'],
        ],
        [['acceptance', 'known_red'], ['test -f known.txt']],
      ],
    });
    env = { ...env, ...modelEnv };
    const plan = join(project.root, 'plan.yaml');
    copyFileSync(join(FIXTURES, 'plan.yaml'), plan);
    result = await runCliAsync(['run', plan, '--yes', '--json'], repo, env, 300_000);
  }, 420_000);

  afterAll(async () => {
    await server?.close();
    await stopTrackedBrains();
  });

  const tasks = () => Object.values((JSON.parse(readFileSync(join(repo, '.polly', 'registry.json'), 'utf8')) as Registry).tasks);
  const byTitle = (title: string) => tasks().find((t) => t.title === title)!;

  it('stops the task whose check is red on the base before any agent turn, and says why', async () => {
    const t1 = byTitle('Add the fixed marker');
    expect(t1.status, `${result.stdout}\n${result.stderr}`).toBe('base_red');
    expect(t1.statusReason).toContain('acceptance command "test -f fixed.txt" exited 1 on the base');
    expect(t1.statusReason).toContain(`polly retry ${t1.id}`);
    expect(t1.statusReason).toContain('acceptance.known_red');
    expect(t1.attempts).toBe(0);
    expect(t1.worktree).toBeNull();
    // 0 agent turns: its implementer's session was never served.
    const served = new Set(server!.requests.map((r) => r.session));
    expect(served.has('implement-fixed')).toBe(false);
    // polly run exits non-zero and its summary names the status and the command.
    expect(result.code).not.toBe(0);
    expect(`${result.stdout}\n${result.stderr}`).toContain('base_red');
    expect(`${result.stdout}\n${result.stderr}`).toContain('test -f fixed.txt');
    const status = await runCliAsync(['status', '--json'], repo, env, 30_000);
    expect(status.stdout).toContain('base_red');
    expect(status.stdout).toContain('test -f fixed.txt');
    const human = await runCliAsync(['status'], repo, env, 30_000);
    expect(human.stdout).toContain('base_red');
    expect(human.stdout).toContain(`polly retry ${t1.id}`);
    // The dashboard's task page shows the status as a failure and the whole reason.
    const page = taskPage(t1, [], []);
    expect(page).toMatch(/class="[^"]*\bbad\b[^"]*"[^>]*>base_red</);
    expect(page).toContain('test -f fixed.txt');
  });

  it('lets a known-red check through the base check and requires it green after the agent', () => {
    const t2 = byTitle('Add the known marker');
    expect(t2.status, `${t2.statusReason}\n${result.stderr}`).toBe('ready');
    expect(t2.checks.map((c) => [c.command, c.exitCode])).toEqual([['test -f known.txt', 0]]);
    expect(new Set(server!.requests.map((r) => r.session)).has('implement-known')).toBe(true);
  });

  it('cached each (base commit, command) once under .polly/base-checks/', () => {
    const dir = join(repo, '.polly', 'base-checks');
    expect(existsSync(dir)).toBe(true);
    const cached = readdirSync(dir).map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as { command: string; exitCode: number });
    expect(cached.map((c) => [c.command, c.exitCode]).sort()).toEqual([
      ['test -f fixed.txt', 1],
      ['test -f known.txt', 1],
    ]);
  });
});
