/**
 * The ref guard across a Brain crash. Where no sandbox runs (no bubblewrap;
 * `workers.allow_unconfined: true`) a pi worker, from a script it wrote, moves `feature` during its
 * turn and then keeps working; the Brain is SIGKILLed while the turn runs, after the ref moved.
 * `polly run` starts the Brain again, the new Brain adopts the running turn, and the ref guard
 * compares against the snapshot its predecessor took BEFORE the turn (kept on disk under
 * `.polly/guard/turns/`), not one taken after the restart, which would already hold the moved ref.
 *
 * Ground truth: `feature` is back where it was, the worker's value is kept under
 * `refs/polly/quarantine/`, the task ends `failed` naming the ref (`ref, old → new`), and the turn
 * was adopted, not started again. Real git, the real pi against the scripted model, `polly run`
 * from dist/ (needs `npm run build`).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { Registry } from '../../brain/registry/registry-schema.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { git, gitTestEnv } from '../helpers/git-repo.js';
import { pathWithoutBwrap } from '../helpers/no-bwrap-path.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { CLI, run } from './attack-harness.js';
import { readRegistryFile } from '../helpers/polly-state.js';

/** Moves `feature` in the user's repository to a commit of the worker's, by absolute git (no shim). */
const MOVE = [
  'G=/usr/bin/git',
  'R="$($G rev-parse --path-format=absolute --git-common-dir)/.."',
  'EVIL=$($G -c user.name=x -c user.email=x@example.invalid commit-tree "$($G rev-parse HEAD^{tree})" -p HEAD -m evil)',
  '$G -C "$R" update-ref refs/heads/feature "$EVIL"',
  '',
].join('\n');

const SCRIPT = stringify({
  sessions: [
    {
      name: 'implement',
      match: { role: 'implement' },
      turns: [{ steps: [{ write: { path: 'move.sh', content: MOVE } }, { run: 'sh move.sh' }, { run: 'sleep 8' }, { finish: 'Done.' }] }],
    },
  ],
});

const readRegistry = readRegistryFile;

let server: ScriptedModelServer | null = null;
let root = '';
afterAll(async () => {
  await server?.close();
  if (root && !process.env.POLLY_ATTACK_KEEP) rmSync(root, { recursive: true, force: true });
});

describe('the ref guard across a Brain crash, where no sandbox runs', () => {
  it('a ref moved before the crash is caught by the Brain that adopts the turn: put back, quarantined, the task failed naming it', async () => {
    const project = sampleProjectWithOrigin('polly-crash-guard-');
    root = project.root;
    const { repo } = project;
    git(repo, ['branch', 'feature']);
    const featureBefore = git(repo, ['rev-parse', 'feature']);
    const env = { ...gitTestEnv(), PATH: pathWithoutBwrap() };
    const init = await run(process.execPath, [CLI, 'init'], repo, env, 60_000);
    expect(init.code, init.stderr).toBe(0);
    server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
    const modelEnv = useScriptedModels(repo, server.url, { extra: [[['workers', 'allow_unconfined'], true]] });
    const plan = join(root, 'plan.yaml');
    const task = { key: 't1', title: 'Move nothing', purpose: 'implement', worker: 'pi', reviewer: 'claude-code', prompt: 'Do the task.', acceptance: { commands: ['true'] } };
    writeFileSync(plan, stringify({ goal: 'Crash guard', tasks: [task] }));

    const child = spawn(process.execPath, [CLI, 'run', plan, '--yes', '--json'], { cwd: repo, env: { ...env, ...modelEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.on('data', () => {});
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));

    // The worker runs and has moved `feature`: SIGKILL the Brain now, mid-turn.
    let killed: number | null = null;
    const deadline = Date.now() + 120_000;
    while (killed === null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      let reg: Registry;
      try {
        reg = readRegistry(repo);
      } catch {
        continue;
      }
      const running = Object.values(reg.workers).some((w) => (w as { state?: string }).state === 'running' && w.purpose === 'implement');
      if (reg.brain && running && git(repo, ['rev-parse', 'feature']) !== featureBefore) {
        killed = reg.brain.pid;
        process.kill(killed, 'SIGKILL');
      }
    }
    expect(killed, `the worker never moved the ref while it ran; polly run said:\n${stderr}`).not.toBeNull();
    const code = await exited;
    expect(stderr).toMatch(/the Brain was not running; started it again/);
    expect(code, stderr).toBe(1);

    const reg = readRegistry(repo);
    const t = Object.values(reg.tasks)[0]!;
    expect(t.status).toBe('failed');
    expect(t.statusReason).toMatch(new RegExp(`ref guard: during the pi implementer turn: refs/heads/feature changed, ${featureBefore.slice(0, 12)} → [0-9a-f]{12}`));
    // Ground truth: the ref is back, and the worker's value is kept in quarantine.
    expect(git(repo, ['rev-parse', 'feature'])).toBe(featureBefore);
    const quarantined = git(repo, ['for-each-ref', '--format=%(objectname) %(refname)', 'refs/polly/quarantine/']).split('\n').filter(Boolean);
    expect(quarantined).toHaveLength(1);
    expect(quarantined[0]).toMatch(/ refs\/polly\/quarantine\/\d+T\d+Z\/local\/heads\/feature$/);
    expect(git(repo, ['log', '-1', '--format=%s', quarantined[0]!.split(' ')[0]!])).toBe('evil');
    // The turn was adopted by the second Brain, not started again; the kept snapshot is gone.
    const journal = readFileSync(join(repo, '.polly/journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; data: Record<string, unknown> });
    expect(journal.filter((e) => e.kind === 'brain.started')).toHaveLength(2);
    expect(journal.filter((e) => e.kind === 'worker.started' && e.data.taskId === t.id)).toHaveLength(1);
    expect(journal.some((e) => e.kind === 'guard.ref_changed' && e.data.taskId === t.id)).toBe(true);
    const turns = join(repo, '.polly', 'guard', 'turns');
    expect(existsSync(turns) ? readdirSync(turns) : []).toEqual([]);
  }, 240_000);
});
