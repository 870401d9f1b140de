/**
 * Is a host ready to run Polly's turns? Two halves:
 *
 * - on the host, {@link collectHostProbe} (`polly host probe --json`, brain/commands/host.ts): which
 *   Polly it runs, node, git, the agent CLIs found, whether Polly's sandbox starts there (the same
 *   probe as on this machine: workers/sandbox/sandbox.ts `probeSandbox`), its clock, its directory;
 * - here, {@link probeHost} runs it over ssh (timing the round trip, for the clock skew) and
 *   {@link hostChecks} turns the answer into one line per property, each `ok` or a `problem` with
 *   its fix; {@link hostRefusal} is the first problem that stops a host from taking turns.
 *
 * Model keys never go to a host's disk: the turn's keys are sent from this machine over the SSH
 * channel, into the worker's environment only (docs/hosts.md). So the key check names, for each
 * harness the host offers, the variables this machine has (names only).
 */
import { spawnSync } from 'node:child_process';
import { homedir, userInfo } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { buildIdentity, describeBuild, sameBuild, type BuildIdentity } from '../../brain/core/build-identity.js';
import type { Harness } from '../../brain/core/vocabulary.js';
import type { AgentOptionsByHarness } from '../agents/agent-factory.js';
import { resolveAgentBinary } from '../agents/agent-binary.js';
import { agentCredentials } from '../agents/agent-preflight.js';
import { probeSandbox, type SandboxProbe } from '../sandbox/sandbox.js';
import type { ResolvedHost } from './host-config.js';
import { remotePollyCommand, runOnHost, sshFailure, type SshContext } from './ssh.js';

/** What `polly host probe --json` prints on the host. */
export interface HostProbeReport {
  polly: BuildIdentity;
  node: string;
  platform: string;
  arch: string;
  /** `git --version`, or null when git is missing. */
  git: string | null;
  /** Each harness's CLI as resolved on the host (a path), or null when not found. */
  harnesses: Partial<Record<Harness, string | null>>;
  sandbox: SandboxProbe;
  /** The host's clock, ms since the epoch. */
  time: number;
  user: string;
  home: string;
  /** Polly's directory on the host, absolute. */
  dir: string;
}

/**
 * The probe on the host (see the module doc).
 * @param commands  each harness's configured command (`workers.<h>.command`), resolved on the host's PATH.
 * @param dir       Polly's directory on the host as configured (relative to HOME, or absolute).
 */
export function collectHostProbe(commands: Partial<Record<Harness, string>>, dir: string): HostProbeReport {
  const git = spawnSync('git', ['--version'], { encoding: 'utf8', timeout: 10_000 });
  const harnesses: Partial<Record<Harness, string | null>> = {};
  for (const [h, command] of Object.entries(commands) as Array<[Harness, string]>) {
    const bin = resolveAgentBinary(h, { command }, process.env);
    harnesses[h] = isAbsolute(bin) && spawnSync('test', ['-x', bin]).status === 0 ? bin : null;
  }
  const home = process.env.HOME ?? homedir();
  return {
    polly: buildIdentity(),
    node: process.version,
    platform: process.platform,
    arch: process.arch,
    git: git.status === 0 ? git.stdout.trim() : null,
    harnesses,
    sandbox: probeSandbox(),
    time: Date.now(),
    user: userInfo().username,
    home,
    dir: isAbsolute(dir) ? dir : join(home, dir),
  };
}

/** The outcome of probing one host from here. */
export type HostProbeOutcome =
  | { ok: true; host: string; report: HostProbeReport; rttMs: number; skewMs: number }
  | { ok: false; host: string; reason: string; fix: string; rttMs: number };

/**
 * Probe `host` over ssh (`polly host probe --json`). Never rejects: an unreachable host, a host
 * without Polly or one that answers nonsense is `ok: false` with the reason and the fix.
 * `skewMs` is the host's clock minus the midpoint of the round trip here.
 */
