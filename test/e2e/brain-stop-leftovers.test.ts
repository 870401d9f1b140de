/**
 * Restart hygiene after a graceful stop (issue 35 item 3): SIGTERM to a Brain whose tasks are under
 * way leaves nothing of its process tree behind but the detached task workers that ran before the
 * signal (each runner with its agent and sandbox), which the next Brain adopts. Everything else the
 * Brain started — its standby runners, checks, setup commands, git — ends with it, within a bounded
 * wait, and no new worker starts after the signal: the signal lands while t2's worktree setup runs
 * (0.5 s), and before the fix the dispatch went on to start t2's runner and sandbox, which outlived
 * the Brain. `polly resume` then starts that turn and finishes both tasks, one PR each.
 *
 * Real everything: the `polly` CLI from dist/, git with a bare origin, the real claude and codex
 * CLIs in bubblewrap driven by the scripted model server (each implementer sleeps 4 s first), the
 * local forge. Processes are found by a /proc scan of everything whose working directory or argv
 * names the test's temp root, zombies left out.
 */
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { hasSystemPackage } from '../helpers/system-packages.js';
import { parseModelScript, loadModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import { descendantsOf } from '../../workers/proc/process-tree.js';
import { gitTestEnv } from '../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { readJournalFile, readRegistryFile } from '../helpers/polly-state.js';

const run = promisify(execFile);
const cli = join(process.cwd(), 'dist/brain/cli.js');
const demo = join(process.cwd(), 'scripts/demo');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Live, non-zombie processes whose cwd or argv names `root`, as `pid → argv` (read from /proc). */
function processesUnder(root: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${name}/cwd`);
      } catch {
        /* another user's process, or gone */
      }
      if (cwd === root || cwd.startsWith(`${root}/`) || argv.includes(root)) out.set(Number(name), argv);
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

let server: ScriptedModelServer | null = null;
afterAll(async () => {
  await stopTrackedBrains();
  await server?.close();
});

const bwrap = hasSystemPackage('bubblewrap', import.meta.url);

describe('a graceful stop of the Brain', () => {
  it.skipIf(!bwrap)(
    'SIGTERM while a task runs its worktree setup: once the Brain has exited, nothing it started is left but the task workers that ran before the signal, and polly resume finishes both tasks with one PR each',
    async () => {
      const { root, repo } = sampleProjectWithOrigin('polly-stop-');
      const env = gitTestEnv();
      await run(process.execPath, [cli, 'init'], { cwd: repo, env });
      // t2's setup takes 0.5 s: the signal lands in it, and the dispatch would go on to start t2's agent.
      const config = join(repo, '.polly/config.yaml');
      writeFileSync(config, readFileSync(config, 'utf8').replace(/^ {2}setup: null$/m, `  setup: 'if [ "\${PWD##*/}" = p1-t2 ]; then sleep 0.5; fi'`));
      const script = loadModelScript(join(demo, 'workers-script.yaml'));
      for (const s of script.sessions) if (s.match.role === 'implement') s.turns[0]!.steps.unshift({ run: 'sleep 4' });
      server = await startScriptedModelServer({ script: parseModelScript(JSON.stringify(script)) });
      const modelEnv = { ...env, ...useScriptedModels(repo, server.url) };
      await run(process.execPath, [cli, 'run', join(demo, 'plan.yaml'), '--detach'], { cwd: repo, env: modelEnv });
      await run(process.execPath, [cli, 'plan', 'approve', 'p1'], { cwd: repo, env: modelEnv });

      // t2's setup runs (its `sleep 0.5` is in the process table): SIGTERM the Brain.
      let brainPid = 0;
      for (const deadline = Date.now() + 90_000; Date.now() < deadline && !brainPid; await sleep(20)) {
        if (![...processesUnder(root).values()].includes('sleep 0.5')) continue;
        try {
          brainPid = readRegistryFile(repo).brain?.pid ?? 0;
        } catch {
          /* mid-write */
        }
      }
      expect(brainPid, `t2's setup was never seen; brain.log:\n${readFileSync(join(repo, '.polly/brain.log'), 'utf8')}`).toBeGreaterThan(0);
      const runningWorkers = (): number[] =>
        Object.values(readRegistryFile(repo).workers)
          .filter((w) => w.state === 'running' && w.pid > 0 && alive(w.pid))
          .map((w) => w.pid);
      const workersBefore = runningWorkers();
      process.kill(brainPid, 'SIGTERM');
      const before = processesUnder(root);
      for (const deadline = Date.now() + 20_000; Date.now() < deadline && alive(brainPid); ) await sleep(50);
      expect(alive(brainPid), 'the Brain did not exit within 20 s of SIGTERM').toBe(false);

      // Only the workers that ran before the signal, and everything under them, may stay.
      const leftovers = (): string[] => {
        const ok = new Set(workersBefore.flatMap((p) => [p, ...descendantsOf(p)]));
        return [...processesUnder(root)].filter(([pid]) => !ok.has(pid)).map(([pid, argv]) => `${pid}: ${argv.slice(0, 300)}`);
      };
      // A bounded wait: a pipe's end or a parent-death signal takes a moment to reach a child.
      let left = leftovers();
      for (const deadline = Date.now() + 2000; Date.now() < deadline && left.length > 0; await sleep(100)) left = leftovers();
      expect(
        left,
        `left behind by the Brain (pid ${brainPid}); workers before the signal: ${workersBefore.join(', ')}; processes at the signal:\n${[...before].map(([p, a]) => `${p}: ${a.slice(0, 300)}`).join('\n')}`,
      ).toEqual([]);
      // The task workers themselves were not stopped: the next Brain adopts them.
      expect(workersBefore.filter(alive).length).toBe(workersBefore.length);
      const stopped = readJournalFile(repo).filter((e) => e.kind === 'brain.stopped' && e.data.pid === brainPid);
      expect(stopped.map((e) => e.data.graceful)).toEqual([true]);

      // polly resume: the adopted worker and the dispatch the stop left unstarted both end in one ready PR.
      const resumed = await run(process.execPath, [cli, 'resume', '--json'], { cwd: repo, env: modelEnv }).catch((e: { stdout: string; stderr: string }) => e);
      const reg = readRegistryFile(repo);
      expect(
        Object.values(reg.tasks).map((t) => [t.id, t.status]),
        `polly resume said:\n${resumed.stderr}`,
      ).toEqual([
        ['p1-t1', 'ready'],
        ['p1-t2', 'ready'],
      ]);
      const prs = JSON.parse((await run(process.execPath, [cli, 'pr', 'list', '--all', '--json'], { cwd: repo, env })).stdout) as Array<{ taskId: string | null }>;
      expect(prs.map((p) => p.taskId).sort()).toEqual(['p1-t1', 'p1-t2']);
      // No work order started two worker processes.
      const starts = readJournalFile(repo).filter((e) => e.kind === 'worker.started');
      expect(new Set(starts.map((e) => e.data.orderId)).size).toBe(starts.length);
      expect(readJournalFile(repo).filter((e) => e.kind === 'task.failed')).toEqual([]);
    },
    240_000,
  );
});
