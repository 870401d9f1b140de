/**
 * `polly goal` owns the Brain it starts: Ctrl-C (SIGINT) on the command ends the Brain and what the
 * Brain started for itself — its claude session, the `polly mcp --brain` server under it and the
 * standby runner — judged by /proc, not by what Polly says. (A newcomer found all four alive after
 * the demo: the Brain is spawned in a session of its own, so the terminal's SIGINT never reached it.)
 *
 * One real run: the real `claude` as the Brain against the scripted model; its first turn sends a
 * read-only explore worker (pi), reads the report, then waits on the inbox. Once a standby runner
 * is booted (after that first worker turn), the test SIGINTs `polly goal`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { initRepository } from '../../../brain/commands/init.js';
import { killTree } from '../../../workers/proc/kill.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { useScriptedModels } from '../../../scripts/scripted-model/configure.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';
import { stopTrackedBrains, trackBrains } from '../../helpers/brain-cleanup.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');

const SCRIPT = `
sessions:
  - name: brain
    match: {role: brain}
    repeat_last: true
    turns:
      - steps:
          - call: {tool: mcp__polly__polly_status, input: {}}
          - call: {tool: mcp__polly__sys_session_send, input: {title: Map the repo, purpose: explore, worker: pi, prompt: Read README.md and report.}}
          - call: {tool: mcp__polly__sys_read_inbox, input: {wait_s: 180}}
          - call: {tool: mcp__polly__sys_read_inbox, input: {wait_s: 180}}
          - finish: waiting
  - name: explore
    match: {role: explore}
    turns:
      - steps:
          - read: README.md
          - finish: The README is one heading.
`;

/** Processes (pid → command line) whose command line names `needle` or whose cwd is inside `dir`. */
function processesOf(dir: string, needles: string[]): Map<number, string> {
  const found = new Map<number, string>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue; // a zombie runs nothing
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${name}/cwd`);
      } catch {
        // exited meanwhile, or not ours to read
      }
      if (cwd === dir || cwd.startsWith(`${dir}/`) || needles.some((n) => cmd.includes(n))) found.set(Number(name), cmd.slice(0, 160));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

async function until<T>(what: string, ms: number, probe: () => T | null | undefined | false): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

let server: ScriptedModelServer | null = null;
let goal: ChildProcess | null = null;

afterAll(async () => {
  if (goal?.pid && goal.exitCode === null) await killTree(goal.pid, 500);
  await stopTrackedBrains();
  await server?.close();
});

describe('polly goal, interrupted', () => {
  it("SIGINT ends the Brain it started, the Brain's claude, its MCP server and the standby runner: nothing of the repository runs after exit 130", {
    timeout: 150_000,
  }, async () => {
    const repo = createTestRepo();
    trackBrains(repo.dir);
    const env = gitTestEnv();
    await initRepository(repo.dir, env);
    server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
    const modelEnv = useScriptedModels(repo.dir, server.url);
    let stderr = '';
    goal = spawn(process.execPath, [cli, 'goal', 'map the repository', '--yes'], {
      cwd: repo.dir,
      env: { ...env, ...modelEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    goal.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((r) => goal!.once('exit', (code) => r(code)));

    const journal = (): Array<{ kind: string; data: Record<string, unknown> }> => {
      try {
        return readFileSync(join(repo.dir, '.polly', 'journal.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l));
      } catch {
        return [];
      }
    };
    const brainPid = await until('the Brain', 60_000, () => journal().find((e) => e.kind === 'brain.started')?.data.pid as number | undefined);
    const claudePid = await until("the Brain's claude", 60_000, () => journal().find((e) => e.kind === 'brain.goal_session')?.data.pid as number | undefined);
    const standbyTag = `polly-standby-${brainPid}-`;
    // The explore turn is over and its standby successor is booted; the Brain's claude waits in sys_read_inbox.
    await until(
      'the explore report and a standby runner',
      90_000,
      () => journal().some((e) => e.kind === 'worker.exited') && [...processesOf(repo.dir, [standbyTag]).values()].some((c) => c.includes(standbyTag)),
    );
    const before = processesOf(repo.dir, [repo.dir, standbyTag]);
    expect(
      [...before.values()].some((c) => c.includes(`mcp --brain --repo ${repo.dir}`)),
      [...before.values()].join('\n'),
    ).toBe(true);
    expect(before.has(brainPid) && before.has(claudePid)).toBe(true);

    const sent = Date.now();
    goal.kill('SIGINT');
    const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 40_000))]);
    const tookMs = Date.now() - sent;
    expect(code, stderr).toBe(130);
    expect(stderr).toContain(`SIGINT: stopping the Brain this command started (pid ${brainPid})`);
    // Ground truth: nothing whose cwd is the repository, nothing naming it, no standby runner of that Brain.
    const left = processesOf(repo.dir, [repo.dir, standbyTag]);
    expect([...left.entries()].map(([p, c]) => `${p} ${c}`)).toEqual([]);
    console.log(`[goal-interrupt] polly goal exited ${tookMs} ms after SIGINT; ${before.size} processes before, none after`);
  });
});
