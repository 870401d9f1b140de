/**
 * The webhook sink: POST a notification as Slack-compatible JSON (`{text, blocks}`,
 * https://api.slack.com/messaging/webhooks) to `notifications.webhook_url`.
 *
 * Each attempt has its own timeout (`AbortSignal.timeout`); a network error, a timeout, a 429 or a
 * 5xx is retried after a short backoff (0.5 s, then 1 s); any other non-2xx is final. The URL is
 * a secret (a Slack webhook URL carries its token): messages name only its origin.
 */
import { webhookPayload, type Notification } from './notification.js';

/** A place notifications go (the webhook, the desktop, a test's recorder). */
export interface NotificationSink {
  /** `webhook`, `desktop:notify-send`, … (for messages and the journal). */
  name: string;
  /**
   * Deliver one notification. Never rejects: a failure is data, `reason` says what went wrong and
   * what to check (never the webhook's secret path).
   */
  send(n: Notification): Promise<SendResult>;
}

/** How one delivery went. */
export type SendResult = { ok: true } | { ok: false; reason: string };

export interface WebhookOptions {
  url: string;
  /** Per attempt, ms. */
  timeoutMs: number;
  /** Attempts in all (default 3). */
  attempts?: number;
  /** Backoff before attempt k+1 is `backoffMs * 2^(k-1)` (default 500). */
  backoffMs?: number;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
}

/** The origin of a URL (scheme, host, port): what messages may show of a webhook URL. */
export function urlOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(an invalid URL)';
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Create the webhook sink (see the module doc). */
export function createWebhookSink(options: WebhookOptions): NotificationSink {
  const attempts = Math.max(1, options.attempts ?? 3);
  const backoffMs = options.backoffMs ?? 500;
  const doFetch = options.fetch ?? fetch;
  const origin = urlOrigin(options.url);
  return {
    name: `webhook ${origin}`,
    async send(n) {
      const body = JSON.stringify(webhookPayload(n));
      let last = '';
      for (let k = 1; k <= attempts; k++) {
        try {
          const res = await doFetch(options.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
            signal: AbortSignal.timeout(options.timeoutMs),
          });
          await res.arrayBuffer().catch(() => undefined);
          if (res.ok) return { ok: true };
          last = `HTTP ${res.status}`;
          if (res.status !== 429 && res.status < 500) break;
        } catch (error) {
          const e = error as Error;
          last =
            e.name === 'TimeoutError'
              ? `no answer within ${options.timeoutMs} ms`
              : `${e.message}${(e.cause as Error | undefined)?.message ? ` (${(e.cause as Error).message})` : ''}`;
        }
        if (k < attempts) await sleep(backoffMs * 2 ** (k - 1));
      }
      return {
        ok: false,
        reason: `the webhook at ${origin} did not take notification ${n.kind} (journal seq ${n.seq}) after ${attempts} attempt(s): ${last}. Check notifications.webhook_url in .polly/config.yaml and that the receiver is up.`,
      };
    },
  };
}
