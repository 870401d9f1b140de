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

  /** A placement whose probes answer only when the test says so; `clock` is its time. */
  const gated = (hosts: HostConfig[]) => {
    const clock = { ms: 0 };
    const calls: Array<{ host: string; answer: (ok: boolean) => void }> = [];
    const p = createPlacement({
      workers: { ...DEFAULT_CONFIG.workers, hosts, local_fallback: false },
      ssh: { sshConfig: null, controlDir: '/nonexistent' },
      now: () => clock.ms,
      probe: (h) =>
        new Promise<HostProbeOutcome>((resolve) =>
          calls.push({
            host: h.name,
            answer: (ok) =>
              resolve(
                ok
                  ? { ok: true, host: h.name, report: { ...report, time: Date.now() }, rttMs: 3, skewMs: 0 }
                  : { ok: false, host: h.name, rttMs: 3, reason: `cannot reach ${h.ssh}: Connection refused`, fix: 'check ssh' },
              ),
          }),
        ),
    });
    const answer = async (host: string, ok: boolean): Promise<void> => {
      const call = calls.find((c) => c.host === host && !(c as { done?: boolean }).done);
      if (!call) throw new Error(`no probe of ${host} is waiting`);
      (call as { done?: boolean }).done = true;
      call.answer(ok);
      await new Promise((r) => setTimeout(r, 0));
    };
    const settled = async <T>(promise: Promise<T>): Promise<T | 'pending'> => Promise.race([promise, new Promise<'pending'>((r) => setTimeout(() => r('pending'), 50))]);
    return { p, clock, calls, answer, settled };
  };

  it('a ready probe past half its 30 s is renewed in the background: the placement does not wait for it; past 30 s it does', async () => {
    const { p, clock, calls, answer, settled } = gated([two[0]!]);
    const first = p.place(implement(), new Map());
    expect(await settled(first)).toBe('pending'); // the first placement waits for the probe
    await answer('a', true);
    expect((await first).kind).toBe('host');
    clock.ms = 10_000;
    expect((await settled(p.place(implement(), new Map()))) as { kind: string }).toMatchObject({ kind: 'host' });
    expect(calls).toHaveLength(1);
    clock.ms = 16_000; // past half the TTL: answered from the cache at once, a renewal starts
    expect((await settled(p.place(implement(), new Map()))) as { kind: string }).toMatchObject({ kind: 'host' });
    expect(calls).toHaveLength(2);
    clock.ms = 17_000; // one renewal at a time
    await p.place(implement(), new Map());
    expect(calls).toHaveLength(2);
    await answer('a', false); // the renewal found the host down: the next placement knows it
    clock.ms = 18_000;
    expect((await p.place(implement(), new Map())).kind).toBe('refuse');
    clock.ms = 30_000; // the failed probe is trusted 5 s: probed afresh, and waited for
    const after = p.place(implement(), new Map());
    expect(await settled(after)).toBe('pending');
    await answer('a', true);
    expect((await after).kind).toBe('host');
    clock.ms = 61_000; // a ready probe older than 30 s is never used: waited for
    const stale = p.place(implement(), new Map());
    expect(await settled(stale)).toBe('pending');
    await answer('a', true);
    expect((await stale).kind).toBe('host');
  });

  it('a renewal that answers after forget() (the host was lost) is not kept: the next placement probes afresh', async () => {
    const { p, clock, calls, answer, settled } = gated([two[0]!]);
    const first = p.place(implement(), new Map());
    await answer('a', true);
    await first;
    clock.ms = 20_000;
    await p.place(implement(), new Map()); // starts a renewal
    expect(calls).toHaveLength(2);
    p.forget('a');
    await answer('a', true); // the renewal started before the loss
    const next = p.place(implement(), new Map());
    expect(await settled(next)).toBe('pending');
    expect(calls).toHaveLength(3);
    await answer('a', true);
    expect((await next).kind).toBe('host');
  });

  it('the first host in order that is ready and has room is taken without waiting for the other hosts’ probes', async () => {
    const { p, answer, settled } = gated(two);
    const placed = p.place(implement(), new Map());
    await answer('a', true);
    expect((await settled(placed)) as { kind: string; host: { name: string } }).toMatchObject({ kind: 'host', host: { name: 'a' } });
    // a full: b's answer is needed, and b down makes it a wait for a's slot
    const waiting = p.place(implement(), new Map([['a', 2]]));
    expect(await settled(waiting)).toBe('pending');
    await answer('b', false);
    expect((await waiting).kind).toBe('wait');
  });
});
