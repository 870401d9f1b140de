/**
 * Remote worker hosts as config (`workers.hosts` and its neighbours in `.polly/config.yaml`): each
 * host an SSH destination that Polly reaches with the user's own ssh (keys from the ssh config or
 * the agent; never a password), how many turns it runs at once, and which harnesses it offers.
 * Owned here and composed into the config by brain/config/ (as every part owns its options).
 *
 * A host is trusted like this machine (the user configured it); a worker on it is not: it runs in
 * Polly's sandbox there, and what comes back is a tree of files that goes through the same checks
 * as a local worker's (docs/hosts.md).
 */
import { HARNESSES, type Harness } from '../../brain/core/vocabulary.js';

/** One remote host (`workers.hosts[i]`). */
export interface HostConfig {
  /** Polly's name for it (`[a-z0-9-]`, at most 32; not `local`): in the registry, `polly status`, the dashboard. */
  name: string;
  /**
   * The SSH destination as ssh(1) takes it: `user@host`, `host`, or a `Host` alias of the ssh
   * config. The identity comes from the ssh config (IdentityFile) or the ssh agent; a password is
   * refused (BatchMode: ssh never prompts).
   */
  ssh: string;
  /** The SSH port; null: what the ssh config says (else 22). @default null */
  port?: number | null;
  /** Turns this host runs at once (for this and any other Polly sharing it: the host counts its own slots). @default 2 */
  capacity?: number;
  /** The harnesses whose CLIs this host offers. @default all (claude-code, codex, pi) */
  harnesses?: Harness[];
  /** Polly's directory on the host: relative to the host user's home, or absolute. @default .polly-host */
  dir?: string;
}

/** A host with every default filled in. */
export type ResolvedHost = Required<Omit<HostConfig, 'port'>> & { port: number | null };

/** The host options of `workers` (config keys `workers.hosts`, `workers.ssh_config`, `workers.host_lease_seconds`, `workers.local_fallback`). */
export interface WorkerHostsOptions {
  /** Remote hosts that run implement turns; empty: every turn runs on this machine. @default [] */
  hosts?: HostConfig[];
  /** An ssh_config(5) file Polly passes to ssh with `-F`; null: the user's own (~/.ssh/config). @default null */
  ssh_config?: string | null;
  /**
   * Seconds a host's turn lives without hearing from this machine: the host stops its worker after
   * it, and this machine treats the host as lost (and re-offers the task) only after waiting it out,
   * so a turn never runs twice at once. @default 30
   */
  host_lease_seconds?: number;
  /**
   * With hosts configured, whether a turn no host can take runs on this machine instead. false: it
   * waits for a host (or fails, naming each host's problem); Polly never runs it here silently. @default false
   */
  local_fallback?: boolean;
}

/** The name no host may take: it means this machine in the registry and in `polly status`. */
export const LOCAL_HOST = 'local';

export const HOST_DEFAULTS = { port: null, capacity: 2, harnesses: [...HARNESSES], dir: '.polly-host' } as const;

/** Default `host_lease_seconds`. */
export const DEFAULT_HOST_LEASE_SECONDS = 30;

/** Fill in a host's defaults. Pure. */
export function resolveHost(host: HostConfig): ResolvedHost {
  return {
    name: host.name,
    ssh: host.ssh,
    port: host.port ?? HOST_DEFAULTS.port,
    capacity: host.capacity ?? HOST_DEFAULTS.capacity,
    harnesses: host.harnesses && host.harnesses.length > 0 ? [...host.harnesses] : [...HOST_DEFAULTS.harnesses],
    dir: host.dir ?? HOST_DEFAULTS.dir,
  };
}

/** The configured hosts with their defaults (none when `workers.hosts` is absent). */
export function configuredHosts(workers: WorkerHostsOptions): ResolvedHost[] {
  return (workers.hosts ?? []).map(resolveHost);
}

/**
 * What is wrong with `hosts` (one sentence each, naming the index, the value and the fix), or []:
 * a name that is not `[a-z0-9-]{1,32}`, `local`, or taken twice; a destination with a password
 * (`user:secret@host`), starting with `-` (ssh would read it as an option) or holding a space or
 * a shell character; a `dir` with `..`, a newline or a quote. Pure.
 */
export function hostConfigProblems(hosts: readonly HostConfig[]): Array<{ index: number; key: string; problem: string }> {
  const out: Array<{ index: number; key: string; problem: string }> = [];
  const seen = new Set<string>();
  hosts.forEach((h, index) => {
    if (!/^[a-z0-9][a-z0-9-]{0,31}$/.test(h.name))
      out.push({ index, key: 'name', problem: `host name ${JSON.stringify(h.name)} must be 1-32 lower-case letters, digits or -, starting with a letter or digit` });
    else if (h.name === LOCAL_HOST) out.push({ index, key: 'name', problem: `"${LOCAL_HOST}" means this machine; give the host another name` });
    else if (seen.has(h.name)) out.push({ index, key: 'name', problem: `host name "${h.name}" is used twice; each host needs its own name` });
    seen.add(h.name);
    const at = h.ssh.lastIndexOf('@');
    const user = at >= 0 ? h.ssh.slice(0, at) : '';
    if (user.includes(':'))
      out.push({
        index,
        key: 'ssh',
        problem:
          'the destination holds a password (user:password@host); Polly never takes a password from config: give ssh a key (IdentityFile in your ssh config, or ssh-agent) and write user@host',
      });
    else if (h.ssh.startsWith('-') || !/^[A-Za-z0-9_.@%+\-[\]:]+$/.test(h.ssh) || h.ssh === '')
      out.push({ index, key: 'ssh', problem: `ssh destination ${JSON.stringify(h.ssh)} is not user@host, host or an ssh config alias (no spaces, quotes or a leading -)` });
    const dir = h.dir ?? HOST_DEFAULTS.dir;
    if (dir === '' || /(^|\/)\.\.(\/|$)|[\n'"\\$`]/.test(dir))
      out.push({ index, key: 'dir', problem: `dir ${JSON.stringify(dir)} must be a path on the host (relative to its home, or absolute) without "..", quotes, $ or backslashes` });
  });
  return out;
}
