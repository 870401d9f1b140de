/**
 * `prepareGate`: the enforcement artifacts a worker adapter adds to a harness's command line.
 *
 * Everything is written into `stateDir` (never the worktree's `.claude/`, `.codex/` or `.pi/`), and
 * `stateDir` is added to the context's protected dirs so the agent cannot rewrite its own gate.
 * The hooks read only `<stateDir>/gate-config.json` (its path is baked into each hook command,
 * extension file and shim, not taken from the environment), so there is no switch an agent can set:
 * `POLLY_GATE=off git push -f` is decided like any other command.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PollyError } from '../../brain/core/errors.js';
import { gateHooksDistDir } from '../../brain/core/install-paths.js';
import { findReal } from './find-real.js';
import type { GateRuntimeConfig } from './hook-runtime.js';
import { shimFastPath } from './shim-fast-path.js';
import { DEFAULT_GATE_POLICY } from '../policy-types.js';
import type { GateContext, GatePolicy, GateRole } from '../types.js';

export type GateHarnessName = 'claude-code' | 'codex' | 'pi';

export interface PrepareGateOptions {
  role: GateRole;
  /** Absolute paths: repo root, worktree, branch, default branch, home (protectedDirs/tempDirs optional). */
  context: GateContext;
  /** A directory Polly owns for this worker (created if missing), e.g. `.polly/workers/<id>/gate`. */
  stateDir: string;
  /**
   * Where the hooks append decisions when they decide in process (default
   * `<repoRoot>/.polly/gate-decisions.jsonl`; null: nowhere). Ignored with `socket`.
   */
  journalPath?: string | null;
  /**
   * The worker runner's gate socket (./gate-server.ts, absolute): every hook, extension and shim
   * sends its request there and enforces the answer, and writes no decision itself; the runner
   * journals. The shell fast path of the git shim then logs nothing (see ./shim-fast-path.ts).
   */
  socket?: string;
  /** The policies (default: {@link DEFAULT_GATE_POLICY}). */
  policy?: GatePolicy;
  /** PATH to put the shims in front of (default: process.env.PATH). */
  basePath?: string;
  /** Claude Code only: the `sandbox` settings to write beside the hook (its own sandbox, as defence in depth); absent: none. */
  claudeSandbox?: Record<string, unknown> | null;
}

export interface PreparedGate {
  /** Arguments to add to the harness command line (see {@link prepareGate} for where). */
  args: string[];
  /** Environment variables to set for the worker process (PATH with the shims first, POLLY_GATE_CONFIG). */
  env: Record<string, string>;
  /** Every file written (absolute paths). */
  files: string[];
  /** The runtime config written to `gate-config.json` (what a gate server decides with). */
  config: GateRuntimeConfig;
}

function distScript(name: string): string {
  const path = join(gateHooksDistDir(), `${name}.js`);
  if (existsSync(path)) return path;
  throw new PollyError('not_built', `the gate's ${name}.js is not built (no ${path}). Run "npm run build" first.`);
}

/**
 * The shell words that run a gate entry point: the bundled CJS file through the code-cache loader
 * when `npm run build` produced them (fast start), else the ESM entry point.
 */
export function gateEntryCommand(name: 'claude-code-hook' | 'codex-hook' | 'shim'): string[] {
  const entry = distScript(name);
  const dir = join(dirname(entry), 'bundle');
  const loader = join(dir, 'run-cached.cjs');
  const bundle = join(dir, `${name}.cjs`);
  // a bundle older than the compiled gate (tsc ran, the bundle step did not) is never used
  if (existsSync(loader) && existsSync(bundle) && statSync(bundle).mtimeMs >= newestGateModule(dirname(entry))) return [process.execPath, resolve(loader), resolve(bundle)];
  return [process.execPath, entry];
}

/** The newest mtime of the compiled gate modules in `dir` (ms). */
function newestGateModule(dir: string): number {
  let newest = 0;
  for (const f of readdirSync(dir)) if (f.endsWith('.js')) newest = Math.max(newest, statSync(join(dir, f)).mtimeMs);
  return newest;
}

function sq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Write the gate's files for one worker and return what its adapter must add.
 *
 * Files (all in `stateDir`): `gate-config.json` (role, context, policy, journal path or socket, shim dir),
 * `bin/git` and `bin/gh` (shims; `bin/git` first runs the start-up calls the gate allows here
 * without starting Node: gate/hooks/shim-fast-path.ts), plus per harness:
 * - `claude-code`: `claude-settings.json` with a `PreToolUse` command hook (matcher `*`) running
 *   `node dist/gate/bundle/run-cached.cjs dist/gate/bundle/claude-code-hook.cjs <gate-config.json>`
 *   (or `node dist/gate/claude-code-hook.js <gate-config.json>` when unbundled), `disableAllHooks: false`,
 *   and `sandbox` when `options.claudeSandbox` is given;
 *   args `['--settings', <file>]`.
 * - `codex`: `codex-hooks.toml` (the same hook as TOML, for reference); args
 *   `['--dangerously-bypass-hook-trust', '-c', 'hooks.PreToolUse=[…]', '-c', 'sandbox_mode="workspace-write"']`
 *   to put after `codex exec` (the hook is a session-flag hook; Codex's per-hook trust is bypassed
 *   for it because Polly wrote it; an explicit `--sandbox` flag overrides the `sandbox_mode` default).
 * - `pi`: `pi-gate-extension.mjs` (imports dist/gate/pi-extension.js); args `['--no-extensions', '-e', <file>]`.
 * env: `PATH` = `<stateDir>/bin:<basePath>`, `POLLY_GATE_CONFIG` = the config path (informational:
 * no hook reads it).
 * @throws PollyError `not_built` when dist/gate is missing; `bad_input` for a relative path.
 */
