/**
 * Find the executable of an agent CLI: the configured command, else the CLI's default name on
 * PATH, else this package's own `node_modules/.bin` (the CLIs are Polly's devDependencies).
 */
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Harness } from '../../brain/core/vocabulary.js';
import { isExecutableFile } from '../sandbox/sandbox-executable.js';

/** The executable name each harness installs (`@anthropic-ai/claude-code`, `@openai/codex`, pi-coding-agent). */
export const DEFAULT_AGENT_COMMAND: Record<Harness, string> = { 'claude-code': 'claude', codex: 'codex', pi: 'pi' };

/** Absolute path of `name` on `pathVar` (PATH syntax), or null. */
export function findOnPath(name: string, pathVar: string | undefined = process.env.PATH): string | null {
  for (const dir of (pathVar ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

/** `node_modules/.bin/<name>` in the nearest enclosing package of this module, or null. */
export function findInPackageBin(name: string, from: string = dirname(fileURLToPath(import.meta.url))): string | null {
  let dir = from;
  for (;;) {
    const candidate = join(dir, 'node_modules', '.bin', name);
    if (isExecutableFile(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/**
 * The executable to run for `harness`.
 *
 * Order: `config.command` when it is a path (absolute, or relative with a slash: resolved against
 * `cwd`) — used as is, even if missing, so the run ends `agent_missing` naming it; otherwise the
 * configured name (default {@link DEFAULT_AGENT_COMMAND}) on `env.PATH`; otherwise the same name in
 * this package's `node_modules/.bin`. When nothing is found the bare name is returned, and spawning
 * it fails with ENOENT, which the process runner reports as `agent_missing`.
 */
export function resolveAgentBinary(harness: Harness, config: { command?: string | null } = {}, env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string {
  const name = config.command?.trim() || DEFAULT_AGENT_COMMAND[harness];
  if (isAbsolute(name)) return name;
  if (name.includes('/')) return resolve(cwd, name);
  return findOnPath(name, env.PATH) ?? findInPackageBin(name) ?? name;
}
