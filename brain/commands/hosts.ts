/**
 * `polly hosts`: the remote hosts of `workers.hosts` (docs/hosts.md).
 *
 * - `polly hosts [list] [--json]`: each host (destination, capacity, harnesses, directory) with the
 *   tasks whose remote worktree it holds and its live turns, from the registry.
 * - `polly hosts check [NAME] [--json]`: probe each host over SSH and print one line per property
 *   (reachable, Polly's build, node, git, agent CLIs, sandbox, model keys by name, clock skew), as
 *   `polly doctor` does for this machine; exit 1 when any is a problem.
 * - `polly hosts install NAME [--json]`: copy this Polly build to the host (workers/hosts/host-install.ts),
 *   then probe it again.
 */
import { PollyError } from '../core/errors.js';
import { configuredHosts, type ResolvedHost } from '../../workers/hosts/host-config.js';
import { hostChecks, probeHost, type HostCheck } from '../../workers/hosts/host-probe.js';
import { installOnHost } from '../../workers/hosts/host-install.js';
import { sshContext } from '../../workers/hosts/ssh.js';
import { agentEnvFrom } from '../process/agent-env.js';
import type { PollyConfig } from '../config/config-schema.js';
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command } from './command.js';
import { openRepoContext } from '../registry/repo-context.js';

const USAGE = `Usage: polly hosts [list] [--json]
       polly hosts check [NAME] [--json]
       polly hosts install NAME [--json]

The remote hosts of workers.hosts in .polly/config.yaml (docs/hosts.md): machines that run
implement turns over SSH, each in Polly's sandbox there, with git as the transport.

  list      each host, the tasks whose remote worktree it holds, its live turns
  check     probe each host (or NAME) over SSH: reachable, the same Polly build, node, git,
            the agent CLIs, Polly's sandbox, the model keys sent from here (names only), clock skew
  install   copy this Polly build to NAME (into its dir/polly/<build>, with dir/bin/polly)

Options:
  --json   machine output

Exit codes: 0 ok; 1 a host has a problem (check) or the install failed; 2 bad input.`;

/** The checks of every host (or the one named), in config order. */
export async function checkHosts(config: PollyConfig, env: NodeJS.ProcessEnv, only?: string): Promise<Array<{ host: string; checks: HostCheck[] }>> {
  const hosts = selectHosts(config, only);
  const ctx = sshContext(config.workers);
  const agentEnv = agentEnvFrom(env, config);
  return Promise.all(hosts.map(async (h) => ({ host: h.name, checks: hostChecks(h, await probeHost(h, ctx, config.workers), config.workers, agentEnv) })));
}

function selectHosts(config: PollyConfig, only?: string): ResolvedHost[] {
  const hosts = configuredHosts(config.workers);
  if (only === undefined) return hosts;
  const found = hosts.filter((h) => h.name === only);
  if (found.length === 0)
    throw new PollyError(
      'bad_input',
      `no host ${JSON.stringify(only)} in workers.hosts (${hosts.map((h) => h.name).join(', ') || 'none configured'}); add it to .polly/config.yaml`,
    );
  return found;
}

export const command: Command = {
  summary: 'remote worker hosts: list them, check them over SSH, install this Polly on one',
  usage: USAGE,
  async run(argv, io) {
    const sub = argv[0] && !argv[0].startsWith('-') ? argv[0] : 'list';
    const rest = argv[0] === sub ? argv.slice(1) : argv;
    const args = parseCommandArgs('hosts', rest, { json: { type: 'boolean' } }, sub === 'list' ? 0 : 1);
    const { config, store } = await openRepoContext(io.cwd, io.env);
    switch (sub) {
      case 'list': {
        const reg = await store.read();
        const rows = configuredHosts(config.workers).map((h) => ({
          ...h,
          tasks: Object.values(reg.tasks)
            .filter((t) => t.host === h.name)
            .map((t) => ({ id: t.id, status: t.status })),
          liveTurns: Object.values(reg.workers)
            .filter((w) => w.host === h.name && (w.state === 'starting' || w.state === 'running'))
            .map((w) => ({ workerId: w.id, taskId: w.taskId })),
        }));
        if (args.values.json) writeJson(io.stdout, { hosts: rows, localFallback: config.workers.local_fallback ?? false });
        else if (rows.length === 0) writeLine(io.stdout, 'No hosts: every turn runs on this machine (workers.hosts in .polly/config.yaml adds some; docs/hosts.md).');
        else
          for (const h of rows) {
            writeLine(io.stdout, `${h.name}  ${h.ssh}${h.port ? ` port ${h.port}` : ''}  capacity ${h.capacity}  ${h.harnesses.join(',')}  dir ${h.dir}`);
            writeLine(io.stdout, `  tasks: ${h.tasks.map((t) => `${t.id} (${t.status})`).join(', ') || 'none'}; live turns: ${h.liveTurns.length}`);
          }
        return 0;
      }
      case 'check': {
        const results = await checkHosts(config, io.env, args.positionals[0]);
        const ok = results.every((r) => r.checks.every((c) => c.status === 'ok'));
        if (args.values.json) writeJson(io.stdout, { ok, hosts: results });
        else {
          if (results.length === 0) writeLine(io.stdout, 'No hosts configured (workers.hosts).');
          for (const r of results)
            for (const c of r.checks) {
              writeLine(io.stdout, `  ${c.status === 'ok' ? 'ok     ' : 'PROBLEM'} ${c.id}: ${c.detail}`);
              if (c.fix) writeLine(io.stdout, `          fix: ${c.fix}`);
            }
        }
        return ok ? 0 : 1;
      }
      case 'install': {
        const name = args.positionals[0];
        if (!name) throw new PollyError('bad_input', `polly hosts install: name the host. ${USAGE}`);
        const [host] = selectHosts(config, name);
        const ctx = sshContext(config.workers);
        const before = await probeHost(host!, ctx, config.workers);
        if (!before.ok && !/polly|probe/.test(before.reason)) throw new PollyError('host_failed', `${before.reason}. Fix: ${before.fix}`, { details: { host: name } });
        io.stderr.write(`[polly] copying this Polly to ${name} …\n`);
        const result = await installOnHost(host!, ctx, before);
        const after = await probeHost(host!, ctx, config.workers);
        const checks = hostChecks(host!, after, config.workers, agentEnvFrom(io.env, config));
        const version = checks.find((c) => c.id.endsWith(':polly'));
        if (args.values.json) writeJson(io.stdout, { ...result, checks });
        else {
          writeLine(
            io.stdout,
            `installed Polly ${result.identity.version} (build ${result.identity.build.slice(0, 12)}) on ${name} in ${result.path} (${result.paths} paths, ${result.durationMs} ms)`,
          );
          if (version) writeLine(io.stdout, `  ${version.status === 'ok' ? 'ok     ' : 'PROBLEM'} ${version.id}: ${version.detail}`);
        }
        return version?.status === 'ok' ? 0 : 1;
      }
      default:
        throw new PollyError('bad_input', `polly hosts: unknown subcommand ${JSON.stringify(sub)}. ${USAGE}`);
    }
  },
};
