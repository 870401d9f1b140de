/**
 * The dashboard's browser tests drive Debian's Chromium through playwright-core (no browser is
 * downloaded): {@link launchChromium} starts it headless with the flags every such test uses, and
 * {@link VIEWPORTS} are the two sizes each page is checked at (a desktop and a phone).
 */
import { chromium, type Browser } from 'playwright-core';

/** A desktop (1440×900) and a phone (390×844, an iPhone 12-14's CSS viewport). */
export const VIEWPORTS = [
  { name: 'desktop', width: 1440, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

/**
 * Start Chromium at `executablePath`, headless. --no-sandbox: the tests run as root (CI), where
 * Chromium's own sandbox cannot start; the rest keep it from reaching out (QUIC, component updates,
 * sync, background networking) or stopping at a first-run page. playwright gives each launch a
 * fresh temporary --user-data-dir of its own (removed on close), so no profile is shared.
 */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
