/**
 * The dashboard's security rules, pure: who may bind where, which Host and Origin headers a
 * request may carry, and the per-session capability (a random token exchanged for a cookie).
 *
 * The dashboard is an authority (it approves plans), so:
 * - it binds to loopback unless the user says `--allow-remote` ({@link checkBindHost});
 * - every request must name this server in its Host header, so a DNS-rebinding page
 *   (`http://attacker.example` resolving to 127.0.0.1) is refused ({@link hostAllowed});
 * - every state change is a POST whose Origin is this server (CSRF, {@link originAllowed});
 * - every request carries the session cookie, set only after the token printed by `polly ui` was
 *   presented once (`/?token=…`); the cookie is HttpOnly and SameSite=Strict, so another site's
 *   page can neither read it nor make the browser send it.
 * Sources: RFC 9110 §7.2 (Host), RFC 6454 §7 (Origin), RFC 6265bis §4.1.2.7 (SameSite=Strict).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { PollyError } from '../core/errors.js';

/** The session cookie's name. */
export const UI_COOKIE = 'polly_ui_session';

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
