/**
 * Claude Code's own sandbox as defence in depth, in the settings file Polly writes for a worker.
 *
 * Keys (Claude Code 2.1.197's settings schema, read from the zod schema inside
 * node_modules/@anthropic-ai/claude-code/bin/claude.exe): `sandbox.enabled`,
 * `sandbox.failIfUnavailable` ("Exit with an error at startup if sandbox.enabled is true but the
 * sandbox cannot start"), `sandbox.allowUnsandboxedCommands` (false: no `dangerouslyDisableSandbox`
 * escape), `sandbox.filesystem.denyWrite` (paths), `sandbox.network.allowedDomains`.
 *
 * Where it applies: only where Polly's own sandbox is off (`workers.allow_unconfined`). Inside
 * Polly's bubblewrap it is left out: on Linux Claude Code's sandbox is itself bubblewrap plus
 * `socat` bridges, it would nest inside Polly's sandbox with every capability dropped (Codex's
 * nested bubblewrap hangs there, measured), and `socat` is not installed here, so with
 * `failIfUnavailable` every worker would stop at start-up. Unconfined, it is written when it can
 * start: on macOS (Seatbelt is built in), and on Linux when `bwrap` and `socat` are on PATH.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

function onPath(name: string, pathVar: string | undefined): boolean {
  return (pathVar ?? '').split(':').some((d) => d !== '' && existsSync(join(d, name)));
}

/**
 * The `sandbox` settings for a Claude Code worker, or null when none apply (see the module doc).
 * @param input.confined  the worker runs in Polly's sandbox
 * @param input.gitDir    the repository's `.git` (common git dir), denied for writing
 */
export function claudeCodeSandboxSettings(input: { confined: boolean; gitDir: string; platform?: NodeJS.Platform; pathVar?: string }): Record<string, unknown> | null {
  if (input.confined) return null;
  const platform = input.platform ?? process.platform;
  const canStart = platform === 'darwin' || (platform === 'linux' && onPath('bwrap', input.pathVar ?? process.env.PATH) && onPath('socat', input.pathVar ?? process.env.PATH));
  if (!canStart) return null;
  return { enabled: true, failIfUnavailable: true, allowUnsandboxedCommands: false, filesystem: { denyWrite: [input.gitDir] } };
}
