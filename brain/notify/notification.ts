/**
 * What Polly tells a human, and when: a pure mapping from journal events to notifications.
 *
 * Notified (journal kind → why): `plan.proposed` (a plan waits at the gate; the notifier holds it
 * a moment and drops it when the plan was decided meanwhile, e.g. by `--yes`), `plan.refused`,
 * `task.parked` (for a budget stop titled "Budget reached": one notification per stop, the
 * `budget.reached` beside it in the same transaction is not notified), `task.failed` (failed,
 * cancelled or stopped; not the run end of a parked task), `goal.done`, and a PR's life after it is opened:
 * - each PR event that needs attention, when it arrives: `pr.feedback` (a review, line comment or
 *   conversation comment), `pr.checks_failed` (failing checks on the head), `pr.conflicts` (the PR
 *   stopped merging into its base). Polly answers these in a fix round (brain/process/pr-events.ts);
 * - `task.pr_ready`: the PR is ready for a human, the first time ("PR ready") and again at the end
 *   of each fix round ("feedback handled", with the round: its `fixRound`). A fix round that fails
 *   ends in `task.parked`, notified as such. So every fix round closes with exactly one notification.
 * - `pr.untrusted_feedback`: a review or comment by an account that may not steer a worker
 *   (brain/forge/pr-trust.ts): shown to the human, never acted on.
 * `brain.died` is not notified from the journal: the process that noticed the death sent it
 * (brain/notify/brain-death.ts), and a Brain started later must not send it again.
 * Everything else is not. The text names ids, statuses and reasons only: no URLs of forges with
 * credentials, no tokens (reasons pass through brain/core/redact.ts).
 *
 * Links: to the dashboard (`polly ui`) page of the plan, task or goal when config
 * `notifications.dashboard_url` names it; otherwise the notification has no link.
 */
import { redactSecrets } from '../core/redact.js';
import type { JournalEntry } from '../registry/registry-schema.js';

/** The journal kinds that notify. */
export const NOTIFIED_KINDS = [
  'plan.proposed',
  'plan.refused',
  'task.parked',
  'task.failed',
  'task.pr_ready',
  'pr.feedback',
  'pr.checks_failed',
  'pr.conflicts',
  'pr.untrusted_feedback',
  'goal.done',
] as const;
export type NotifiedKind = (typeof NOTIFIED_KINDS)[number];
/** What a notification can be about: a notified journal kind, or the Brain's death (brain/notify/brain-death.ts). */
export type NotificationKind = NotifiedKind | 'brain.died';

/** One notification. */
export interface Notification {
  /** The repository it is about (`owner/repo` on GitHub, the directory's name otherwise); the notifier fills it in. */
  repository?: string;
  /** The journal event it is about. */
  kind: NotificationKind;
  seq: number;
  /** A short title (the desktop summary). */
  title: string;
  /** One or two lines. */
  text: string;
  /** The dashboard page, or null when no dashboard URL is configured. */
  link: string | null;
}

/**
 * The dashboard's base URL (`notifications.dashboard_url`, e.g. `http://127.0.0.1:8080` for
 * `polly ui --port 8080`; pages `/plans/<id>`, `/tasks/<id>`, `/goals/<id>` of brain/ui/ui-server.ts),
 * without a trailing slash, or null when none is configured (`polly ui` picks a free port by default,
 * which the Brain cannot know).
 */
export function dashboardUrl(config: { notifications: { dashboard_url?: string | null } }): string | null {
  const url = config.notifications.dashboard_url;
  return typeof url === 'string' && url ? url.replace(/\/+$/, '') : null;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : v === null || v === undefined ? '' : String(v));
const cut = (text: string, max = 300): string => {
  const one = redactSecrets(text.replace(/\s+/g, ' ').trim());
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
};

