// Real SSH hosts for tests: the hosts themselves are scripts/loopback-ssh-hosts.ts (shared with
// `npm run bench -- dispatch --host`); this adds what only tests use: pointing a repository's config at them.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SshHosts } from '../../scripts/loopback-ssh-hosts.js';

export * from '../../scripts/loopback-ssh-hosts.js';

/**
 * Point a repository's `.polly/config.yaml` (as `polly init` wrote it) at `hosts`: `workers.hosts`
 * (each host's name, its ssh alias, `capacity`, its own `dir`), `workers.ssh_config`, and
 * optionally `workers.host_lease_seconds` and `workers.local_fallback`.
 */
export function writeHostsConfig(
  repoDir: string,
  hosts: SshHosts,
  options: { capacity?: number; leaseSeconds?: number; localFallback?: boolean; only?: string[]; extra?: Record<string, string> } = {},
): void {
  const path = join(repoDir, '.polly', 'config.yaml');
  const chosen = hosts.hosts.filter((h) => !options.only || options.only.includes(h.name));
  const lines = chosen.map((h) => `    - {name: ${h.name}, ssh: ${h.name}, capacity: ${options.capacity ?? 2}, dir: ${h.dir}${options.extra?.[h.name] ?? ''}}`).join('\n');
  let text = readFileSync(path, 'utf8');
  const replace = (re: RegExp, to: string): void => {
    if (!re.test(text)) throw new Error(`writeHostsConfig: ${re} not found in ${path}`);
    text = text.replace(re, to);
  };
  replace(/^ {2}hosts: \[\]$/m, `  hosts:\n${lines}`);
  replace(/^ {2}ssh_config: null$/m, `  ssh_config: ${hosts.sshConfig}`);
  if (options.leaseSeconds !== undefined) replace(/^ {2}host_lease_seconds: \d+$/m, `  host_lease_seconds: ${options.leaseSeconds}`);
  if (options.localFallback !== undefined) replace(/^ {2}local_fallback: (true|false)$/m, `  local_fallback: ${options.localFallback}`);
  writeFileSync(path, text);
}
