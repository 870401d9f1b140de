/**
 * Redaction: take secrets out of text before it is logged, journaled or printed. One module for
 * the worker runner (agent output and env values), the forge (GitHub tokens in API errors) and the
 * gate's decision log, so they cannot drift apart. Pure.
 *
 * Two kinds of secret:
 * - known values (an API key from the env, the forge's token): replaced verbatim wherever they
 *   occur, if at least {@link MIN_SECRET_LENGTH} characters long (shorter values would blank out
 *   ordinary words);
 * - secret-shaped text: token formats with a fixed prefix — GitHub `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_`
 *   and `github_pat_` (https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/),
 *   `sk-…` API keys, Slack `xox[abp]-…`, AWS access key ids `AKIA…` — and the value after a
 *   credential's name (`Authorization: token …`, `api_key=…`, `"password": "…"`), keeping the
 *   name and any auth scheme word.
 */

/** Values shorter than this are never redacted verbatim. */
export const MIN_SECRET_LENGTH = 4;

const TOKEN_SHAPES = /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{16,}|xox[abp]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b/g;
const CREDENTIAL_VALUE = /((?:authorization|x-api-key|api[_-]?key|token|password|secret)["']?\s*[:=]\s*["']?(?:(?:bearer|token|basic)\s+)?)[^\s"']+/gi;

export interface RedactOptions {
  /** Known secret values to replace verbatim (null/undefined and values under 4 characters are skipped). */
  values?: ReadonlyArray<string | null | undefined>;
  /** Also replace secret-shaped text (token formats, credential values). Default true. */
  shapes?: boolean;
  /** What a secret becomes. Default `[redacted]`. */
  marker?: string;
}

/** `text` with its secrets replaced by the marker (see the module doc). */
export function redactSecrets(text: string, options: RedactOptions = {}): string {
  const marker = options.marker ?? '[redacted]';
  let out = text;
  for (const v of options.values ?? []) if (v && v.length >= MIN_SECRET_LENGTH) out = out.split(v).join(marker);
  if (options.shapes ?? true) {
    out = out.replace(TOKEN_SHAPES, marker);
    out = out.replace(CREDENTIAL_VALUE, (_m, name: string) => `${name}${marker}`);
  }
  return out;
}
