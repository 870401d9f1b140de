/**
 * The checks' network, attacked: with `acceptance.network: true` (and `worktrees.setup_network:
 * true`, the same sandbox) a worker's test used to run in the host's network namespace, so it
 * reached every service on the host's loopback: `polly ui` behind its token, the webhook receiver,
 * a local Postgres trusting local connections, the scripted model server, and abstract unix
 * sockets (scoped to the network namespace). Now such a command gets its own network namespace
 * behind pasta (workers/sandbox/outbound-network.ts): outbound only.
 *
 * Ground truth: listeners in this test process count their connections. The hostile check is a
 * script in the worktree, run by Polly's own acceptance runner in the checks' sandbox, as
 * `run_acceptance` runs it (`commandSandbox` + `runAcceptance`). It tries the host's loopback by
 * address and by name, the gateway address (pasta's default maps it to the host's loopback), an
 * abstract unix socket, and, as the control that the network is really on, a listener on this
 * machine's own non-loopback address.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAcceptance } from '../../workers/acceptance.js';
import { commandSandbox } from '../../workers/sandbox/command-sandbox.js';
import { OUTBOUND_ADDRESS } from '../../workers/sandbox/outbound-network.js';
import { createTestRepo } from '../helpers/git-repo.js';

/** This machine's first non-loopback IPv4 address, or null (then the control cannot run here). */
function outsideAddress(): string | null {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return null;
}

interface Counted {
  server: Server;
  hits: number;
  sockets: Set<Socket>;
}

function counted(listen: (s: Server, done: () => void) => void): Promise<Counted> {
  return new Promise((resolve, reject) => {
    const c: Counted = { server: createServer(), hits: 0, sockets: new Set() };
    c.server.on('connection', (s) => {
      c.hits++;
      c.sockets.add(s);
      s.on('close', () => c.sockets.delete(s));
      s.end('HELLO\n');
    });
    c.server.once('error', reject);
    listen(c.server, () => resolve(c));
  });
}

/** The worker's "test": tries each target, prints `name:connected` or `name:blocked (code)` per line, exits 0. */
const PROBE = `
import { connect } from 'node:net';
const targets = JSON.parse(process.argv[2]);
for (const [name, opts] of Object.entries(targets)) {
  const said = await new Promise((resolve) => {
    const s = connect({ ...opts, timeout: 3000 });
    s.once('data', (d) => { resolve('connected ' + String(d).trim()); s.destroy(); });
    s.once('timeout', () => { resolve('blocked (timeout)'); s.destroy(); });
    s.once('error', (e) => resolve('blocked (' + e.code + ')'));
  });
  console.log(name + ':' + said);
}
`;

describe("a check with network on reaches the outside, never the host's loopback", () => {
  const outside = outsideAddress();
  let loopback: Counted;
  let abstract: Counted;
  let external: Counted | null = null;
  const abstractName = `\0polly-check-network-${process.pid}`;
  let repo: string;
  let worktree: string;

  beforeAll(async () => {
    loopback = await counted((s, done) => s.listen(0, '127.0.0.1', done));
    abstract = await counted((s, done) => s.listen(abstractName, done));
    if (outside) external = await counted((s, done) => s.listen(0, outside, done));
    repo = createTestRepo().dir;
    worktree = join(repo, '.worktrees', 't1');
    mkdirSync(worktree, { recursive: true });
    writeFileSync(join(worktree, 'probe.mjs'), PROBE);
  });

  afterAll(() => {
    for (const c of [loopback, abstract, external]) {
      if (!c) continue;
      for (const s of c.sockets) s.destroy();
      c.server.close();
    }
  });

  it('connects to a listener on the non-loopback address and to nothing on the host loopback (address, name, gateway, abstract socket)', async () => {
    const port = (loopback.server.address() as { port: number }).port;
    const targets: Record<string, object> = {
      loopback: { host: '127.0.0.1', port },
      localhost: { host: 'localhost', port },
      gateway: { host: OUTBOUND_ADDRESS.gateway, port },
      abstract: { path: abstractName },
    };
    if (external && outside) targets.outside = { host: outside, port: (external.server.address() as { port: number }).port };
    const box = await commandSandbox({ repoRoot: repo, worktree, network: true, allowUnconfined: false, stateDir: join(repo, '..', 'cmd-state') });
    expect(box.sandbox?.spec.network.mode).toBe('outbound');
    const out = await runAcceptance({ cwd: worktree, commands: [`node probe.mjs '${JSON.stringify(targets)}'`], timeoutSeconds: 60, env: box.env, sandbox: box.sandbox });
    const lines = out.results[0]!.output.trim().split('\n');
    expect(out.green, out.results[0]!.output).toBe(true);
    // Ground truth: the loopback and abstract listeners saw nobody.
    expect(loopback.hits).toBe(0);
    expect(abstract.hits).toBe(0);
    for (const name of ['loopback', 'localhost', 'gateway', 'abstract']) expect(lines.find((l) => l.startsWith(`${name}:`))).toMatch(/:blocked/);
    if (!external) {
      // No non-loopback IPv4 address on this machine: the control has nothing to reach.
      console.warn('check-network: no non-loopback IPv4 address here; the outbound control did not run');
      return;
    }
    expect(lines).toContain('outside:connected HELLO');
    expect(external.hits).toBe(1);
  });
});
