/**
 * The cross-reviewer's sandbox: a scratch directory that holds only what a reviewer needs — the
 * change as a patch and the acceptance contract — and nothing that names the implementer's worktree.
 *
 * Layout (under the OS temp dir, never inside the repository or a worktree):
 * ```
 * <tmp>/polly-review-XXXXXX/
 *   DIFF.patch     git diff <base>...<head> of the task branch, produced from the repository root
 *   CONTRACT.md    the task, its acceptance criteria and commands, and Polly's check results
 * ```
 * The reviewer's prompt (returned, not written) names these two files, asks for findings as JSON
 * per `workers/review-findings.ts` and says that the reviewer must not change anything (the gate's
 * `review` role enforces it). Every text that goes into the sandbox or the prompt has the worktree's
 * absolute path (and its realpath) replaced by `<worktree>`: check output or a generated file may
 * quote it, and a reviewer must not be able to name it.
 */
import { existsSync, realpathSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { PollyError } from '../brain/core/errors.js';
import type { CommandResult } from './proc/shell-command.js';
import { REVIEW_FINDINGS_JSON_SCHEMA } from './review-findings.js';
import { firstLine, type GitRunner } from './git/git.js';

/** The file names a sandbox holds, in listing order. */
export const REVIEW_SANDBOX_FILES = ['CONTRACT.md', 'DIFF.patch'] as const;

/** What the reviewer sees in place of the worktree path if any text quoted it. */
export const WORKTREE_PLACEHOLDER = '<worktree>';

/** The task under review, as the sandbox needs it (a registry TaskRecord satisfies it). */
export interface ReviewSubject {
  id: string;
  title: string;
  /** What the implementer was asked to do. */
  prompt: string;
  acceptance: { commands: string[]; criteria: string[] };
  /** The acceptance commands' last results. */
  checks: CommandResult[];
  worktree: string | null;
  baseBranch: string | null;
  branch: string | null;
}

export interface ReviewSandboxInput {
  /** The task under review (id, title, prompt, acceptance, checks, worktree, base). */
  task: ReviewSubject;
  /** The unified diff of the change (see {@link produceReviewDiff}). */
  diff: string;
  /**
   * Parent directory of the scratch directory (default: the OS temp dir). Refused when it lies
   * inside the task's worktree or inside `repoRoot`.
   */
  stateRoot?: string;
  /** Review round (1-based), shown in the prompt. Default 1. */
  round?: number;
  /** The repository's main checkout: the scratch dir must not be inside it either. */
  repoRoot?: string;
}

export interface ReviewSandbox {
  /** Absolute path of the scratch directory (the reviewer's cwd). */
  dir: string;
  /** Absolute paths of the files written. */
  files: { diff: string; contract: string };
  /** The reviewer's prompt; its first line is `[polly task=<id> role=review]`. */
  prompt: string;
  /** Remove the scratch directory (idempotent). */
  dispose(): Promise<void>;
}

/** Every form of `path` a text might quote: as given and its realpath (when it exists). */
function pathForms(path: string | null): string[] {
  if (!path) return [];
  const forms = new Set<string>([resolve(path)]);
  try {
    if (existsSync(path)) forms.add(realpathSync(path));
  } catch {
    // unreadable: the given form is enough
  }
  return [...forms].filter((p) => p.length > 1).sort((a, b) => b.length - a.length);
}

/** `text` with every form of the worktree path replaced by {@link WORKTREE_PLACEHOLDER}. Pure apart from realpath. */
export function redactWorktreePath(text: string, worktree: string | null): string {
  let out = text;
  for (const form of pathForms(worktree)) out = out.split(form).join(WORKTREE_PLACEHOLDER);
  return out;
}

function checkLine(c: CommandResult): string {
  const status = c.timedOut ? 'timed out' : c.exitCode === 0 ? 'passed' : `failed (exit ${c.exitCode ?? 'signal'})`;
  return `- \`${c.command}\`: ${status} in ${(c.durationMs / 1000).toFixed(1)} s`;
}

/** CONTRACT.md: task, criteria, commands and Polly's check results (a failing check's output tail included). Pure. */
export function renderContract(task: ReviewSandboxInput['task']): string {
  const out: string[] = [`# Task ${task.id}: ${task.title}`, '', '## What the implementer was asked to do', '', task.prompt.trimEnd(), ''];
  out.push('## Acceptance criteria', '');
  if (task.acceptance.criteria.length === 0) out.push('_none stated_');
  for (const c of task.acceptance.criteria) out.push(`- ${c}`);
  out.push('', '## Acceptance commands (all must exit 0)', '');
  if (task.acceptance.commands.length === 0) out.push('_none_');
  for (const c of task.acceptance.commands) out.push(`- \`${c}\``);
  out.push('', '## Check results (run by Polly on the change)', '');
  if (task.checks.length === 0) out.push('_not run_');
  for (const c of task.checks) {
    out.push(checkLine(c));
    if (c.exitCode !== 0 || c.timedOut) out.push('', '```text', c.output.trimEnd(), '```', '');
  }
  out.push('');
  return out.join('\n');
}

/** The reviewer's prompt: marker line, the two files, the rules, the JSON schema. Pure. */
export function renderReviewPrompt(task: Pick<ReviewSubject, 'id' | 'title'>, round: number): string {
  return [
    `[polly task=${task.id} role=review]`,
    `You are the cross-reviewer of task ${task.id} ("${task.title}"), review round ${round}.`,
    '',
    'Your current directory holds exactly two files:',
    '- DIFF.patch — the change under review, as a unified diff (git diff base...head);',
    '- CONTRACT.md — what was asked, the acceptance criteria and commands, and the check results Polly measured.',
    '',
    'Rules: read these files only. Do NOT edit, write, create or delete any file, and do not run commands',
    'that change anything: you are a read-only reviewer and such attempts are denied.',
    '',
    'Report findings against the new version of the files in the diff: `file` is the path as it appears',
    'in the diff (relative to the repository root, without a/ or b/), `line` a 1-based line number of the',
    'new file. A finding is blocking only when the change is wrong, breaks the acceptance contract, or is',
    'unsafe to merge; everything else (style, naming, suggestions) is non_blocking.',
    '',
    'End your answer with one JSON object, and nothing after it, matching this JSON Schema:',
    '```json',
    JSON.stringify(REVIEW_FINDINGS_JSON_SCHEMA),
    '```',
    'For example: {"blocking": [{"file": "src/a.ts", "line": 3, "message": "returns a - b; the contract says a + b"}], "non_blocking": []}',
    '',
  ].join('\n');
}

function isInside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * Create the sandbox for one review round.
 * @throws PollyError `bad_input` when `stateRoot` is inside the worktree or the repository;
 *   `internal` when the written texts would still name the worktree (a bug).
 */
export async function createReviewSandbox(input: ReviewSandboxInput): Promise<ReviewSandbox> {
  const worktree = input.task.worktree;
  const root = resolve(input.stateRoot ?? tmpdir());
  const forms = pathForms(worktree);
  for (const form of forms) {
    if (isInside(root, form)) {
      throw new PollyError('bad_input', `the review sandbox root ${root} is inside the task's worktree ${form}; use a directory outside it (default: the OS temp dir).`);
    }
  }
  for (const form of pathForms(input.repoRoot ?? null)) {
    if (isInside(root, form)) {
      throw new PollyError(
        'bad_input',
        `the review sandbox root ${root} is inside the repository ${form}; a reviewer must not work in the repository. Use a directory outside it (default: the OS temp dir; check TMPDIR).`,
      );
    }
  }
  const worktreeName = worktree ? basename(worktree) : null;
  // mkdtemp's random suffix could, by chance, spell the worktree's name: draw again.
  let dir = '';
  for (let i = 0; i < 20; i++) {
    const candidate = realpathSync(await mkdtemp(join(root, 'polly-review-')));
    const named = forms.some((f) => candidate.includes(f)) || (worktreeName !== null && basename(candidate).includes(worktreeName));
    if (!named) {
      dir = candidate;
      break;
    }
    await rm(candidate, { recursive: true, force: true });
  }
  if (!dir) throw new PollyError('internal', `could not create a review scratch directory under ${root} whose name does not contain ${worktreeName}.`);

  const diffText = redactWorktreePath(input.diff, worktree);
  const contract = redactWorktreePath(renderContract(input.task), worktree);
  const prompt = redactWorktreePath(renderReviewPrompt(input.task, input.round ?? 1), worktree);
  for (const [what, text] of [
    ['DIFF.patch', diffText],
    ['CONTRACT.md', contract],
    ['prompt', prompt],
  ] as const) {
    if (forms.some((f) => text.includes(f))) throw new PollyError('internal', `the review ${what} still names the worktree after redaction.`);
  }
  const files = { diff: join(dir, 'DIFF.patch'), contract: join(dir, 'CONTRACT.md') };
  await writeFile(files.diff, diffText, { mode: 0o444 });
  await writeFile(files.contract, contract, { mode: 0o444 });
  return {
    dir,
    files,
    prompt,
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}

/** The names in a sandbox directory (for checks: exactly {@link REVIEW_SANDBOX_FILES}). */
export async function listReviewSandbox(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

export interface ReviewDiffInput {
  /** The repository's main checkout: the diff is produced here, never in the worktree. */
  repoRoot: string;
  /** Base branch name (e.g. `main`); `origin/<base>` is preferred when it exists. */
  baseBranch: string;
  /** The task branch (e.g. `polly/t1`) or a commit. */
  head: string;
  git: GitRunner;
  remote?: string;
}

/**
 * `git diff --no-color --no-ext-diff <base>...<head>` run in the repository root: what the change
 * brings relative to where it forked from the base. The base is `<remote>/<baseBranch>` when that
 * remote-tracking ref exists (what the PR is against), else the local branch.
 * @returns the diff text and the two commits used.
 * @throws PollyError `not_found` when the base or head does not resolve; `git_failed`.
 */
export async function produceReviewDiff(input: ReviewDiffInput): Promise<{ diff: string; base: string; head: string }> {
  const cwd = input.repoRoot;
  const remote = input.remote ?? 'origin';
  const rev = async (ref: string): Promise<string | null> => {
    const r = await input.git.run(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd, okExitCodes: [1, 128] });
    return r.exitCode === 0 ? firstLine(r) : null;
  };
  const base = (await rev(`refs/remotes/${remote}/${input.baseBranch}`)) ?? (await rev(`refs/heads/${input.baseBranch}`)) ?? (await rev(input.baseBranch));
  if (!base) throw new PollyError('not_found', `base branch ${input.baseBranch} does not exist in ${cwd} (nor ${remote}/${input.baseBranch}); cannot produce the review diff.`);
  const head = (await rev(`refs/heads/${input.head}`)) ?? (await rev(input.head));
  if (!head) throw new PollyError('not_found', `task branch ${input.head} does not exist in ${cwd}; cannot produce the review diff.`);
  const r = await input.git.run(['diff', '--no-color', '--no-ext-diff', '--no-renames', `${base}...${head}`], { cwd });
  return { diff: r.stdout, base, head };
}