export async function probeHost(host: ResolvedHost, ctx: SshContext, workers: AgentOptionsByHarness, timeoutMs = 30_000): Promise<HostProbeOutcome> {
  const args = ['probe', '--json', '--dir', host.dir];
  for (const h of host.harnesses) args.push('--command', `${h}=${workers[h].command}`);
  const sent = Date.now();
  const r = await runOnHost(host, ctx, remotePollyCommand(host, args), { timeoutMs });
  const back = Date.now();
  const rttMs = back - sent;
  if (r.code === 255 || r.timedOut)
    return {
      ok: false,
      host: host.name,
      rttMs,
      reason: `cannot reach ${host.ssh}${host.port ? ` port ${host.port}` : ''}: ${sshFailure(r)}`,
      fix: `check that "ssh ${host.port ? `-p ${host.port} ` : ''}${host.ssh} true" works without a prompt (a key in your ssh config or agent, the host key in known_hosts${host.port ? '' : ', the port'})`,
    };
  if (r.code === 127)
    return { ok: false, host: host.name, rttMs, reason: r.stderr.trim().split('\n').at(-1) ?? 'polly not found on the host', fix: `run "polly hosts install ${host.name}"` };
  let report: HostProbeReport;
  try {
    report = JSON.parse(r.stdout) as HostProbeReport;
    if (!report.polly || typeof report.time !== 'number') throw new Error('not a probe report');
  } catch {
    const said = (r.stderr.trim() || r.stdout.trim()).split('\n').at(-1) ?? '';
    return {
      ok: false,
      host: host.name,
      rttMs,
      reason: `polly on ${host.name} did not answer the probe (exit ${r.code}${said ? `: ${said}` : ''})`,
      fix: `run "polly hosts install ${host.name}" to put this Polly there`,
    };
  }
  return { ok: true, host: host.name, report, rttMs, skewMs: Math.round(report.time - (sent + back) / 2) };
}

/** One line of a host's readiness (the shape of a `polly doctor` check). */
export interface HostCheck {
  id: string;
  status: 'ok' | 'problem';
  detail: string;
  fix?: string;
}

/** Clock skew beyond this is a problem: leases, heartbeats and the journal's times assume clocks that roughly agree. */
export const MAX_CLOCK_SKEW_MS = 5_000;

/**
 * One check per property of a probed host (ids `host:<name>:<what>`): reachable, Polly's version
 * (the same build as this one, else refused), node (≥ 20), git, each harness's CLI, the sandbox,
 * the model keys sent from here (names only), the clock skew. Pure.
 * @param local     this machine's build (default {@link buildIdentity}).
 * @param agentEnv  the environment the turns' keys come from (what Polly passes agents here).
 */
