/**
 * How an enforcement point gets its answer: {@link askGate}. When the gate config names a socket
 * (`GateRuntimeConfig.socket`, a worker's gate: ./gate-server.ts, served by the worker runner
 * outside the sandbox), the request goes there and the decision comes back; the hook never writes
 * a decision itself. Without one (the Brain's own session, tests), it decides in process and
 * appends to `journalPath` as before. Fail closed: no socket, no answer within
 * {@link GATE_ANSWER_TIMEOUT_MS}, or an answer that is not a decision → deny.
 */
import { closeSync, openSync } from 'node:fs';
import { connect } from 'node:net';
import { basename, dirname } from 'node:path';
import { createFileJournal } from '../decision-log.js';
import type { GateDecision } from '../types.js';
import { answerGateRequest, type GateWireRequest } from './gate-request.js';
import type { GateRuntimeConfig } from './hook-runtime.js';

/** How long an enforcement point waits for the runner's answer (ms), below the 30 s hook timeout Polly gives Claude Code and Codex. */
export const GATE_ANSWER_TIMEOUT_MS = 20_000;

/** Longest unix socket path used as is (sun_path holds 108 bytes with its NUL). */
const MAX_SUN_PATH = 100;

/**
 * An address for the unix socket at `path` that fits in sun_path: the path itself, or, when it is
 * longer, `/proc/self/fd/<fd>/<name>` through an fd of its directory (Linux). Call `release()` once
 * the connect or listen has been issued.
 */
export function socketAddress(path: string): { address: string; release(): void } {
  if (Buffer.byteLength(path) <= MAX_SUN_PATH) return { address: path, release: () => {} };
  const fd = openSync(dirname(path), 'r');
  return { address: `/proc/self/fd/${fd}/${basename(path)}`, release: () => closeSync(fd) };
}

const failClosed = (why: string): GateDecision => ({
  decision: 'deny',
  rule: 'gate.unreachable',
  reason: `Polly's gate did not answer, so this call is blocked (fail closed): ${why}`,
});

function isDecision(v: unknown): v is GateDecision {
  const d = v as GateDecision | null;
  return !!d && (d.decision === 'allow' || d.decision === 'ask' || d.decision === 'deny') && typeof d.rule === 'string' && typeof d.reason === 'string';
}

/** Send `request` to the gate server on `socket` and read its one-line decision (deny on any failure). */
export function askGateSocket(socket: string, request: GateWireRequest, timeoutMs = GATE_ANSWER_TIMEOUT_MS): Promise<GateDecision> {
  return new Promise((resolve) => {
    let settled = false;
    let reply = '';
    let addr: ReturnType<typeof socketAddress>;
    try {
      addr = socketAddress(socket);
    } catch (error) {
      resolve(failClosed(`cannot open the gate socket's directory ${dirname(socket)}: ${(error as Error).message}`));
      return;
    }
    const c = connect(addr.address);
    addr.release();
    const done = (d: GateDecision): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      c.destroy();
      resolve(d);
    };
    const timer = setTimeout(() => done(failClosed(`no answer from ${socket} within ${timeoutMs} ms`)), timeoutMs);
    c.setEncoding('utf8');
    c.on('connect', () => c.write(`${JSON.stringify(request)}\n`));
    c.on('data', (chunk: string) => {
      reply += chunk;
      const nl = reply.indexOf('\n');
      if (nl < 0) return;
      let d: unknown;
      try {
        d = JSON.parse(reply.slice(0, nl));
      } catch {
        d = null;
      }
      done(isDecision(d) ? d : failClosed(`the answer from ${socket} is not a decision: ${JSON.stringify(reply.slice(0, 200))}`));
    });
    c.on('error', (error) => done(failClosed(`cannot reach ${socket}: ${error.message}`)));
    c.on('close', () => done(failClosed(`${socket} closed without an answer`)));
  });
}

/**
 * The decision for `request` under `cfg`: from the runner over `cfg.socket` when set, else decided
 * here and journaled to `cfg.journalPath` (see the module doc). Never rejects: a fault is a deny.
 */
export async function askGate(cfg: GateRuntimeConfig, request: GateWireRequest): Promise<GateDecision> {
  if (cfg.socket) return askGateSocket(cfg.socket, request);
  try {
    return answerGateRequest(cfg, request, cfg.journalPath ? createFileJournal(cfg.journalPath) : null);
  } catch (error) {
    return { decision: 'deny', rule: 'gate.internal_error', reason: `Polly's gate failed and blocks this call (fail closed): ${(error as Error).message}` };
  }
}
