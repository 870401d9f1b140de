/**
 * What every enforcement entry point shares: reading the gate's runtime config (written by
 * `prepareGate` into its state dir), deciding, and journaling. Kept lean: node:fs and the gate only.
 */
import { readFileSync } from 'node:fs';
import { decide } from '../decide.js';
import { createFileJournal, decisionEntry } from '../decision-log.js';
import type { GateContext, GateDecision, GateHarness, GatePolicy, GateRole, ToolRequest } from '../types.js';

/** The JSON file `prepareGate` writes (`<stateDir>/gate-config.json`). */
export interface GateRuntimeConfig {
  version: 1;
  harness: GateHarness;
  role: GateRole;
  context: GateContext;
  policy: GatePolicy;
  /** Absolute path of the decision log, or null to log nowhere. */
  journalPath: string | null;
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

/** Decide each request (all must allow), journal every decision, and return the first non-allow (or the last allow). */
export function decideAll(cfg: GateRuntimeConfig, requests: Array<Omit<ToolRequest, 'type' | 'role'>>, extra: Record<string, unknown> = {}): GateDecision {
  const journal = cfg.journalPath ? createFileJournal(cfg.journalPath) : null;
  let result: GateDecision = { decision: 'allow', rule: 'allow', reason: 'nothing to check' };
  for (const r of requests) {
    const req: ToolRequest = { type: 'tool', role: cfg.role, ...r };
    const d = decide(req, cfg.policy, cfg.context);
    journal?.appendJournal('gate.decision', decisionEntry(req, d, extra));
    if (d.decision !== 'allow') return d;
    result = d;
  }
  return result;
}

/** Read all of stdin as text. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
