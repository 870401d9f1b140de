/**
 * What every enforcement entry point shares: reading the gate's runtime config (written by
 * `prepareGate` into its state dir) and stdin. Deciding is ./gate-client.ts `askGate`. Kept lean:
 * node:fs only.
 */
import { readFileSync } from 'node:fs';
import type { GateContext, GateHarness, GatePolicy, GateRole } from '../types.js';

/** The JSON file `prepareGate` writes (`<stateDir>/gate-config.json`). */
export interface GateRuntimeConfig {
  version: 1;
  harness: GateHarness;
  role: GateRole;
  context: GateContext;
  policy: GatePolicy;
  /**
   * Absolute path of the decision log the hook appends to when it decides in process, or null to
   * log nowhere. Null whenever `socket` is set: the decider journals, never the hook.
   */
  journalPath: string | null;
  /**
   * The worker runner's gate socket (./gate-server.ts): when set, every request goes there and the
   * answer is enforced; no answer is a deny. Absent in configs written before it existed.
   */
  socket?: string | null;
  /** The directory holding the git/gh shims (skipped when the shims look for the real binary). */
  shimDir: string;
}

/** Read and check the runtime config. @throws Error naming the file and what is wrong. */
export function readGateConfig(path: string | undefined): GateRuntimeConfig {
  if (!path) throw new Error('no gate config path given (the hook command names it as its first argument)');
  let cfg: GateRuntimeConfig;
  try {
    cfg = JSON.parse(readFileSync(path, 'utf8')) as GateRuntimeConfig;
  } catch (error) {
    throw new Error(`cannot read the gate config ${path}: ${(error as Error).message}`);
  }
  if (cfg?.version !== 1 || !cfg.context || !cfg.policy || !cfg.role) throw new Error(`the gate config ${path} is not a version 1 gate config`);
  return cfg;
}

/** Read all of stdin as text. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
