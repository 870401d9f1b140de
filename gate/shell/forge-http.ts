/**
 * HTTP clients (`curl`, `wget`, HTTPie's `http`/`https`, `xh`) writing to a forge's API: a readable
 * denial for the worker (the sandbox's network allowlist is what really stops it). A forge API URL
 * is one on `api.github.com` or `uploads.github.com`, a GitHub Enterprise Cloud `api.<name>.ghe.com`,
 * a GitHub Enterprise Server path (`/api/v3/…`, `/api/graphql`, docs.github.com/enterprise-server
 * REST "base URL"), or a host listed in the context's `forgeApiHosts`. Methods: curl's
 * `-X/--request`, data options implying POST/PUT and `-G/--get` (curl.se/docs/manpage.html), wget's
 * `--method`, `--post-*`, `--body-*` (GNU Wget manual), HTTPie's `METHOD URL` and request items
 * implying POST (httpie.io/docs/cli/request-items). Pure.
 */
import type { GateContext } from '../types.js';

const HTTPIE = new Set(['http', 'https', 'xh', 'xhs', 'httpie']);
/** curl short options that take a value (curl.se/docs/manpage.html). */
const CURL_VALUE_SHORT = new Set('dFTXHoubcrmwxEKCYyztUQPDeA'.split(''));

/** The host and path of a URL-like argument (scheme optional, as curl and HTTPie accept), or null. */
function hostAndPath(arg: string): { host: string; path: string } | null {
  const m = /^(?:https?:\/\/)?(?:[^/@\s]*@)?([A-Za-z0-9.-]+\.[A-Za-z]{2,}|localhost|\[[0-9a-f:]+\]|\d+\.\d+\.\d+\.\d+)(?::\d+)?(\/[^\s?#]*)?/.exec(arg);
  return m ? { host: (m[1] as string).toLowerCase(), path: m[2] ?? '/' } : null;
}

/**
 * The API host names of a configured GitHub Enterprise base URL (`forge.github.base_url`, e.g.
 * `https://github.corp.example/api/v3` → `['github.corp.example']`), for
 * {@link GateContext.forgeApiHosts}. An empty list for null or a URL that does not parse.
 */
export function forgeApiHostsFromBaseUrl(baseUrl: string | null | undefined): string[] {
  if (!baseUrl) return [];
  try {
    return [new URL(baseUrl).hostname.toLowerCase()];
  } catch {
    return [];
  }
}

/** True when `url` addresses a forge's API. */
export function isForgeApiUrl(url: string, context: Pick<GateContext, 'forgeApiHosts'>): boolean {
  const u = hostAndPath(url);
  if (u === null) return false;
  if (u.host === 'api.github.com' || u.host === 'uploads.github.com' || /^api\.[a-z0-9-]+\.ghe\.com$/.test(u.host)) return true;
  if (/^\/api\/(v3\/|graphql$)/.test(u.path)) return true;
  return (context.forgeApiHosts ?? []).some((h) => h.toLowerCase() === u.host);
}

/** The HTTP method an invocation of `base` sends, upper-case (`GET` when it only reads). */
export function httpMethod(base: string, args: string[]): string {
  let method: string | null = null;
  let data: string | null = null;
  let get = false;
  if (base === 'curl') {
    for (let i = 0; i < args.length; i++) {
      const x = args[i] as string;
      if (x.startsWith('--')) {
        const [name, inline] = x.includes('=') ? [x.slice(0, x.indexOf('=')), x.slice(x.indexOf('=') + 1)] : [x, null];
        if (name === '--request') method = (inline ?? args[++i] ?? '').toUpperCase();
        else if (/^--(data|json|form)/.test(name)) data ??= 'POST';
        else if (name === '--upload-file') data = 'PUT';
        else if (name === '--get') get = true;
        else if (name === '--head') method ??= 'HEAD';
        continue;
      }
      if (!x.startsWith('-') || x.length < 2) continue;
      for (let j = 1; j < x.length; j++) {
        const c = x[j] as string;
        if (c === 'G') get = true;
        if (c === 'I') method ??= 'HEAD';
        if (!CURL_VALUE_SHORT.has(c)) continue;
        const value = x.slice(j + 1) !== '' ? x.slice(j + 1) : (args[++i] ?? '');
        if (c === 'X') method = value.toUpperCase();
        if (c === 'd' || c === 'F') data ??= 'POST';
        if (c === 'T') data = 'PUT';
        break;
      }
    }
    return method ?? (get ? 'GET' : (data ?? 'GET'));
  }
  if (base === 'wget') {
    for (let i = 0; i < args.length; i++) {
      const x = args[i] as string;
      if (x === '--method') method = (args[++i] ?? '').toUpperCase();
      else if (x.startsWith('--method=')) method = x.slice(9).toUpperCase();
      else if (/^--(post|body)-(data|file)/.test(x)) data ??= 'POST';
    }
    return method ?? data ?? 'GET';
  }
  if (HTTPIE.has(base)) {
    const words = args.filter((x) => !x.startsWith('-'));
    if (words.length >= 2 && /^[A-Z]+$/.test(words[0] as string)) return words[0] as string;
    if (args.some((x) => x === '-f' || x === '--form' || x.startsWith('--raw'))) return 'POST';
    // request items after the URL: `field=value`, `field:=json`, `field@file` send a body (`==` is a query, `:` a header)
    if (words.slice(1).some((w) => /^[^=:@]+(:=|=|@)/.test(w) && !/^[^=:@]+==/.test(w))) return 'POST';
    return 'GET';
  }
  return 'GET';
}

/** The forge API URL an HTTP client call writes to, or null when it only reads or addresses no forge. */
export function forgeWriteUrl(base: string, args: string[], context: Pick<GateContext, 'forgeApiHosts'>): { url: string; method: string } | null {
  const url = args.find((x) => !x.startsWith('-') && isForgeApiUrl(x, context));
  if (url === undefined) return null;
  const method = httpMethod(base, args);
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS' ? null : { url, method };
}