/** The notification for a journal entry, or null when its kind is not notified. Pure. */
export function notificationFor(entry: JournalEntry, baseUrl: string | null): Notification | null {
  const d = entry.data;
  const page = (path: string): string | null => (baseUrl ? `${baseUrl}${path}` : null);
  const make = (kind: NotifiedKind, title: string, text: string, path: string): Notification => ({ kind, seq: entry.seq, title, text, link: page(path) });
  switch (entry.kind) {
    case 'plan.proposed':
      return make(
        'plan.proposed',
        `Plan ${str(d.planId)} waits for approval`,
        `Plan ${str(d.planId)} was admitted and waits at the plan gate: polly plan approve ${str(d.planId)} (or reject).`,
        `/plans/${str(d.planId)}`,
      );
    case 'plan.refused':
      return make(
        'plan.refused',
        `Plan ${str(d.planId)} refused`,
        `Plan ${str(d.planId)} was refused by the model checker: ${cut((d.violations as string[] | undefined)?.join(', ') ?? '')}.`,
        `/plans/${str(d.planId)}`,
      );
    case 'task.parked': {
      // A budget stop (brain/task-tools/turn-budget.ts `parkForBudget`): one notification, whose
      // reason names what was spent and the command that continues the task.
      const budget = d.budget === true || str(d.reason).startsWith('budget reached:');
      return make(
        'task.parked',
        budget ? `Budget reached: task ${str(d.taskId)}` : `Task ${str(d.taskId)} parked`,
        `Task ${str(d.taskId)} was parked: ${cut(str(d.reason))}`,
        `/tasks/${str(d.taskId)}`,
      );
    }
    case 'task.failed':
      // A parked task's run ending: `task.parked` has announced it already.
      if (d.status === 'parked') return null;
      return make(
        'task.failed',
        `Task ${str(d.taskId)} ${str(d.status) || 'failed'}`,
        `Task ${str(d.taskId)} ended ${str(d.status) || 'failed'}${d.reason ? `: ${cut(str(d.reason))}` : ''}`,
        `/tasks/${str(d.taskId)}`,
      );
    case 'task.pr_ready':
      if (typeof d.fixRound === 'number')
        return make(
          'task.pr_ready',
          `Feedback on PR #${str(d.number)} handled`,
          `Fix round ${d.fixRound} of task ${str(d.taskId)} is done: the changes are pushed, checked and re-reviewed, and PR #${str(d.number)} is ready again for a human to merge.`,
          `/tasks/${str(d.taskId)}`,
        );
      return make(
        'task.pr_ready',
        `PR #${str(d.number)} ready`,
        `The PR of task ${str(d.taskId)} (#${str(d.number)}) is green, reviewed and ready for a human to merge.`,
        `/tasks/${str(d.taskId)}`,
      );
    case 'pr.checks_failed': {
      const checks = Array.isArray(d.checks) ? (d.checks as Array<Record<string, unknown>>).map((c) => str(c.name)).filter(Boolean) : [];
      return make(
        'pr.checks_failed',
        `Checks failed on PR #${str(d.number)}`,
        `${checks.length ? cut(checks.join(', '), 200) : 'A check'} failed on PR #${str(d.number)} of task ${str(d.taskId)}; Polly sends it back to the worker in a fix round.`,
        `/tasks/${str(d.taskId)}`,
      );
    }
    case 'pr.conflicts': {
      const files = Array.isArray(d.files) ? (d.files as unknown[]).map(str) : [];
      return make(
        'pr.conflicts',
        `PR #${str(d.number)} conflicts with ${str(d.base) || 'its base'}`,
        `PR #${str(d.number)} of task ${str(d.taskId)} no longer merges into ${str(d.base) || 'its base'}${files.length ? ` (${cut(files.join(', '), 200)})` : ''}; Polly merges the base in a fix round.`,
        `/tasks/${str(d.taskId)}`,
      );
    }
    case 'pr.feedback':
      return make(
        'pr.feedback',
        `Feedback on PR #${str(d.number)}`,
        `${str(d.event) === 'REQUEST_CHANGES' ? 'Changes requested' : 'A comment'} on PR #${str(d.number)} of task ${str(d.taskId)}: ${cut(str(d.body), 200)}`,
        `/tasks/${str(d.taskId)}`,
      );
    case 'pr.untrusted_feedback':
      return make(
        'pr.untrusted_feedback',
        `A non-collaborator commented on PR #${str(d.number)}`,
        `${str(d.author) || 'An account'} (no write access to the repository) ${d.source === 'review' ? 'reviewed' : 'commented on'} PR #${str(d.number)} of task ${str(d.taskId)}; not acted on, not shown to the worker: ${cut(str(d.body), 200)}`,
        `/tasks/${str(d.taskId)}`,
      );
    case 'goal.done':
      return make(
        'goal.done',
        `Goal ${str(d.goalId)} ${str(d.status)}`,
        `Goal ${str(d.goalId)} is ${str(d.status)}${d.reason ? `: ${cut(str(d.reason))}` : ''}.`,
        `/goals/${str(d.goalId)}`,
      );
    default:
      return null;
  }
}

/**
 * `text` with Slack's control characters escaped (`&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`,
 * https://api.slack.com/reference/surfaces/formatting#escaping), so text a PR author wrote cannot
 * become a mention (`<!channel>`), a link (`<https://…|label>`) or a user reference. Pure.
 */
export function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * The Slack-compatible webhook body (https://api.slack.com/messaging/webhooks): `text` (the
 * fallback every receiver shows) and one `section` block in mrkdwn with the link when there is one.
 * The title and text are escaped ({@link escapeSlack}); the link is Polly's own (config
 * `notifications.dashboard_url`).
 */
export function webhookPayload(n: Notification): { text: string; blocks: Array<Record<string, unknown>> } {
  const title = escapeSlack(n.repository ? `[${n.repository}] ${n.title}` : n.title);
  const body = escapeSlack(n.text);
  const text = `${title}: ${body}${n.link ? ` ${n.link}` : ''}`;
  const mrkdwn = `*${title}*\n${body}${n.link ? `\n<${n.link}|Open in the Polly dashboard>` : ''}`;
  return { text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text: mrkdwn } }] };
}
