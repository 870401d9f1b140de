/**
 * The dashboard's session book on its own, without a browser (brain/ui/ui-security.ts): a login
 * token opens one session once; a request is let in only with the session's root secret AND its
 * own cookie, until the session ends. The Chromium suite (test/brain/ui/ui-dashboard.test.ts) drives
 * the same rules through the server, but skips where Chromium is missing; this one always runs.
 */
import { describe, expect, it } from 'vitest';
import { createSessionBook, createSecret, SESSION_TTL_MS, secretsEqual } from '../../../brain/ui/ui-security.js';

const secretOf = (root: string) => /^\/s\/([^/]+)\/$/.exec(root)![1]!;

describe('the dashboard session book', () => {
  it('lets in the session root with its own cookie, and nothing else: no cookie, a forged one, another session’s, or the cookie under another root', () => {
    const book = createSessionBook();
    const one = book.redeem(book.issueToken())!;
    const two = book.redeem(book.issueToken())!;
    expect(one).not.toBe('used');
    expect(two).not.toBe('used');
    if (one === 'used' || two === 'used') return;
    expect(book.check(secretOf(one.root), one.cookie)).toEqual({ ok: true, session: one });
    expect(book.check(secretOf(two.root), two.cookie)).toEqual({ ok: true, session: two });
    for (const cookie of [undefined, '', createSecret(), 'A'.repeat(43), two.cookie, `${one.cookie}x`, one.cookie.slice(1)]) {
      expect(book.check(secretOf(one.root), cookie), `cookie ${JSON.stringify(cookie)}`).toEqual({ ok: false, why: 'unknown' });
    }
    // The right cookie under a root that is not its session's, or no session at all.
    expect(book.check(secretOf(two.root), one.cookie)).toEqual({ ok: false, why: 'unknown' });
    expect(book.check(createSecret(), one.cookie)).toEqual({ ok: false, why: 'unknown' });
  });

  it('a token opens one session once; a session ends after its time, then its cookie is refused', () => {
    let now = 1_000_000;
    const book = createSessionBook(() => now);
    const token = book.issueToken();
    const session = book.redeem(token);
    expect(session).not.toBeNull();
    expect(book.redeem(token)).toBe('used');
    expect(book.redeem(createSecret())).toBeNull();
    if (session === null || session === 'used') return;
    now += SESSION_TTL_MS - 1;
    expect(book.check(secretOf(session.root), session.cookie).ok).toBe(true);
    now += 1;
    expect(book.check(secretOf(session.root), session.cookie)).toEqual({ ok: false, why: 'expired' });
    expect(book.check(secretOf(session.root), session.cookie)).toEqual({ ok: false, why: 'unknown' });
  });

  it('hands its sessions to the next book as hashes: the next one lets them in with their root and cookie, not ended ones, and the handover opens nothing alone', () => {
    let now = 1_000_000;
    const first = createSessionBook(() => now);
    const a = first.redeem(first.issueToken());
    const b = first.redeem(first.issueToken());
    if (a === null || a === 'used' || b === null || b === 'used') throw new Error('no session');
    now += SESSION_TTL_MS / 2;
    const c = first.redeem(first.issueToken());
    if (c === null || c === 'used') throw new Error('no session');
    const kept = first.kept();
    expect(kept).toHaveLength(3);
    // Hashes only: neither the root secret nor the cookie is in what is handed over.
    const text = JSON.stringify(kept);
    for (const x of [a, b, c]) {
      expect(text).not.toContain(secretOf(x.root));
      expect(text).not.toContain(x.cookie);
    }
    // Past the first two sessions' end: the next book takes only the third.
    now += SESSION_TTL_MS / 2;
    const next = createSessionBook(() => now, SESSION_TTL_MS, kept);
    expect(next.check(secretOf(a.root), a.cookie)).toEqual({ ok: false, why: 'unknown' });
    expect(next.check(secretOf(c.root), c.cookie)).toEqual({ ok: true, session: c });
    expect(next.check(secretOf(c.root), a.cookie)).toEqual({ ok: false, why: 'unknown' });
    expect(next.check(kept[2]!.secretHash, kept[2]!.cookieHash)).toEqual({ ok: false, why: 'unknown' });
    expect(next.kept()).toEqual([kept[2]]);
  });

  it('secrets compare equal only when present and byte for byte the same', () => {
    const s = createSecret();
    expect(secretsEqual(s, s)).toBe(true);
    expect(secretsEqual(undefined, s)).toBe(false);
    expect(secretsEqual(null, s)).toBe(false);
    expect(secretsEqual('', s)).toBe(false);
    expect(secretsEqual(`${s.slice(0, -1)}${s.endsWith('A') ? 'B' : 'A'}`, s)).toBe(false);
  });
});
