/**
 * The dashboard's security rules, pure: who may bind where, which Host and Origin headers a
 * request may carry, and the per-session capability (a random token exchanged for a cookie).
 *
 * The dashboard is an authority (it approves plans), so:
 * - it binds to loopback unless the user says `--allow-remote` ({@link checkBindHost});
 * - every request must name this server in its Host header, so a DNS-rebinding page
 *   (`http://attacker.example` resolving to 127.0.0.1) is refused ({@link hostAllowed});
 * - every state change is a POST whose Origin is this server (CSRF, {@link originAllowed});
 * - a session is bound to this server ({@link createSessionBook}), or to the next one on the same
 *   repository and port when it is handed over (hashes only, {@link KeptSession}): the login token `polly ui`
 *   prints works once, and exchanges for a session that has its own secret root path
 *   (`/s/<secret>/`, every page lives below it) and a cookie scoped to that path (HttpOnly,
 *   SameSite=Strict). Cookies are not isolated by port (RFC 6265 §8.5): a server on another
 *   loopback port receives every cookie of 127.0.0.1, but a browser sends this one only to URLs
 *   below the secret root, which the other server cannot know (pages send no Referer to another
 *   origin: `Referrer-Policy: same-origin`). A request needs both the root and the cookie, so
 *   neither a replayed cookie nor a URL from the history opens the session alone. Sessions end
 *   {@link SESSION_TTL_MS} after sign-in;
 * - the cookie is HttpOnly and SameSite=Strict, so another site's page can neither read it nor
 *   make the browser send it.
 * Sources: RFC 9110 §7.2 (Host), RFC 6454 §7 (Origin), RFC 6265 §8.5 (cookies ignore the port),
 * RFC 6265bis §4.1.2.7 (SameSite=Strict), §5.1.4 (Path matching).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { PollyError } from '../core/errors.js';

/** The session cookie's name. */
export const UI_COOKIE = 'polly_ui_session';

/** How long a dashboard session lasts after its sign-in, ms (12 h). */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** One signed-in browser: the secret root its pages live under and the cookie it must send. */
export interface UiSession {
  /** The session's secret root path, `/s/<secret>/`. */
  root: string;
  /** The value of the {@link UI_COOKIE} cookie the browser must send below `root`. */
  cookie: string;
  /** When it ends, ms since the epoch. */
  expiresAt: number;
}

/** What {@link SessionBook.check} found for a request's root and cookie. */
export type SessionCheck = { ok: true; session: UiSession } | { ok: false; why: 'unknown' | 'expired' };

/**
 * A session as it may be kept on disk ({@link SessionBook.kept}): the SHA-256 (hex) of its root
 * secret and of its cookie, never the values, so the file opens no session.
 */
export interface KeptSession {
  secretHash: string;
  cookieHash: string;
  /** When it ends, ms since the epoch. */
  expiresAt: number;
}

/**
 * The login tokens and sessions of one dashboard server. Tokens live in memory only; sessions can
 * be handed over to the next server ({@link SessionBook.kept}, `createSessionBook`'s `kept`), so a
 * restart need not sign everyone out.
 */
