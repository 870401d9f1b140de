/**
 * `npm run bench -- gate [runs]`: the gate's two speed figures, each against a baseline measured in
 * the same run.
 * 1. Hook wall time: spawn of the Claude Code PreToolUse hook with a Bash payload on stdin until it
 *    exits with its answer, median of N (default 31) runs, interleaved with `node -e 0` runs; the
 *    ratio hook / `node -e 0` is the figure (target ≤ 1.3×). The Codex hook and the git shim's
 *    gate step are printed too.
 *    A worker's hook asks the worker runner over its unix socket instead (gate/hooks/gate-server.ts):
 *    the same hook with `socket` set, answered by a gate server in this process, is timed against
 *    the in-process hook and `node -e 0`, all spawned asynchronously (the server answers from here).
 * 2. In-process decisions per second over the case corpus (test/fixtures/gate-corpus.yaml when
 *    present, plus built-in spellings), against a baseline of JSON.parse+stringify of the same
 *    requests.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_CONFIG } from '../brain/config/config-schema.js';
import { decide } from '../gate/decide.js';
import { createFileJournal } from '../gate/decision-log.js';
import { startGateServer } from '../gate/hooks/gate-server.js';
import { prepareGate } from '../gate/hooks/harness-gate.js';
import type { GateContext, ToolRequest } from '../gate/types.js';

const runs = Math.max(5, Number(process.argv[2] ?? 31) || 31);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

function timeSpawn(cmd: string, args: string[], input: string): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { input, stdio: ['pipe', 'pipe', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

const context: GateContext = { repoRoot: '/repo', worktree: '/repo/.worktrees/t1', branch: 'polly/t1', defaultBranch: 'main', home: '/home/dev' };
const state = mkdtempSync(join(tmpdir(), 'polly-bench-gate-'));
const claude = await prepareGate('claude-code', { role: 'implement', context, stateDir: join(state, 'c'), journalPath: join(state, 'decisions.jsonl') });
const codex = await prepareGate('codex', { role: 'implement', context, stateDir: join(state, 'x'), journalPath: join(state, 'decisions.jsonl') });
/** The hook's argv exactly as prepareGate wrote it (single-quoted words), without the node binary. */
const hookOf = (g: typeof claude, name: string): string[] => {
  const file = g.files.find((f) => f.endsWith(name === 'claude-code-hook' ? 'claude-settings.json' : 'codex-hooks.toml')) as string;
  const text = readFileSync(file, 'utf8');
  const command =
    name === 'claude-code-hook'
      ? ((JSON.parse(text) as { hooks: { PreToolUse: Array<{ hooks: Array<{ command: string }> }> } }).hooks.PreToolUse[0]?.hooks[0]?.command ?? '')
      : (JSON.parse(/command = (".*")/.exec(text)?.[1] ?? '""') as string);
  const words = [...command.matchAll(/'((?:[^']|'\\'')*)'/g)].map((m) => (m[1] as string).replace(/'\\''/g, "'"));
  return words.slice(1);
};
const payload = JSON.stringify({
  session_id: 's',
  cwd: context.worktree,
  hook_event_name: 'PreToolUse',
  tool_name: 'Bash',
  tool_input: { command: 'git push --force origin polly/t1 && rm -rf node_modules' },
});

// warm the file cache
timeSpawn(process.execPath, ['-e', '0'], '');
timeSpawn(process.execPath, hookOf(claude, 'claude-code-hook'), payload);
timeSpawn(process.execPath, hookOf(codex, 'codex-hook'), payload);
const base: number[] = [];
const hook: number[] = [];
const codexHook: number[] = [];
for (let i = 0; i < runs; i++) {
  base.push(timeSpawn(process.execPath, ['-e', '0'], ''));
  hook.push(timeSpawn(process.execPath, hookOf(claude, 'claude-code-hook'), payload));
  codexHook.push(timeSpawn(process.execPath, hookOf(codex, 'codex-hook'), payload));
}
const b = median(base);
const h = median(hook);
const c = median(codexHook);
process.stdout.write(`gate hook wall time (spawn → answer), median of ${runs}:\n  hook command: node ${hookOf(claude, 'claude-code-hook').join(' ')}\n`);
process.stdout.write(`  node -e 0 (baseline)        ${b.toFixed(1)} ms\n`);
process.stdout.write(`  claude-code-hook.js         ${h.toFixed(1)} ms   ratio ${(h / b).toFixed(2)}x  (target <= 1.30x) ${h / b <= 1.3 ? 'OK' : 'OVER'}\n`);
process.stdout.write(`  codex-hook.js               ${c.toFixed(1)} ms   ratio ${(c / b).toFixed(2)}x\n`);

// a worker's hook: the runner decides over the socket
function timeSpawnAsync(cmd: string, args: string[], input: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(cmd, args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('close', (code) => (code === 0 ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(`${cmd} exited ${code}: ${err}`))));
    child.stdin.end(input);
  });
}
const socket = join(state, 's', 'gate.sock');
const viaSocket = await prepareGate('claude-code', { role: 'implement', context, stateDir: join(state, 's'), socket });
const gateServer = await startGateServer({
  socketPath: socket,
  config: viaSocket.config,
  journal: createFileJournal(join(state, 'runner-decisions.jsonl')),
  stamp: { task: 't1', worker: 'w1' },
});
await timeSpawnAsync(process.execPath, hookOf(viaSocket, 'claude-code-hook'), payload);
const aBase: number[] = [];
const aLocal: number[] = [];
const aSocket: number[] = [];
for (let i = 0; i < runs; i++) {
  aBase.push(await timeSpawnAsync(process.execPath, ['-e', '0'], ''));
  aLocal.push(await timeSpawnAsync(process.execPath, hookOf(claude, 'claude-code-hook'), payload));
  aSocket.push(await timeSpawnAsync(process.execPath, hookOf(viaSocket, 'claude-code-hook'), payload));
}
await gateServer.close();
const ab = median(aBase);
process.stdout.write(`
a worker's hook, the runner deciding over its socket (async spawns), median of ${runs}:
`);
process.stdout.write(`  node -e 0 (baseline)        ${ab.toFixed(1)} ms
`);
process.stdout.write(`  hook deciding in process    ${median(aLocal).toFixed(1)} ms   ratio ${(median(aLocal) / ab).toFixed(2)}x
`);
process.stdout.write(`  hook asking the runner      ${median(aSocket).toFixed(1)} ms   ratio ${(median(aSocket) / ab).toFixed(2)}x  (${(median(aSocket) - median(aLocal)).toFixed(1)} ms vs in process)
`);

