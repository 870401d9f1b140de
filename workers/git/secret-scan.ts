/**
 * The secret scan Polly runs on a task's changes before it commits them and before it pushes them:
 * a token, key or credential file a worker left in its worktree never leaves the machine through
 * Polly's own commit and push.
 *
 * Scanner: secretlint (`@secretlint/core` with `@secretlint/secretlint-rule-preset-recommend`, the
 * maintained rule set for AWS, GCP, GitHub, npm, Slack, OpenAI/Anthropic keys, private keys, basic
 * auth in URLs, …; https://github.com/secretlint/secretlint). Chosen over gitleaks' rules because it
 * is a library with a stable API on npm (no Go binary to ship) and its findings carry line and column.
 * Version 11 is the last line that supports Node 20.
 *
 * What is scanned: every file that differs between `base` and `head` (`head` null: the working
 * tree, untracked files included, ignored files excluded, as `git add -A` would commit them). The
 * whole file is linted (a private key spans lines) but only findings that start on a line added or
 * changed since `base` are reported, so a fixture already on the base branch does not block a
 * task. Files over 2 MB and binary files (a NUL byte) are skipped and listed. A symlink is scanned
 * as what git commits, its target text; nothing a worker links to outside its worktree is read.
 *
 * Findings are data: `{file, line, column, rule, message}` with the secret itself masked.
 */
import { artifactSet, isArtifact, readArtifacts } from './polly-artifacts.js';
import { lintSource } from '@secretlint/core';
import { creator as recommended } from '@secretlint/secretlint-rule-preset-recommend';
import { constants } from 'node:fs';
import { lstat, open, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { GitRunner } from './git.js';

/** One secret found in a changed line. `line`/`column` are 1-based. */
export interface SecretFinding {
  file: string;
  line: number;
  column: number;
  /** secretlint rule id, e.g. `@secretlint/secretlint-rule-github`. */
  rule: string;
  /** secretlint's message with the secret masked (`****`). */
  message: string;
}

export interface SecretScanResult {
  findings: SecretFinding[];
  /** Files linted. */
  scanned: number;
  /** Files not linted, with why (binary, too large). */
  skipped: Array<{ file: string; why: string }>;
}

export interface SecretScanInput {
  git: GitRunner;
  /** A worktree of the repository. */
  cwd: string;
  /** The commit the task started from. */
  base: string;
  /** A commit to scan up to, or null for the working tree of `cwd`. */
  head: string | null;
}

const MAX_BYTES = 2 * 1024 * 1024;

/** `file:line:column rule: message` lines, one per finding (for a task's reason). */
export function describeFindings(findings: readonly SecretFinding[]): string {
  return findings.map((f) => `${f.file}:${f.line}:${f.column} ${f.rule.replace(/^@secretlint\/secretlint-rule-/, '')}: ${f.message}`).join('; ');
}

/**
 * Scan what changed between `base` and `head` (see the module doc).
 * @throws PollyError `git_failed` when git cannot list or read the changes.
 */
export async function scanForSecrets(input: SecretScanInput): Promise<SecretScanResult> {
  const { git, cwd, base, head } = input;
  const range = head === null ? [base] : [base, head];
  const changed = (await git.run(['diff', '--name-only', '-z', '--no-renames', '--diff-filter=d', ...range, '--'], { cwd })).stdout.split('\0').filter(Boolean);
  // Polly's own artifacts (./polly-artifacts.ts) are never committed, so not scanned either.
  const artifacts = artifactSet(head === null ? await readArtifacts(git, cwd) : []);
  const untracked =
    head === null ? (await git.run(['ls-files', '-z', '--others', '--exclude-standard'], { cwd })).stdout.split('\0').filter((p) => p && !isArtifact(p, artifacts)) : [];
  const result: SecretScanResult = { findings: [], scanned: 0, skipped: [] };
  const newFiles = new Set(untracked);
  for (const file of [...new Set([...changed, ...untracked])].sort()) {
    let content: Buffer;
    if (head === null) {
      const read = await readWorktreeEntry(join(cwd, file));
      if (read === null) continue;
      if (read === 'too large') {
        result.skipped.push({ file, why: `larger than ${MAX_BYTES} bytes` });
        continue;
      }
      content = read;
    } else {
      const r = await git.run(['cat-file', 'blob', `${head}:${file}`], { cwd, okExitCodes: [128] });
      if (r.exitCode !== 0) continue;
      content = Buffer.from(r.stdout, 'utf8');
    }
    if (content.length > MAX_BYTES) {
      result.skipped.push({ file, why: `larger than ${MAX_BYTES} bytes` });
      continue;
    }
    if (content.includes(0)) {
      result.skipped.push({ file, why: 'binary' });
      continue;
    }
    const added = newFiles.has(file) ? null : await addedLines(git, cwd, range, file);
    const linted = await lintSource({
      source: { filePath: join(cwd, file), content: content.toString('utf8'), contentType: 'text' },
      options: { config: { rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommended }] }, maskSecrets: true },
    });
    result.scanned += 1;
    for (const m of linted.messages) {
      const line = m.loc.start.line;
      if (added !== null && !added.has(line)) continue;
      result.findings.push({ file, line, column: m.loc.start.column + 1, rule: m.ruleId, message: m.message });
    }
  }
  return result;
}

/**
 * What `git add` would record for the worktree entry at `path`, read without following a link the
 * worker planted: a symlink's target text (git stores the link, not what it points to), a regular
 * file's bytes (opened with `O_NOFOLLOW | O_NONBLOCK` and checked again with `fstat`, so a swap
 * to a link or a FIFO after the `lstat` is neither followed nor waited on), or null for anything
 * else (a FIFO, a socket, a device, a vanished path). `'too large'` past {@link MAX_BYTES}.
 * Polly runs this outside the sandbox with the user's rights: following a link would read
 * `~/.ssh/id_rsa` or `/proc/self/environ` (Polly's own tokens) on the worker's behalf, and a FIFO
 * would hang it (test/workers/git/secret-scan.test.ts).
 */
async function readWorktreeEntry(path: string): Promise<Buffer | 'too large' | null> {
  const st = await lstat(path).catch(() => null);
  if (st === null) return null;
  if (st.isSymbolicLink()) return Buffer.from(await readlink(path).catch(() => ''), 'utf8');
  if (!st.isFile()) return null;
  if (st.size > MAX_BYTES) return 'too large';
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => null);
  if (fh === null) return null;
  try {
    const now = await fh.stat();
    if (!now.isFile()) return null;
    if (now.size > MAX_BYTES) return 'too large';
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

/**
 * Line numbers (1-based, in the new version) added or changed in `file`, from `git diff -U0`.
 * `--text`: a `.gitattributes` the worker wrote (`file -diff`, `binary`) would otherwise make git
 * print "Binary files differ" with no hunk, and every finding in the file would be dropped (the
 * scan reads only NUL-free text, so nothing it scans is binary).
 */
async function addedLines(git: GitRunner, cwd: string, range: string[], file: string): Promise<Set<number> | null> {
  const r = await git.run(['diff', '-U0', '--text', '--no-color', '--no-ext-diff', '--no-textconv', ...range, '--', file], { cwd });
  const lines = new Set<number>();
  let sawHunk = false;
  for (const m of r.stdout.matchAll(/^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/gm)) {
    sawHunk = true;
    const start = Number(m[1]);
    const count = m[2] === undefined ? 1 : Number(m[2]);
    for (let i = 0; i < count; i++) lines.add(start + i);
  }
  // A new file in the range shows as one hunk; no hunk at all (mode change only): nothing added.
  return sawHunk ? lines : new Set();
}
