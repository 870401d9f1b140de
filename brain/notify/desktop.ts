/**
 * The desktop sink: `notify-send SUMMARY BODY` on Linux (libnotify,
 * https://man.archlinux.org/man/notify-send.1), `osascript -e 'display notification …'` on macOS
 * (https://developer.apple.com/library/archive/documentation/LanguagesUtilities/Conceptual/MacAutomationScriptingGuide/DisplayNotifications.html).
 * Elsewhere, or without the program on PATH, there is none (silently: `polly doctor` says so).
 */
import { execFile } from 'node:child_process';
import { findOnPath } from '../../workers/agents/agent-binary.js';
import type { Notification } from './notification.js';
import type { NotificationSink, SendResult } from './webhook.js';

/** The desktop notifier this machine has, or null. */
export interface DesktopNotifier {
  kind: 'notify-send' | 'osascript';
  /** Its absolute path. */
  path: string;
}

/** Which desktop notifier is available (`platform` and PATH as given). */
export function detectDesktopNotifier(platform: NodeJS.Platform = process.platform, path: string | undefined = process.env.PATH): DesktopNotifier | null {
  if (platform === 'linux') {
    const p = findOnPath('notify-send', path);
    return p ? { kind: 'notify-send', path: p } : null;
  }
  if (platform === 'darwin') {
    const p = findOnPath('osascript', path);
    return p ? { kind: 'osascript', path: p } : null;
  }
  return null;
}

/** An AppleScript string literal. */
function appleString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** The argv for one notification (pure); the summary names the repository when the notification does. */
export function desktopArgs(notifier: DesktopNotifier, n: Notification): string[] {
  const body = n.link ? `${n.text}\n${n.link}` : n.text;
  const title = n.repository ? `[${n.repository}] ${n.title}` : n.title;
  if (notifier.kind === 'notify-send') return ['--app-name=Polly', `Polly: ${title}`, body];
  return ['-e', `display notification ${appleString(body)} with title "Polly" subtitle ${appleString(title)}`];
}

/** Create the desktop sink for `notifier`; each send runs the program (5 s at most). */
export function createDesktopSink(notifier: DesktopNotifier): NotificationSink {
  return {
    name: `desktop ${notifier.kind}`,
    send(n) {
      return new Promise<SendResult>((resolve) => {
        execFile(notifier.path, desktopArgs(notifier, n), { timeout: 5000 }, (error, _stdout, stderr) => {
          if (!error) return resolve({ ok: true });
          const why = (stderr || error.message).trim().split('\n')[0];
          resolve({ ok: false, reason: `${notifier.kind} failed for notification ${n.kind} (journal seq ${n.seq}): ${why}. Set notifications.desktop: false to stop trying.` });
        });
      });
    },
  };
}
