/**
 * `npm run demo [-- --dir PATH] [-- --live]`: the main job, end to end, on a bundled sample project.
 *
 * 1. Copies scripts/demo/sample-project (a tiny stats library with a bug in sum() and no median())
 *    into a fresh git repository with a bare `origin` (a temp dir, or `--dir PATH` to keep it).
 * 2. `polly init`, then points Polly at the scripted model server (no API key, no network): the
 *    agents are the real `claude`, `codex` and `pi` CLIs; only the model behind them is scripted
 *    (scripts/demo/*-script.yaml). With `--live` and ANTHROPIC_API_KEY / OPENAI_API_KEY set, real
 *    models are used instead.
 * 3. Runs `polly goal "…" --yes`: the Brain investigates (a read-only explore worker), proposes a
 *    plan that the model checker REFUSES (Codex reviewing its own work), revises it, the plan is
 *    admitted and approved (--yes stands in for the human), Claude Code and Codex implement in
 *    parallel worktrees, Polly runs the project's tests (one task red first, then green), pi and
 *    Claude cross-review, and Polly opens one PR per task on the local forge.
 * 4. Checks that the default branch got no commit and no merge (Polly never merges) and prints
 *    where to look.
 * Without a usable bubblewrap the scripted demo still runs: its workers are the scripted model and
 * Polly's own scripts (nothing hostile), so it sets `workers.allow_unconfined` in the sample
 * repository only, and says so at its start and in its summary with the line that installs the
 * sandbox. `--live` (real models) refuses instead. On the user's own repositories nothing changes:
 * Polly refuses to dispatch unconfined unless their config says otherwise.
 * Exit code: polly goal's (0 when every task is ready).
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { initRepository } from '../brain/commands/init.js';
import { cliPath, packageRoot } from '../brain/core/install-paths.js';
import { killTree } from '../workers/proc/kill.js';
import { repoStateDir } from '../workers/sandbox/agent-state-dir.js';
import { probeSandbox } from '../workers/sandbox/sandbox.js';
import { startScriptedModelServer, type ScriptedModelServer } from './scripted-model/server.js';
import { loadModelScript } from './scripted-model/script.js';
import { useScriptedModels } from './scripted-model/configure.js';

const GOAL = 'Fix sum() in the stats library and add a median() helper with tests';

function say(line: string): void {
  process.stderr.write(`[demo] ${line}\n`);
}

/** Git with a fixed identity, no pager, no editor, no prompts, no global config. */
function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return {
    ...env,
    GIT_AUTHOR_NAME: env.GIT_AUTHOR_NAME ?? 'Polly Demo',
    GIT_AUTHOR_EMAIL: 'demo@polly.invalid',
    GIT_COMMITTER_NAME: 'Polly Demo',
    GIT_COMMITTER_EMAIL: 'demo@polly.invalid',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_EDITOR: 'true',
    GIT_PAGER: 'cat',
  };
}

