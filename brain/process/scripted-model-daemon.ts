/**
 * The scripted model server of a keyless session (`polly try`, `polly retry --script`, `polly resume
 * --script`): one detached process per repository, recorded in `.polly/scripted-model.json`, so the
 * workers it answers can outlive the command that started it.
 *
 * Why a process of its own: the Brain and its workers are detached (brain/process/daemon.ts); after
 * Ctrl-C the command stops its Brain and the workers finish their turn on their own (docs/guide.md
 * "Stopping and resuming"). A server inside the command would die with it and fail that turn with
 * "Connection error"; one inside the Brain would die at its graceful stop.
 *
 * Lifetime: the server stays up while something may call it — a command attached to it (its pid,
 * until it detaches or exits), the repository's Brain (`registry.brain.pid`), or a worker of the
 * registry still running (`workers[*].pid`/`agentPid`, state `starting`/`running`). Once none is
 * alive for {@link IDLE_EXIT_MS}, or the last command detaches with nothing else alive, it exits and
 * removes its record. A second command finds it through the record, attaches (the same URL, so
 * adopted workers keep reaching it) and loads its own script.
 *
 * Control (HTTP on the server's loopback address, JSON): `POST /_polly/attach {pid, script}` →
 * `{pid, script}` (400 with `{error}` when the script cannot be loaded); `POST /_polly/detach {pid}`
 * → `{holders: number[], stopping: boolean}`.
 *
 * Run as a process: `node dist/brain/process/scripted-model-daemon.js --polly-dir DIR --script FILE
 * --holder PID` (what {@link attachScriptedModelServer} starts; its stderr goes to
 * `.polly/logs/scripted-model.log`).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { PollyError } from '../core/errors.js';
import { distPath } from '../core/install-paths.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { loadModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';

/** The record's file name in `.polly/`. */
export const SCRIPTED_MODEL_RECORD = 'scripted-model.json';
/** How long the server waits with nothing alive that may call it before it exits, ms. */
export const IDLE_EXIT_MS = 3000;

/** `.polly/scripted-model.json`: the running server of this repository. */
export interface ScriptedModelRecord {
  pid: number;
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Absolute path of the script it answers from now. */
  script: string;
  /** ISO time it started. */
  startedAt: string;
  /** Its stderr. */
  log: string;
}

/** The record in `pollyDir`, or null when there is none or it cannot be read. */
export function readScriptedModelRecord(pollyDir: string): ScriptedModelRecord | null {
  try {
    const rec = JSON.parse(readFileSync(join(pollyDir, SCRIPTED_MODEL_RECORD), 'utf8')) as ScriptedModelRecord;
    return typeof rec.pid === 'number' && typeof rec.url === 'string' ? rec : null;
  } catch {
    return null;
  }
}

/**
 * The pids that keep the server up (pure but for `alive`): each live attached command, the
 * registry's Brain when alive, and every live pid of a registry worker in state `starting` or
 * `running` (its runner and its agent CLI).
 * @param registry  the parsed `.polly/registry.json` (any shape; what does not fit is ignored), or null.
 */
export function modelServerHolders(registry: unknown, attached: Iterable<number>, alive: (pid: number) => boolean = pidAlive): number[] {
  const pids = new Set<number>(attached);
  const reg = (registry ?? {}) as { brain?: { pid?: unknown } | null; workers?: Record<string, { pid?: unknown; agentPid?: unknown; state?: unknown }> };
  if (typeof reg.brain?.pid === 'number') pids.add(reg.brain.pid);
  for (const w of Object.values(reg.workers ?? {})) {
    if (w.state !== undefined && w.state !== 'starting' && w.state !== 'running') continue;
    for (const p of [w.pid, w.agentPid]) if (typeof p === 'number' && p > 0) pids.add(p);
  }
  return [...pids].filter((p) => p > 0 && alive(p));
}