export interface SessionBook {
  /** A login token good for one sign-in: a fresh one, or `given` (for tests that must know it in advance). */
  issueToken(given?: string): string;
  /** Exchange a login token for a new session; `used` for a token already exchanged, `null` for one never issued. */
  redeem(token: string): UiSession | 'used' | null;
  /** The session whose root secret is `secret` when `cookie` is its cookie and it has not ended. */
  check(secret: string, cookie: string | undefined): SessionCheck;
  /** The sessions that have not ended, as hashes (what a restarted server may take over). */
  kept(): KeptSession[];
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The sessions of one dashboard server (see the module doc for why a session is a root path and a
 * cookie). Tokens and secrets are {@link createSecret}s; a session is found by its root secret's
 * SHA-256 and its cookie compared by hash in constant time.
 * @param now     the clock, ms since the epoch (tests move it).
 * @param ttlMs   how long a session lasts (default {@link SESSION_TTL_MS}).
 * @param kept    sessions a previous server handed over ({@link SessionBook.kept}); ended ones are dropped.
 */
export function createSessionBook(now: () => number = Date.now, ttlMs: number = SESSION_TTL_MS, kept: readonly KeptSession[] = []): SessionBook {
  const open = new Set<string>();
  const used = new Set<string>();
  const sessions = new Map<string, { cookieHash: string; expiresAt: number }>();
  for (const k of kept) if (now() < k.expiresAt) sessions.set(k.secretHash, { cookieHash: k.cookieHash, expiresAt: k.expiresAt });
  const find = (set: Iterable<string>, given: string) => [...set].find((t) => secretsEqual(given, t));
  return {
    issueToken(given) {
      const token = given ?? createSecret();
      open.add(token);
      return token;
    },
    redeem(token) {
      const t = find(open, token);
      if (t === undefined) return find(used, token) === undefined ? null : 'used';
      open.delete(t);
      used.add(t);
      const secret = createSecret();
      const session: UiSession = { root: `/s/${secret}/`, cookie: createSecret(), expiresAt: now() + ttlMs };
      sessions.set(sha256(secret), { cookieHash: sha256(session.cookie), expiresAt: session.expiresAt });
      return session;
    },
    check(secret, cookie) {
      const key = sha256(secret);
      const found = sessions.get(key);
      if (!found || cookie === undefined || !secretsEqual(sha256(cookie), found.cookieHash)) return { ok: false, why: 'unknown' };
      if (now() >= found.expiresAt) {
        sessions.delete(key);
        return { ok: false, why: 'expired' };
      }
      return { ok: true, session: { root: `/s/${secret}/`, cookie, expiresAt: found.expiresAt } };
    },
    kept() {
      return [...sessions].filter(([, v]) => now() < v.expiresAt).map(([secretHash, v]) => ({ secretHash, ...v }));
    },
  };
}

/** True for a loopback address or name: `localhost`, `127.0.0.0/8`, `::1` (bracketed or not). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/**
 * Check the address `polly ui` is asked to bind to.
 * @throws PollyError `bad_input` for a non-loopback host without `allowRemote`, naming the host
 *   and why (anyone who can reach it gets a page that approves plans, protected only by the token
 *   over plain HTTP).
 */
export function checkBindHost(host: string, allowRemote: boolean): void {
  if (isLoopbackHost(host) || allowRemote) return;
  throw new PollyError(
    'bad_input',
    `polly ui: refusing to listen on ${JSON.stringify(host)}, which is not a loopback address: the dashboard approves plans, and on another interface anyone who can reach it could try, with the token travelling over plain HTTP. Use --host 127.0.0.1 (the default) and an SSH tunnel, or pass --allow-remote if you accept that.`,
    { details: { host } },
  );
}

/** A fresh random secret: 32 bytes, base64url (43 characters). */
export function createSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Compare two secrets in constant time (false when either is missing or the lengths differ). */
export function secretsEqual(given: string | null | undefined, expected: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The Host header values this server answers to: `<name>:<port>` for the loopback names
 * (`localhost`, `127.0.0.1`, `[::1]`) and for the bind host itself.
 */
export function allowedHosts(bindHost: string, port: number): Set<string> {
  const names = new Set(['localhost', '127.0.0.1', '[::1]']);
  names.add(isIP(bindHost) === 6 ? `[${bindHost}]` : bindHost.toLowerCase());
  return new Set([...names].map((n) => `${n}:${port}`));
}

/** True when the request's Host header (`host[:port]`) is one of `allowed`. */
export function hostAllowed(hostHeader: string | undefined, allowed: ReadonlySet<string>): boolean {
  return !!hostHeader && allowed.has(hostHeader.toLowerCase());
}

/**
 * True when a state-changing request's Origin is this server (`http://<allowed host>`). A missing
 * Origin is refused: browsers send it on every POST (Fetch standard, "append a request `Origin`
 * header"), so only a non-browser client omits it, and that client can send the right one.
 */
export function originAllowed(origin: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (!origin) return false;
  const m = /^http:\/\/([^/]+)$/i.exec(origin);
  return !!m && allowed.has(m[1]!.toLowerCase());
}
