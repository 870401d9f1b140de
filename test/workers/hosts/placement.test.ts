// The placement port (workers/hosts/placement.ts): where an implement turn runs with workers.hosts.
// A ready host's probe outcome is this machine's own probe report (collectHostProbe, what `polly
// host probe` prints on a host); a host that is down is the outcome probeHost gives an unreachable
// one. What is decided: capacity, harness, the task's own host first, waiting when every ready host
// is full, and never this machine unless workers.local_fallback says so.
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import type { HostConfig } from '../../../workers/hosts/host-config.js';
import { collectHostProbe, type HostProbeOutcome, type HostProbeReport } from '../../../workers/hosts/host-probe.js';
import { createPlacement, type PlacementRequest } from '../../../workers/hosts/placement.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

const implement = (over: Partial<PlacementRequest> = {}): PlacementRequest => ({ taskId: 't1', harness: 'claude-code', purpose: 'implement', readOnly: false, ...over });

describe.skipIf(!hasSystemPackage('bubblewrap', import.meta.url))('placement over workers.hosts', () => {
  let report: HostProbeReport;
  beforeAll(() => {
    const w = DEFAULT_CONFIG.workers;
    report = collectHostProbe({ 'claude-code': w['claude-code'].command, codex: w.codex.command, pi: w.pi.command }, '.polly-host');
  });

  /** A placement over `hosts`; the names in `down` are unreachable; counts the probes per host. */
  const placement = (hosts: HostConfig[], opts: { down?: string[]; fallback?: boolean } = {}) => {
    const probes = new Map<string, number>();
    const p = createPlacement({
      workers: { ...DEFAULT_CONFIG.workers, hosts, local_fallback: opts.fallback ?? false },
      ssh: { sshConfig: null, controlDir: '/nonexistent' },
      probe: async (h): Promise<HostProbeOutcome> => {
        probes.set(h.name, (probes.get(h.name) ?? 0) + 1);
        if (opts.down?.includes(h.name))
          return { ok: false, host: h.name, rttMs: 3, reason: `cannot reach ${h.ssh}: Connection refused`, fix: `check that "ssh ${h.ssh} true" works` };
        return { ok: true, host: h.name, report: { ...report, time: Date.now() }, rttMs: 3, skewMs: 0 };
      },
    });
    return { p, probes };
  };
  const two: HostConfig[] = [
    { name: 'a', ssh: 'a@127.0.0.1', capacity: 2 },
    { name: 'b', ssh: 'b@127.0.0.1', capacity: 1 },
  ];

  it('no hosts configured: every turn runs here, nothing said', async () => {
    expect(await placement([]).p.place(implement(), new Map())).toEqual({ kind: 'local', note: null });
  });

  it('by load over capacity, config order on a tie; the task’s own host first; a full host is skipped', async () => {
    const { p } = placement(two);
    const host = async (load: Record<string, number>, over: Partial<PlacementRequest> = {}): Promise<string> => {
      const d = await p.place(implement(over), new Map(Object.entries(load)));
      return d.kind === 'host' ? d.host.name : d.kind;
    };
    expect(await host({})).toBe('a');
    expect(await host({ a: 1 })).toBe('b'); // a at 1/2, b at 0/1
    expect(await host({ a: 1, b: 1 })).toBe('a'); // b full
    expect(await host({}, { preferHost: 'b' })).toBe('b');
    expect(await host({ b: 1 }, { preferHost: 'b' })).toBe('a'); // its own host is full: another one
    expect(await host({ a: 2, b: 1 })).toBe('wait');
  });

  it('every ready host full: the turn waits, naming each host’s load; an avoided host counts as busy', async () => {
    const { p } = placement(two);
    const d = await p.place(
      implement(),
      new Map([
        ['a', 2],
        ['b', 1],
      ]),
    );
    expect(d).toEqual({ kind: 'wait', reason: expect.stringMatching(/a 2\/2, b 1\/1/) });
    expect(await p.place(implement(), new Map(), new Set(['a', 'b']))).toMatchObject({ kind: 'wait' });
    expect(await p.place(implement(), new Map(), new Set(['a']))).toMatchObject({ kind: 'host', host: { name: 'b' } });
  });

  it('a host that is down is passed over; none up: refused with each host’s problem and fix, never here unless local_fallback', async () => {
    expect(await placement(two, { down: ['a'] }).p.place(implement(), new Map())).toMatchObject({ kind: 'host', host: { name: 'b' } });
    const refused = await placement(two, { down: ['a', 'b'] }).p.place(implement(), new Map());
    expect(refused.kind).toBe('refuse');
    if (refused.kind !== 'refuse') return;
    expect(refused.reason).toMatch(/cannot reach a@127\.0\.0\.1.*fix: check that "ssh a@127\.0\.0\.1 true" works.*cannot reach b@127\.0\.0\.1/);
    expect(refused.reason).toMatch(/unless workers\.local_fallback is true/);
    // A host that is down may come back: waiting can help.
    expect(refused.permanent).toBe(false);
    const here = await placement(two, { down: ['a', 'b'], fallback: true }).p.place(implement(), new Map());
    expect(here).toEqual({ kind: 'local', note: expect.stringMatching(/no host can take it .*cannot reach.*workers\.local_fallback: true/) });
  });

  it('a harness no host offers is refused for good (or runs here with local_fallback); reviews run here', async () => {
    const hosts: HostConfig[] = [{ name: 'a', ssh: 'a@127.0.0.1', harnesses: ['codex'] }];
    const d = await placement(hosts).p.place(implement({ harness: 'pi' }), new Map());
    expect(d).toEqual({ kind: 'refuse', permanent: true, reason: expect.stringMatching(/no host in workers\.hosts offers pi \(a: codex\)\. Add pi to a host's harnesses/) });
    expect(await placement(hosts, { fallback: true }).p.place(implement({ harness: 'pi' }), new Map())).toMatchObject({ kind: 'local' });
    expect(await placement(hosts).p.place(implement({ harness: 'codex', purpose: 'review', readOnly: true }), new Map())).toMatchObject({
      kind: 'local',
      note: expect.stringMatching(/review turn runs on this machine/),
    });
  });

  it('probes are cached, and forget() makes the next placement probe the host afresh (after it was lost)', async () => {
    const { p, probes } = placement(two);
    await p.place(implement(), new Map());
    await p.place(implement(), new Map());
    expect(probes.get('a')).toBe(1);
    p.forget('a');
    await p.place(implement(), new Map());
    expect(probes.get('a')).toBe(2);
  });
});
