/**
 * The placement port: where one agent turn runs. This machine is one host among the configured
 * ones; with no `workers.hosts` every turn runs here, as before hosts existed.
 *
 * With hosts, an implement turn (the only kind with a worktree) goes to a host that offers its
 * harness, is ready (probed over SSH, workers/hosts/host-probe.ts: reachable, the same Polly
 * build, node, git, the harness's CLI, Polly's sandbox unless `workers.allow_unconfined`) and has
 * a free slot (its live turns below `capacity`): the task's own host first (its worktree and agent
 * session are there), then the least loaded, in config order. Reviews, explore and search turns run
 * on this machine (a scratch directory or the main checkout: nothing to send).
 *
 * No host can take it: when every ready host is full, the turn waits for a slot; when none is ready,
 * it runs here only with `workers.local_fallback: true` (and says so), else it is refused naming
 * each host's problem and fix — never run here silently.
 *
 * Kubernetes would be one more implementation of this port (docs/hosts.md): a Pod or a `Sandbox`
 * resource per task, git as the transport, the same lease.
 */
import type { Harness, Purpose } from '../../brain/core/vocabulary.js';
import type { AgentOptionsByHarness } from '../agents/agent-factory.js';
import { configuredHosts, type ResolvedHost, type WorkerHostsOptions } from './host-config.js';
import { hostRefusal, probeHost, type HostProbeOutcome } from './host-probe.js';
import type { SshContext } from './ssh.js';

/** What placement needs to know of a turn. */
export interface PlacementRequest {
  taskId: string;
  harness: Harness;
  purpose: Purpose;
  readOnly: boolean;
  /** The host that holds the task's remote worktree (and agent session), if any. */
  preferHost?: string | null;
}

/** Where a turn goes. */
export type PlacementDecision =
  /** This machine; `note` says why when hosts are configured (a fallback, a review). */
  | { kind: 'local'; note: string | null }
  | { kind: 'host'; host: ResolvedHost }
  /** Every ready host is full: try again when a slot frees. */
  | { kind: 'wait'; reason: string }
  /** No host can take it and this machine may not: `permanent` when waiting cannot help (no host offers the harness, every host refused for a cause only its owner can fix). */
  | { kind: 'refuse'; reason: string; permanent: boolean };

/** The placement port (see the module doc). */
export interface Placement {
  /**
   * Place one turn.
   * @param load   live turns per host name (this Polly's view; a host also counts its own slots).
   * @param avoid  hosts not to use for this turn (one that just refused it as busy or was lost).
   */
  place(request: PlacementRequest, load: ReadonlyMap<string, number>, avoid?: ReadonlySet<string>): Promise<PlacementDecision>;
  /** Forget what is known of `host` (probe it afresh next time): after it was lost. */
  forget(host: string): void;
  /** The configured hosts. */
  hosts(): ResolvedHost[];
}

export interface PlacementOptions {
  workers: AgentOptionsByHarness & WorkerHostsOptions & { allow_unconfined?: boolean };
  ssh: SshContext;
  /** Default {@link probeHost}. */
  probe?: (host: ResolvedHost) => Promise<HostProbeOutcome>;
  /** How long a ready host's probe is trusted, ms. @default 30 000 */
  readyTtlMs?: number;
  /** How long a failed probe is trusted, ms. @default 5 000 */
  failedTtlMs?: number;
  now?: () => number;
}

/** Causes of refusal that waiting cannot fix (the host's owner must act). */
const PERMANENT = /does not offer|runs Polly .* this machine|polly is not installed|needs 20 or newer|git is not installed|is not on the host's PATH|sandbox cannot start/;

