/**
 * What one `polly ui` hands to the next on the same repository, so that a restart does not strand
 * an open tab: the port it listened on and its sessions (hashes only: brain/ui/ui-security.ts
 * {@link KeptSession}). Kept in `<dir>/ui-server.json` (`dir` is the repository's state directory
 * outside the repository, workers/sandbox/agent-state-dir.ts `repoStateDir`, which no sandbox
 * shows), written atomically with mode 0600. The file holds no secret: a session needs its root
 * secret and cookie, which only the browser has.
 *
 * Format: `{"version": 1, "host": string, "port": number, "sessions": KeptSession[]}`.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KeptSession } from './ui-security.js';

/** The last server's host, port and sessions. */
export interface KeptUiState {
  host: string;
  port: number;
  sessions: KeptSession[];
}

/** The file in `dir` that holds {@link KeptUiState}. */
export function keptStatePath(dir: string): string {
  return join(dir, 'ui-server.json');
}

/**
 * The state the last server in `dir` left, or null when there is none or it cannot be used (a
 * damaged file is ignored, with `warn` saying so: the cost is only that open tabs sign in again).
 */
export function readKeptState(dir: string, warn: (line: string) => void): KeptUiState | null {
  const path = keptStatePath(dir);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  try {
    const j = JSON.parse(text) as Partial<KeptUiState> & { version?: number };
    const hex = (v: unknown) => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);
    if (j.version !== 1 || typeof j.host !== 'string' || !Number.isInteger(j.port) || !Array.isArray(j.sessions)) throw new Error('not a version 1 record');
    const sessions = j.sessions.filter((s): s is KeptSession => !!s && hex(s.secretHash) && hex(s.cookieHash) && typeof s.expiresAt === 'number');
    return { host: j.host, port: j.port as number, sessions };
  } catch (error) {
    warn(`[polly ui] ignoring ${path} (${error instanceof Error ? error.message : String(error)}): open tabs of the last server must sign in again`);
    return null;
  }
}

/** Write `state` to `dir` (created, mode 0700) atomically, the file mode 0600. */
export function writeKeptState(dir: string, state: KeptUiState): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = keptStatePath(dir);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ version: 1, ...state })}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}