// in-process decisions per second
const here = fileURLToPath(new URL('.', import.meta.url));
// dist/scripts/ → the repository's test/fixtures/ (the corpus ships with the repository).
const corpusFile = [join(here, '..', '..', 'test', 'fixtures', 'gate-corpus.yaml')].find((p) => existsSync(p));
const cases: Array<{ role: ToolRequest['role']; tool: ToolRequest['tool']; input: string }> = corpusFile
  ? (parseYaml(readFileSync(corpusFile, 'utf8')) as { cases: Array<{ role: ToolRequest['role']; tool: ToolRequest['tool']; input: string }> }).cases
  : [
      { role: 'implement', tool: 'bash', input: 'git push -f origin polly/t1' },
      { role: 'implement', tool: 'bash', input: 'git status && git diff --stat' },
      { role: 'review', tool: 'write', input: 'src/a.ts' },
    ];
const requests: ToolRequest[] = cases.map((k) => ({ type: 'tool', role: k.role, tool: k.tool, input: k.input, cwd: context.worktree }));
const policy = DEFAULT_CONFIG.policies;
let sink = 0;
const loop = (fn: (r: ToolRequest) => number, ms: number): number => {
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    for (const r of requests) sink += fn(r);
    n += requests.length;
  }
  return n / ((performance.now() - t0) / 1000);
};
loop((r) => decide(r, policy, context).reason.length, 300); // warm-up
const perSec = loop((r) => decide(r, policy, context).reason.length, 2000);
const jsonPerSec = loop((r) => JSON.stringify(JSON.parse(JSON.stringify(r))).length, 1000);
process.stdout.write(`\nin-process decide() over ${requests.length} corpus requests${corpusFile ? ` (${corpusFile})` : ' (built-in)'}:\n`);
process.stdout.write(`  decide()                    ${Math.round(perSec).toLocaleString('en-US')} decisions/s  (${(1e6 / perSec).toFixed(1)} µs each)\n`);
process.stdout.write(`  JSON round-trip (baseline)  ${Math.round(jsonPerSec).toLocaleString('en-US')} requests/s  ratio ${(jsonPerSec / perSec).toFixed(1)}x faster than decide\n`);
if (sink < 0) process.stdout.write('');