/** Create the placement over `options.workers.hosts` (see the module doc). */
export function createPlacement(options: PlacementOptions): Placement {
  const hosts = configuredHosts(options.workers);
  const now = options.now ?? Date.now;
  const probe = options.probe ?? ((h: ResolvedHost) => probeHost(h, options.ssh, options.workers));
  const readyTtl = options.readyTtlMs ?? 30_000;
  const cache = new Map<string, { at: number; outcome: Promise<HostProbeOutcome> }>();
  /** Hosts whose ready probe is being renewed in the background, with the generation it was started in. */
  const renewing = new Map<string, number>();
  /** Bumped by forget(): a renewal started before it is not kept. */
  let generation = 0;
  const probed = async (h: ResolvedHost): Promise<HostProbeOutcome> => {
    const hit = cache.get(h.name);
    if (hit) {
      const outcome = await hit.outcome;
      const age = now() - hit.at;
      if (outcome.ok && age < readyTtl) {
        // Past half its life a ready host's probe is renewed in the background: turns placed at a
        // steady pace never wait for a probe, and none is placed on a probe older than the TTL.
        if (age >= readyTtl / 2 && !renewing.has(h.name)) {
          const started = { at: now(), generation };
          renewing.set(h.name, generation);
          void probe(h)
            .then((fresh) => {
              if (generation === started.generation) cache.set(h.name, { at: started.at, outcome: Promise.resolve(fresh) });
            })
            .catch(() => undefined)
            .finally(() => {
              if (renewing.get(h.name) === started.generation) renewing.delete(h.name);
            });
        }
        return outcome;
      }
      if (!outcome.ok && age < (options.failedTtlMs ?? 5_000)) return outcome;
    }
    const fresh = { at: now(), outcome: probe(h) };
    cache.set(h.name, fresh);
    return fresh.outcome;
  };
  return {
    hosts: () => hosts,
    forget: (name) => {
      generation++;
      cache.delete(name);
      renewing.delete(name);
    },
    async place(request, load, avoid = new Set()) {
      if (hosts.length === 0) return { kind: 'local', note: null };
      if (request.purpose !== 'implement' || request.readOnly)
        return { kind: 'local', note: `a ${request.purpose} turn runs on this machine (only implement turns, which have a worktree, go to hosts)` };
      const offering = hosts.filter((h) => h.harnesses.includes(request.harness));
      const fallback = options.workers.local_fallback === true;
      if (offering.length === 0) {
        const reason = `no host in workers.hosts offers ${request.harness} (${hosts.map((h) => `${h.name}: ${h.harnesses.join(', ')}`).join('; ')})`;
        if (fallback) return { kind: 'local', note: `${reason}; it runs on this machine (workers.local_fallback: true)` };
        return { kind: 'refuse', permanent: true, reason: `${reason}. Add ${request.harness} to a host's harnesses, or set workers.local_fallback: true to run it here` };
      }
      const ratio = (h: ResolvedHost): number => (load.get(h.name) ?? 0) / h.capacity;
      const ordered = [...offering].sort((a, b) => {
        if (a.name === request.preferHost) return -1;
        if (b.name === request.preferHost) return 1;
        return ratio(a) - ratio(b) || offering.indexOf(a) - offering.indexOf(b);
      });
      // Every host's probe starts now; the first host in order that is ready and has room is
      // taken as soon as its own probe answered, without waiting for the others'.
      const outcomes = ordered.map((h) => ({ h, pending: probed(h) }));
      const refusals: Array<{ reason: string; fix: string }> = [];
      let full = false;
      for (const { h, pending } of outcomes) {
        const outcome = await pending;
        const refused = hostRefusal(outcome, h, request.harness, options.workers);
        if (refused) {
          refusals.push(refused);
          continue;
        }
        if (avoid.has(h.name) || (load.get(h.name) ?? 0) >= h.capacity) {
          full = true;
          continue;
        }
        return { kind: 'host', host: h };
      }
      if (full)
        return {
          kind: 'wait',
          reason: `every ready host that offers ${request.harness} is busy (${outcomes.map(({ h }) => `${h.name} ${load.get(h.name) ?? 0}/${h.capacity}`).join(', ')})`,
        };
      const why = refusals.map((r) => `${r.reason}${r.fix ? ` (fix: ${r.fix})` : ''}`).join('; ');
      if (fallback) return { kind: 'local', note: `no host can take it (${why}); it runs on this machine (workers.local_fallback: true)` };
      return {
        kind: 'refuse',
        permanent: refusals.every((r) => PERMANENT.test(r.reason)),
        reason: `no host can take this ${request.harness} turn: ${why}. Polly does not run it on this machine unless workers.local_fallback is true`,
      };
    },
  };
}
