/**
 * `polly hosts install NAME`: put this exact Polly build on a host, so the host runs the same
 * version (a turn is refused otherwise, workers/hosts/host-probe.ts).
 *
 * What goes over: the package's own files (package.json's `files` and package.json) and its
 * production dependencies as installed here (each package directory of the `dependencies` closure,
 * found as node resolves them), as one tar stream over the shared SSH connection into
 * `<dir>/polly/<build>/` on the host (unpacked beside it first, then renamed into place), and
 * `<dir>/bin/polly`, a two-line shell wrapper that runs it with the host's node. The agent CLIs are
 * not copied: they are the host's own (polly doctor checks them). Native modules (lmdb's) are built
 * for this platform, so a host of another platform or CPU architecture is refused before anything
 * is sent.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { buildIdentity, type BuildIdentity } from '../../brain/core/build-identity.js';
import { PollyError } from '../../brain/core/errors.js';
import { packageRoot } from '../../brain/core/install-paths.js';
import { shellQuote } from '../../gate/git/git-grammar.js';
import type { ResolvedHost } from './host-config.js';
import type { HostProbeOutcome } from './host-probe.js';
import { hostPathWord, sshArgv, sshEnv, sshFailure, type SshContext } from './ssh.js';

/**
 * The paths (relative to the package root) that make up this installation without its dev
 * dependencies: package.json, its `files`, and every package directory of the production
 * dependency closure (`dependencies` and installed `optionalDependencies`, resolved upwards from
 * the depending package as node does). Sorted, no duplicates. @throws PollyError `not_built` when
 * a dependency is not installed.
 */
export function installationPaths(root: string = packageRoot()): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files?: string[]; dependencies?: Record<string, string> };
  const out = new Set<string>(['package.json', ...(pkg.files ?? []).filter((f) => existsSync(join(root, f)))]);
  const seen = new Set<string>();
  const queue: Array<{ name: string; from: string; optional: boolean }> = Object.keys(pkg.dependencies ?? {}).map((name) => ({ name, from: root, optional: false }));
  while (queue.length > 0) {
    const { name, from, optional } = queue.shift()!;
    let dir: string | null = null;
    for (let d = from; ; d = dirname(d)) {
      const candidate = join(d, 'node_modules', name);
      if (existsSync(join(candidate, 'package.json'))) {
        dir = candidate;
        break;
      }
      if (d === root || dirname(d) === d) break;
    }
    if (!dir) {
      if (optional) continue;
      throw new PollyError('not_built', `the dependency ${name} (needed by ${relative(root, from) || 'polly'}) is not installed in ${root}: run "npm ci" there first`);
    }
    if (seen.has(dir)) continue;
    seen.add(dir);
    out.add(relative(root, dir));
    const dep = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
    for (const n of Object.keys(dep.dependencies ?? {})) queue.push({ name: n, from: dir, optional: false });
    for (const n of Object.keys(dep.optionalDependencies ?? {})) queue.push({ name: n, from: dir, optional: true });
  }
  // A package inside another one's directory travels with it.
  const sorted = [...out].sort();
  return sorted.filter((p) => !sorted.some((q) => q !== p && p.startsWith(`${q}/`)));
}

/** What an install did. */
export interface HostInstallResult {
  host: string;
  identity: BuildIdentity;
  /** Where it went on the host (shell form, e.g. `"$HOME"/.polly-host/polly/<build>`). */
  path: string;
  paths: number;
  durationMs: number;
}

/**
 * Copy this build to `host` (see the module doc).
 * @param probe  the host's probe (platform and architecture are checked against this machine's).
 * @throws PollyError `host_failed` for an unreachable host, another platform, or a failed copy.
 */
export async function installOnHost(host: ResolvedHost, ctx: SshContext, probe: HostProbeOutcome | null): Promise<HostInstallResult> {
  const started = Date.now();
  if (probe?.ok && (probe.report.platform !== process.platform || probe.report.arch !== process.arch))
    throw new PollyError(
      'host_failed',
      `host ${host.name} is ${probe.report.platform}/${probe.report.arch}, this machine ${process.platform}/${process.arch}: this build's native modules would not load there. Install Polly on the host from its own checkout (npm ci && npm run build) and put it on the host's PATH.`,
    );
  const identity = buildIdentity();
  if (identity.build === 'unknown') throw new PollyError('not_built', 'this Polly has no build stamp (dist/.sources-sha256): run "npm run build" first');
  const root = packageRoot();
  const paths = installationPaths(root);
  const target = hostPathWord(host, 'polly', identity.build);
  const bin = hostPathWord(host, 'bin');
  const script = [
    'set -e',
    `D=${target}`,
    `B=${bin}`,
    'rm -rf "$D.tmp"',
    'mkdir -p "$D.tmp" "$B"',
    'tar -xzf - -C "$D.tmp"',
    'rm -rf "$D"',
    'mv "$D.tmp" "$D"',
    `printf '#!/bin/sh\\nexec node "%s/dist/brain/cli.js" "$@"\\n' "$D" > "$B/polly.tmp"`,
    'chmod 755 "$B/polly.tmp"',
    'mv "$B/polly.tmp" "$B/polly"',
  ].join('; ');
  const tar = spawn('tar', ['-czf', '-', '-C', root, '--', ...paths], { stdio: ['ignore', 'pipe', 'pipe'] });
  const ssh = spawn('ssh', sshArgv(host, ctx, `sh -c ${shellQuote(script)}`), { stdio: ['pipe', 'pipe', 'pipe'], env: sshEnv() });
  tar.stdout.pipe(ssh.stdin);
  let tarErr = '';
  let sshErr = '';
  tar.stderr.setEncoding('utf8').on('data', (d: string) => (tarErr += d));
  ssh.stderr.setEncoding('utf8').on('data', (d: string) => (sshErr = (sshErr + d).slice(-8000)));
  ssh.stdin.on('error', () => undefined);
  const [tarCode, sshCode] = await Promise.all([
    new Promise<number | null>((r) => {
      tar.on('close', r);
      tar.on('error', () => r(255));
    }),
    new Promise<number | null>((r) => {
      ssh.on('close', r);
      ssh.on('error', () => r(255));
    }),
  ]);
  if (tarCode !== 0) throw new PollyError('host_failed', `packing this Polly failed (tar exited ${tarCode}: ${tarErr.trim().split('\n').at(-1) ?? ''})`);
  if (sshCode !== 0)
    throw new PollyError('host_failed', `copying Polly to host ${host.name} failed (exit ${sshCode}: ${sshFailure({ code: sshCode, stderr: sshErr, timedOut: false })})`, {
      details: { host: host.name },
    });
  return { host: host.name, identity, path: target, paths: paths.length, durationMs: Date.now() - started };
}
