/**
 * The gate's decider for one worker, run by the worker runner OUTSIDE the sandbox: a unix socket
 * in the worker's gate dir (bound read-only into the sandbox: a connect needs no write access),
 * one JSON line in ({@link GateWireRequest}), one decision line out (`{decision, rule, reason}`).
 *
 * Why: the hooks, the pi extension and the shims run inside the sandbox with the worker's own uid
 * and mounts, so any file they could append to, the worker's commands could truncate or forge.
 * Here the decision is made with the config the runner holds in memory and journaled by the runner
 * to a log no sandbox mount can write; every line carries the runner's `stamp` (`task`, `worker`),
 * so a request is recorded as the task whose socket it came in on, whatever it claims.
 *
 * Limits: a request line over {@link MAX_REQUEST_BYTES} is denied; one connection, one request.
 */
import { unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { GateJournal } from '../decision-log.js';
import type { GateDecision } from '../types.js';
import { socketAddress } from './gate-client.js';
import { answerGateRequest, type DecisionStamp } from './gate-request.js';
import type { GateRuntimeConfig } from './hook-runtime.js';

/** The largest request line accepted (bytes): a Write of a large file carries its content. */
export const MAX_REQUEST_BYTES = 32 * 1024 * 1024;

export interface GateServerOptions {
  /** Absolute path of the socket to create (a stale file there is replaced). */
  socketPath: string;
  /** The worker's gate config (role, context, policy, harness): what `prepareGate` wrote, as held in memory. */
  config: GateRuntimeConfig;
  /** Where decisions go (the runner's file journal), or null. */
  journal: GateJournal | null;
  /** Added to every journaled decision (`{task, worker}`). */
  stamp: DecisionStamp;
}

export interface GateServer {
  socketPath: string;
  /** Decisions answered so far. */
  answered(): number;
  /** Stop listening, drop open connections, remove the socket (idempotent). */
  close(): Promise<void>;
}

/**
 * Start the decider (see the module doc). Resolves once it listens.
 * @throws Error when the socket cannot be created (the runner then refuses the turn).
 */
export async function startGateServer(options: GateServerOptions): Promise<GateServer> {
  const open = new Set<Socket>();
  let count = 0;
  const answer = (c: Socket, d: GateDecision): void => {
    count++;
    c.end(`${JSON.stringify({ decision: d.decision, rule: d.rule, reason: d.reason })}\n`);
  };
  const server: Server = createServer((c) => {
    open.add(c);
    c.on('close', () => open.delete(c));
    c.on('error', () => c.destroy());
    const chunks: Buffer[] = [];
    let size = 0;
    c.on('data', (chunk: Buffer) => {
      if (c.writableEnded) return;
      const nl = chunk.indexOf(0x0a);
      chunks.push(nl < 0 ? chunk : chunk.subarray(0, nl));
      size += nl < 0 ? chunk.length : nl;
      if (size > MAX_REQUEST_BYTES) {
        answer(c, { decision: 'deny', rule: 'gate.bad_request', reason: `the request is larger than ${MAX_REQUEST_BYTES} bytes; nothing was run` });
        return;
      }
      if (nl < 0) return;
      let request: unknown;
      try {
        request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        request = { unparsable: true };
      }
      let d: GateDecision;
      try {
        d = answerGateRequest(options.config, request, options.journal, options.stamp);
      } catch (error) {
        d = { decision: 'deny', rule: 'gate.internal_error', reason: `Polly's gate failed and blocks this call (fail closed): ${(error as Error).message}` };
      }
      answer(c, d);
    });
  });
  try {
    unlinkSync(options.socketPath);
  } catch {
    // none there
  }
  const addr = socketAddress(options.socketPath);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(addr.address, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    addr.release();
  }
  let closing: Promise<void> | null = null;
  return {
    socketPath: options.socketPath,
    answered: () => count,
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const c of open) c.destroy();
        server.close(() => {
          try {
            unlinkSync(options.socketPath);
          } catch {
            // already gone
          }
          resolve();
        });
      });
      return closing;
    },
  };
}
