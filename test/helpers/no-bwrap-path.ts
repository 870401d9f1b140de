/**
 * A machine without bubblewrap, for tests of what Polly does where its sandbox cannot start: a
 * PATH rebuilt from the machine's bin dirs with every program linked in but `bwrap`.
 */
import { existsSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A bin dir holding every program of the machine's bin dirs except bubblewrap. */
export function pathWithoutBwrap(): string {
  const bin = mkdtempSync(join(tmpdir(), 'polly-nobwrap-'));
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      if (name === 'bwrap' || existsSync(join(bin, name))) continue;
      try {
        symlinkSync(join(dir, name), join(bin, name));
      } catch {
        // a name that cannot be linked (a race with another writer): skip it
      }
    }
  }
  return bin;
}
