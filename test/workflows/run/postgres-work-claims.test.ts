// The shared work claims on a real PostgreSQL server (a temporary cluster, test/helpers/
// postgres-server.ts): of several Pollys claiming one key at once exactly one is granted; a holder
// renews and settles only while it holds; a lapsed lease is taken over (and the old holder can no
// longer renew or settle); settled work is claimed anew only by work approved after it ended.
// Without Debian's postgresql it is skipped and listed (a failure under CI=true).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresWorkClaims } from '../../../workflows/run/postgres-work-claims.js';
import { repoIdentity, workKey, type WorkClaims } from '../../../workflows/run/work-claims.js';
import { startPostgres, type PostgresServer } from '../../helpers/postgres-server.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

const PG = hasSystemPackage('postgresql', import.meta.url);

let server: PostgresServer;
const opened: WorkClaims[] = [];
let schemas = 0;

beforeAll(async () => {
  if (PG) server = await startPostgres();
}, 120_000);

afterAll(async () => {
  for (const c of opened.splice(0)) await c.close().catch(() => undefined);
  await server?.stop();
}, 30_000);

/** `n` independent claim stores (each its own connection pool, as separate Polly processes) on one fresh schema. */
function pollys(n: number): WorkClaims[] {
  const schema = `wc${process.pid}_${schemas++}`;
  const made = Array.from({ length: n }, () => createPostgresWorkClaims({ connectionString: server.url, schema }));
  opened.push(...made);
  return made;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const past = '2000-01-01T00:00:00.000Z';

describe('work keys', () => {
  it('two clones of one origin, however spelled, give one key; another plan or task gives another', () => {
    expect(repoIdentity('git@github.com:Acme/app.git')).toBe('github.com/Acme/app');
    expect(repoIdentity('https://GitHub.com/Acme/app')).toBe('github.com/Acme/app');
    expect(repoIdentity('ssh://git@github.com:22/Acme/app.git/')).toBe('github.com/Acme/app');
    expect(repoIdentity('/srv/git/app.git')).toBe('/srv/git/app');
    const tasks = [{ key: 't1', title: 'Add max()', acceptance: { commands: ['x'], criteria: [] } }];
    const reordered = [{ acceptance: { criteria: [], commands: ['x'] }, title: 'Add max()', key: 't1' }];
    expect(workKey('github.com/Acme/app', tasks, 't1')).toBe(workKey('github.com/Acme/app', reordered, 't1'));
    expect(workKey('github.com/Acme/app', tasks, 't1')).not.toBe(workKey('github.com/Acme/other', tasks, 't1'));
    expect(workKey('github.com/Acme/app', tasks, 't1')).not.toBe(workKey('github.com/Acme/app', [{ ...tasks[0], title: 'Add min()' }], 't1'));
  });
});

describe.skipIf(!PG)('Postgres work claims', () => {
  it('of eight Pollys claiming each of 20 keys at once, exactly one is granted each key', async () => {
    const stores = pollys(8);
    for (let k = 0; k < 20; k++) {
      const results = await Promise.all(stores.map((s, i) => s.claim(`key-${k}`, `polly-${i}`, `host:/clone-${i}`, 60, past)));
      const granted = results.filter((r) => r.granted);
      expect(granted, `key-${k}`).toHaveLength(1);
      // Every loser is told who holds it.
      const holder = granted[0]!.claim.owner;
      for (const r of results) expect(r.claim.owner).toBe(holder);
    }
  });

  it('the holder renews and settles; another Polly can do neither, and follows the settled outcome', async () => {
    const [a, b] = pollys(2);
    expect((await a!.claim('k', 'A', 'host-a:/repo', 60, past)).granted).toBe(true);
    expect((await a!.claim('k', 'A', 'host-a:/repo', 60, past)).granted).toBe(true); // a renewal
    const seen = await b!.claim('k', 'B', 'host-b:/repo', 60, past);
    expect(seen.granted).toBe(false);
    expect(seen.claim.label).toBe('host-a:/repo');
    expect(await b!.renew('k', 'B', 60)).toBe(false);
    expect(await b!.settle('k', 'B', 'ready', null)).toBe(false);
    expect(await a!.renew('k', 'A', 60)).toBe(true);
    expect(await a!.settle('k', 'A', 'ready', 'https://forge/pr/1')).toBe(true);
    expect(await a!.settle('k', 'A', 'failed', null)).toBe(false); // once
    const settled = await b!.get('k');
    expect(settled).toMatchObject({ owner: 'A', outcome: 'ready', detail: 'https://forge/pr/1', generation: 1, takeovers: 0 });
    expect(settled!.settledAt).not.toBeNull();
    // Approved before it ended: the same work, followed, not run again.
    expect((await b!.claim('k', 'B', 'host-b:/repo', 60, past)).granted).toBe(false);
    // Approved after it ended: new work.
    const again = await b!.claim('k', 'B', 'host-b:/repo', 60, new Date(Date.now() + 60_000).toISOString());
    expect(again.granted).toBe(true);
    expect(again.claim).toMatchObject({ owner: 'B', generation: 2, settledAt: null, outcome: null });
  });

  it('a lapsed lease is taken over by another Polly, and the old holder has lost it', async () => {
    const [a, b] = pollys(2);
    expect((await a!.claim('k', 'A', 'host-a:/repo', 1, past)).granted).toBe(true);
    expect((await b!.claim('k', 'B', 'host-b:/repo', 60, past)).granted).toBe(false);
    await sleep(1300);
    const taken = await b!.claim('k', 'B', 'host-b:/repo', 60, past);
    expect(taken.granted).toBe(true);
    expect(taken.claim.takeovers).toBe(1);
    expect(await a!.renew('k', 'A', 60)).toBe(false);
    expect(await a!.settle('k', 'A', 'ready', null)).toBe(false);
    expect((await a!.claim('k', 'A', 'host-a:/repo', 60, past)).granted).toBe(false);
  });
});