async function control(url: string, name: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/_polly/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/**
 * Attach `holder` (a command's pid) to the repository's scripted model server answering from
 * `script`: the running one (its script replaced by `script`) when the record names a live server
 * that answers, else a new detached server (started here, its record awaited up to 15 s).
 * @param pollyDir  the repository's `.polly/` (absolute); `repoRoot` its working directory.
 * @returns the record and whether this call started the server.
 * @throws PollyError `bad_input` when the running server cannot load `script` (its message names
 *   why); `internal` when a new server did not come up (the tail of its log is quoted).
 */
export async function attachScriptedModelServer(options: {
  pollyDir: string;
  repoRoot: string;
  script: string;
  holder: number;
}): Promise<{ record: ScriptedModelRecord; started: boolean }> {
  const { pollyDir, script, holder } = options;
  const running = readScriptedModelRecord(pollyDir);
  if (running && pidAlive(running.pid)) {
    const answer = await control(running.url, 'attach', { pid: holder, script }).catch(() => null);
    if (answer?.status === 200) return { record: { ...running, script }, started: false };
    if (answer && answer.status === 400)
      throw new PollyError('bad_input', `the model script ${script} cannot be used: ${String(answer.body.error)}`, { details: { file: script } });
    // Not answering: it is on its way out; a new one is started below.
  }
  const logsDir = join(pollyDir, 'logs');
  mkdirSync(logsDir, { recursive: true });
  const log = join(logsDir, 'scripted-model.log');
  const fd = openSync(log, 'a');
  const child = spawn(process.execPath, [distPath('brain', 'process', 'scripted-model-daemon.js'), '--polly-dir', pollyDir, '--script', script, '--holder', String(holder)], {
    cwd: options.repoRoot,
    detached: true,
    stdio: ['ignore', 'ignore', fd],
  });
  let exited: number | string | null = null;
  child.once('exit', (code, signal) => (exited = code ?? signal));
  child.unref();
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const rec = readScriptedModelRecord(pollyDir);
    if (rec && rec.pid === child.pid) return { record: rec, started: true };
    if (exited !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const tail = existsSync(log) ? readFileSync(log, 'utf8').trimEnd().split('\n').slice(-5).join('\n') : '';
  throw new PollyError(
    'internal',
    `the scripted model server did not start (${exited !== null ? `it exited ${exited}` : 'no record within 15 s'}); its log ${log} ends: ${tail || '(empty)'}. Run "npm run build" in the Polly checkout if dist/ is missing, then try again.`,
    { details: { log } },
  );
}

/**
 * Detach `holder` from the server of `record`. When nothing else alive holds it, the server exits
 * now; this waits for that up to `waitMs` (default 3000).
 * @returns the pids that still hold it (workers finishing their turn), empty when it stopped or was gone.
 */
export async function detachScriptedModelServer(record: ScriptedModelRecord, holder: number, waitMs = 3000): Promise<number[]> {
  const answer = await control(record.url, 'detach', { pid: holder }).catch(() => null);
  if (!answer) return [];
  const holders = Array.isArray(answer.body.holders) ? (answer.body.holders as number[]) : [];
  if (answer.body.stopping === true) {
    const deadline = Date.now() + waitMs;
    while (pidAlive(record.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }
  return holders;
}

function writeRecord(pollyDir: string, rec: ScriptedModelRecord): void {
  const file = join(pollyDir, SCRIPTED_MODEL_RECORD);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(rec, null, 2)}\n`);
  renameSync(tmp, file);
}

function readRegistry(pollyDir: string): unknown {
  try {
    return JSON.parse(readFileSync(join(pollyDir, 'registry.json'), 'utf8'));
  } catch {
    return null;
  }
}

/** The process: serve `script` until nothing holds the server (module doc). */
async function serve(pollyDir: string, scriptPath: string, holder: number): Promise<void> {
  const attached = new Set<number>(holder > 0 ? [holder] : []);
  let server: ScriptedModelServer | null = null;
  let record: ScriptedModelRecord | null = null;
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    if (readScriptedModelRecord(pollyDir)?.pid === process.pid) rmSync(join(pollyDir, SCRIPTED_MODEL_RECORD), { force: true });
    void (server?.close() ?? Promise.resolve()).then(() => process.exit(0));
  };
  const holders = (): number[] => modelServerHolders(readRegistry(pollyDir), attached);
  server = await startScriptedModelServer({
    script: loadModelScript(scriptPath),
    control: (name, body) => {
      const b = (body ?? {}) as { pid?: unknown; script?: unknown };
      if (name === 'attach') {
        if (typeof b.script === 'string') {
          try {
            server!.setScript(loadModelScript(b.script));
          } catch (error) {
            return { status: 400, body: { error: (error as Error).message } };
          }
          record = { ...record!, script: b.script };
          writeRecord(pollyDir, record);
          process.stderr.write(`[scripted-model] ${new Date().toISOString()} pid ${String(b.pid)} attached with ${b.script}\n`);
        }
        if (typeof b.pid === 'number') attached.add(b.pid);
        return { status: 200, body: { pid: process.pid, script: record!.script } };
      }
      if (name === 'detach') {
        if (typeof b.pid === 'number') attached.delete(b.pid);
        const left = holders();
        if (left.length === 0) setImmediate(stop);
        return { status: 200, body: { holders: left, stopping: left.length === 0 } };
      }
      return { status: 404, body: { error: `no control ${name}` } };
    },
  });
  record = { pid: process.pid, url: server.url, script: scriptPath, startedAt: new Date().toISOString(), log: join(pollyDir, 'logs', 'scripted-model.log') };
  writeRecord(pollyDir, record);
  process.stderr.write(`[scripted-model] ${record.startedAt} pid ${process.pid} serving ${scriptPath} on ${server.url}\n`);
  let idleSince: number | null = null;
  setInterval(() => {
    if (holders().length > 0) idleSince = null;
    else if (idleSince === null) idleSince = Date.now();
    else if (Date.now() - idleSince >= IDLE_EXIT_MS) {
      process.stderr.write(`[scripted-model] ${new Date().toISOString()} nothing holds the server any more: exiting\n`);
      stop();
    }
  }, 500);
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(s, stop);
}

const isMain = process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const { values } = parseArgs({ options: { 'polly-dir': { type: 'string' }, script: { type: 'string' }, holder: { type: 'string', default: '0' } }, strict: true });
  if (!values['polly-dir'] || !values.script) {
    process.stderr.write('usage: scripted-model-daemon.js --polly-dir DIR --script FILE [--holder PID]\n');
    process.exit(2);
  }
  serve(values['polly-dir'], values.script, Number(values.holder)).catch((error: unknown) => {
    process.stderr.write(`[scripted-model] cannot serve: ${String((error as Error)?.stack ?? error)}\n`);
    process.exit(1);
  });
}