function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, env: gitEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { dir: { type: 'string' }, live: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, strict: true });
  if (values.help) {
    process.stdout.write(
      'Usage: npm run demo [-- --dir PATH] [-- --live]\n  --dir PATH  keep the sample repository there (must not exist or be empty)\n  --live      use real models (needs ANTHROPIC_API_KEY and OPENAI_API_KEY)\n',
    );
    return 0;
  }
  const started = Date.now();
  const root = values.dir ? resolve(values.dir) : realpathSync(mkdtempSync(join(tmpdir(), 'polly-demo-')));
  if (values.dir) {
    if (existsSync(root) && readdirSync(root).length > 0) {
      say(`--dir ${root} is not empty; give a new or empty directory (nothing there is touched).`);
      return 2;
    }
    mkdirSync(root, { recursive: true });
  }
  const repo = join(root, 'stats');
  const origin = join(root, 'origin.git');
  say(`sample project → ${repo} (bare origin ${origin})`);
  cpSync(join(packageRoot(), 'scripts', 'demo', 'sample-project'), repo, { recursive: true });
  git(root, ['init', '-q', '--bare', '-b', 'main', origin]);
  git(repo, ['init', '-q', '-b', 'main']);
  git(repo, ['add', '-A']);
  git(repo, ['commit', '-q', '-m', 'polly-demo-stats 1.0.0']);
  git(repo, ['remote', 'add', 'origin', origin]);
  git(repo, ['push', '-q', '-u', 'origin', 'main']);
  git(repo, ['remote', 'set-head', 'origin', 'main']);
  const mainBefore = git(repo, ['rev-parse', 'main']);
  await initRepository(repo, gitEnv());
  const sandbox = probeSandbox();
  if (!sandbox.ok) {
    if (values.live) {
      say(`--live runs real models, and Polly's sandbox cannot start here: ${sandbox.reason}. ${sandbox.fix}; or run the scripted demo without --live.`);
      return 2;
    }
    say(`NOTE: Polly's sandbox cannot start here (${sandbox.reason}).`);
    say("      This demo's workers (the scripted model and Polly's own scripts, nothing hostile) run UNCONFINED, in this sample repository only.");
    say(`      On your own repositories Polly refuses to dispatch without the sandbox. To ${sandbox.fix}`);
  }

  let server: ScriptedModelServer | null = null;
  let modelEnv: Record<string, string> = {};
  if (values.live) {
    if (!process.env.ANTHROPIC_API_KEY || !process.env.OPENAI_API_KEY) {
      say('--live needs ANTHROPIC_API_KEY (Brain, Claude Code) and OPENAI_API_KEY (Codex; pi uses its default provider). Set them, or run without --live.');
      return 2;
    }
    say('live models: Claude for the Brain and Claude Code, OpenAI for Codex');
  } else {
    const demoDir = join(packageRoot(), 'scripts', 'demo');
    const brain = loadModelScript(join(demoDir, 'brain-script.yaml'));
    const workers = loadModelScript(join(demoDir, 'workers-script.yaml'));
    server = await startScriptedModelServer({ script: { sessions: [...brain.sessions, ...workers.sessions] } });
    modelEnv = useScriptedModels(repo, server.url, sandbox.ok ? {} : { extra: [[['workers', 'allow_unconfined'], true]] });
    say(`scripted model server on ${server.url} (no API key needed; the agents are the real CLIs)`);
  }

  const cli = cliPath();
  say(`polly goal "${GOAL}" --yes   (normally a human approves the plan)`);
  // Ctrl-C reaches polly goal too (same process group); a SIGTERM sent to the demo alone is passed
  // on. Either way the demo waits for polly goal, which stops the Brain it started (and with it the
  // Brain's claude, MCP server and standby runners), before it closes the model server and exits.
  let interrupted: NodeJS.Signals | null = null;
  const code = await new Promise<number>((resolveExit) => {
    const child = spawn(process.execPath, [cli, 'goal', GOAL, '--yes'], { cwd: repo, env: { ...gitEnv(), ...modelEnv }, stdio: ['ignore', 'inherit', 'inherit'] });
    const pass = (signal: NodeJS.Signals): void => {
      interrupted ??= signal;
      if (child.exitCode === null) child.kill(signal);
    };
    for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, pass);
    child.on('exit', (c, signal) => resolveExit(c ?? (signal ? 1 : 0)));
  });
  if (interrupted) {
    // polly goal stopped the Brain; a worker in the middle of a turn would now wait on a model
    // server that is going away: end them (this sample repository is the demo's own).
    const reg = JSON.parse(readFileSync(join(repo, '.polly', 'registry.json'), 'utf8')) as { workers?: Record<string, { pgid?: number; state?: string }> };
    await Promise.all(
      Object.values(reg.workers ?? {})
        .filter((w) => (w.state === 'running' || w.state === 'starting') && w.pgid)
        .map((w) => killTree(w.pgid!, 3000)),
    );
    await server?.close();
    say(`${interrupted}: stopped; the repository stays in ${repo} (polly resume there continues the goal, with a model behind it)`);
    return code;
  }

  // Polly never merges: the default branch is exactly where it was, locally and on the remote.
  const mainAfter = git(repo, ['rev-parse', 'main']);
  const originMain = git(origin, ['rev-parse', 'main']);
  const branches = git(origin, ['branch', '--list', 'polly/*'])
    .split('\n')
    .map((b) => b.replace(/^[* ]+/, ''))
    .filter(Boolean);
  const merges = git(repo, ['rev-list', '--merges', '--count', 'main']);
  const untouched = mainAfter === mainBefore && originMain === mainBefore && merges === '0';
  await server?.close();

  const seconds = Math.round((Date.now() - started) / 1000);
  process.stdout.write(
    [
      '',
      `Default branch main: ${untouched ? 'unchanged, no merges (Polly never merges: a human does)' : `CHANGED (before ${mainBefore}, after ${mainAfter}, origin ${originMain}, merges ${merges})`}`,
      `Branches on origin: ${branches.join(', ') || 'none'}`,
      `Demo wall time: ${seconds}s`,
      ...(sandbox.ok ? [] : [`Sandbox: NONE, the workers ran unconfined (${sandbox.reason}); for your own repositories, ${sandbox.fix}`]),
      `Files: the repository and Polly's state (.polly/: registry, journal, logs, the Brain's session) in ${root};`,
      `       the workers' agent state (their CLI config and sessions) in ${repoStateDir(repo, gitEnv())} (outside the repository, as for any repository)`,
      '',
      'Look around:',
      `  cd ${repo}`,
      `  node ${cli} status            # goals, plans, tasks, PRs`,
      `  node ${cli} pr list           # the PRs on the local forge; pr show N / pr diff N`,
      `  node ${cli} plan show p1      # the refused plan and its counterexample`,
      `  git log --oneline --all --graph`,
      '',
    ].join('\n'),
  );
  return untouched ? code : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`[demo] failed: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