export async function prepareGate(harness: GateHarnessName, options: PrepareGateOptions): Promise<PreparedGate> {
  return prepareGateSync(harness, options);
}

/** {@link prepareGate}, synchronously (it only writes small files): for callers that must spawn at once. */
export function prepareGateSync(harness: GateHarnessName, options: PrepareGateOptions): PreparedGate {
  const stateDir = resolve(options.stateDir);
  for (const [k, v] of Object.entries({ repoRoot: options.context.repoRoot, worktree: options.context.worktree, home: options.context.home })) {
    if (!v?.startsWith('/')) throw new PollyError('bad_input', `prepareGate: context.${k} must be an absolute path, got ${JSON.stringify(v)}`);
  }
  if (harness !== 'claude-code' && harness !== 'codex' && harness !== 'pi')
    throw new PollyError('bad_input', `prepareGate: unknown harness ${JSON.stringify(harness)} (claude-code, codex or pi)`);
  const shimDir = join(stateDir, 'bin');
  mkdirSync(shimDir, { recursive: true });
  const configPath = join(stateDir, 'gate-config.json');
  if (options.socket !== undefined && !options.socket.startsWith('/'))
    throw new PollyError('bad_input', `prepareGate: socket must be an absolute path, got ${JSON.stringify(options.socket)}`);
  const journalPath = options.socket ? null : options.journalPath === undefined ? join(options.context.repoRoot, '.polly', 'gate-decisions.jsonl') : options.journalPath;
  if (journalPath) mkdirSync(resolve(journalPath, '..'), { recursive: true });
  const context: GateContext = { ...options.context, protectedDirs: [...new Set([...(options.context.protectedDirs ?? []), stateDir])] };
  const config: GateRuntimeConfig = {
    version: 1,
    harness,
    role: options.role,
    context,
    policy: options.policy ?? (structuredClone(DEFAULT_GATE_POLICY) as GatePolicy),
    journalPath,
    ...(options.socket ? { socket: options.socket } : {}),
    shimDir,
  };
  writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  const files = [configPath];
  const shim = gateEntryCommand('shim').map(sq).join(' ');
  const basePath = options.basePath ?? process.env.PATH ?? '/usr/bin:/bin';
  const fastPath = shimFastPath({
    role: config.role,
    policy: config.policy,
    context,
    journalPath,
    realGit: findReal('git', basePath, shimDir),
    realDate: findReal('date', basePath, shimDir),
  });
  for (const prog of ['git', 'gh']) {
    const file = join(shimDir, prog);
    writeFileSync(
      file,
      `#!/bin/sh\n# Polly gate shim: decides "${prog} $*" before running the real ${prog}.\n${prog === 'git' ? fastPath : ''}exec ${shim} ${sq(configPath)} ${prog} "$@"\n`,
    );
    chmodSync(file, 0o755);
    files.push(file);
  }
  const args: string[] = [];
  if (harness === 'claude-code') {
    const hook = [...gateEntryCommand('claude-code-hook'), configPath].map(sq).join(' ');
    const file = join(stateDir, 'claude-settings.json');
    const settings = {
      disableAllHooks: false,
      hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: hook, timeout: 30 }] }] },
      ...(options.claudeSandbox ? { sandbox: options.claudeSandbox } : {}),
    };
    writeFileSync(file, `${JSON.stringify(settings, null, 2)}\n`);
    files.push(file);
    args.push('--settings', file);
  } else if (harness === 'codex') {
    const hook = [...gateEntryCommand('codex-hook'), configPath].map(sq).join(' ');
    const inline = `hooks.PreToolUse=[{hooks=[{type="command",command=${JSON.stringify(hook)},timeout=30}]}]`;
    const file = join(stateDir, 'codex-hooks.toml');
    writeFileSync(
      file,
      `# Polly gate: passed to codex as -c overrides (see prepareGate)\n[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = "command"\ncommand = ${JSON.stringify(hook)}\ntimeout = 30\n`,
    );
    files.push(file);
    args.push('--dangerously-bypass-hook-trust', '-c', inline, '-c', 'sandbox_mode="workspace-write"');
  } else {
    const file = join(stateDir, 'pi-gate-extension.mjs');
    writeFileSync(
      file,
      `// Polly gate for pi: blocks denied tool calls (loaded with --no-extensions -e)\nimport { createPiGate } from ${JSON.stringify(pathToFileURL(distScript('pi-extension')).href)};\nexport default createPiGate(${JSON.stringify(configPath)});\n`,
    );
    files.push(file);
    args.push('--no-extensions', '-e', file);
  }
  return { args, env: { PATH: `${shimDir}:${basePath}`, POLLY_GATE_CONFIG: configPath }, files, config };
}