export function hostChecks(
  host: ResolvedHost,
  outcome: HostProbeOutcome,
  workers: AgentOptionsByHarness,
  agentEnv: Readonly<Record<string, string | undefined>>,
  local: BuildIdentity = buildIdentity(),
): HostCheck[] {
  const id = (what: string): string => `host:${host.name}:${what}`;
  if (!outcome.ok) return [{ id: id('reachable'), status: 'problem', detail: outcome.reason, fix: outcome.fix }];
  const r = outcome.report;
  const out: HostCheck[] = [
    { id: id('reachable'), status: 'ok', detail: `${r.user}@${host.ssh.split('@').at(-1)} answers in ${outcome.rttMs} ms; Polly's directory there: ${r.dir}` },
  ];
  out.push(
    sameBuild(r.polly, local)
      ? { id: id('polly'), status: 'ok', detail: `Polly ${describeBuild(r.polly)}, the same build as here` }
      : {
          id: id('polly'),
          status: 'problem',
          detail: `the host runs Polly ${describeBuild(r.polly)}, this machine ${describeBuild(local)}: a turn is refused unless both run the same build`,
          fix: `run "polly hosts install ${host.name}" (it copies this build there)`,
        },
  );
  const major = Number(/^v(\d+)/.exec(r.node)?.[1] ?? 0);
  out.push(
    major >= 20
      ? { id: id('node'), status: 'ok', detail: `node ${r.node} (${r.platform}/${r.arch})` }
      : {
          id: id('node'),
          status: 'problem',
          detail: `node ${r.node} on the host; Polly needs 20 or newer`,
          fix: 'install Node 20 or newer on the host (Debian: apt-get install nodejs)',
        },
  );
  out.push(
    r.git
      ? { id: id('git'), status: 'ok', detail: r.git }
      : { id: id('git'), status: 'problem', detail: 'git is not installed on the host', fix: 'install git on the host (Debian: apt-get install git)' },
  );
  for (const h of host.harnesses) {
    const found = r.harnesses[h];
    out.push(
      found
        ? { id: id(`agent:${h}`), status: 'ok', detail: `${workers[h].command} → ${found}` }
        : {
            id: id(`agent:${h}`),
            status: 'problem',
            detail: `${workers[h].command} is not on the host's PATH`,
            fix: `install the ${h} CLI on the host, or drop ${h} from this host's harnesses in workers.hosts`,
          },
    );
  }
  out.push(
    r.sandbox.ok
      ? { id: id('sandbox'), status: 'ok', detail: `Polly's sandbox starts there (${r.sandbox.bwrap})` }
      : { id: id('sandbox'), status: 'problem', detail: `Polly's sandbox cannot start on the host: ${r.sandbox.reason}`, fix: `on the host: ${r.sandbox.fix}` },
  );
  for (const h of host.harnesses) {
    const c = agentCredentials(h, workers, agentEnv);
    if (c.status === 'present') out.push({ id: id(`keys:${h}`), status: 'ok', detail: `sent from here per turn, never written there: ${c.variables.join(', ')}` });
    else if (c.status === 'unknown') out.push({ id: id(`keys:${h}`), status: 'ok', detail: `not checked: ${c.fix}` });
    else out.push({ id: id(`keys:${h}`), status: 'problem', detail: `no model key here to send: none of ${c.variables.join(', ')} is set`, fix: c.fix });
  }
  const skew = Math.abs(outcome.skewMs);
  out.push(
    skew <= MAX_CLOCK_SKEW_MS
      ? { id: id('clock'), status: 'ok', detail: `clock skew ${outcome.skewMs} ms (round trip ${outcome.rttMs} ms)` }
      : {
          id: id('clock'),
          status: 'problem',
          detail: `the host's clock is ${outcome.skewMs > 0 ? 'ahead' : 'behind'} by ${(skew / 1000).toFixed(1)} s`,
          fix: 'run NTP on both machines (Debian: apt-get install systemd-timesyncd or chrony)',
        },
  );
  return out;
}

/**
 * Why `host` may not take a turn of `harness` now, or null when it may: unreachable, another
 * Polly build, node too old, no git, no CLI for the harness, no sandbox (unless
 * `allowUnconfined`). Clock skew and model keys do not refuse a host (doctor says them). Pure.
 */
export function hostRefusal(
  outcome: HostProbeOutcome,
  host: ResolvedHost,
  harness: Harness,
  workers: AgentOptionsByHarness & { allow_unconfined?: boolean },
): { reason: string; fix: string } | null {
  if (!host.harnesses.includes(harness))
    return {
      reason: `host ${host.name} does not offer ${harness} (its harnesses: ${host.harnesses.join(', ')})`,
      fix: `add ${harness} to its harnesses in workers.hosts, or add a host that offers it`,
    };
  const checks = hostChecks(host, outcome, workers, {});
  const blocking = checks.find(
    (c) =>
      c.status === 'problem' &&
      !c.id.endsWith(':clock') &&
      !c.id.includes(':keys:') &&
      (!c.id.includes(':agent:') || c.id.endsWith(`:agent:${harness}`)) &&
      !(c.id.endsWith(':sandbox') && workers.allow_unconfined),
  );
  return blocking ? { reason: `host ${host.name}: ${blocking.detail}`, fix: blocking.fix ?? '' } : null;
}
