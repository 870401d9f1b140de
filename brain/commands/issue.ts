/**
 * `polly issue add|list|show|comment`: the local forge's issues (issue 30, brain/forge/local-issues.ts),
 * the twin of GitHub's for a repository without a GitHub remote. A local issue becomes a goal with
 * `polly goal --issue N` (or `polly watch`, when it carries config `intake.label`); its plan is
 * posted on it, and `polly issue comment N "/polly approve"` answers the plan gate as a
 * maintainer's comment does on GitHub. On GitHub, issues live on GitHub.
 */
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command, type CommandIO } from './command.js';
import { PollyError } from '../core/errors.js';
import { openRepoContext, type RepoContext } from '../registry/repo-context.js';
import { addLocalIssue, addLocalIssueComment, listLocalIssues, localIssue, localIssueUrl } from '../forge/local-issues.js';
import { selectForge, originUrl } from '../forge/forge-select.js';
import { createGitRunner } from '../../workers/git/git.js';
import { formatTable } from './table.js';
import type { LocalIssue } from '../registry/registry-schema.js';
import { isPollyAuthored } from '../forge/github-watch.js';
import { POLLY_MARKER } from '../forge/github-forge.js';

const USAGE = `Usage: polly issue add "TITLE" [--body TEXT] [--label LABEL]... [--json]
       polly issue list [--json]
       polly issue show N [--json]
       polly issue comment N "TEXT" [--json]

The local forge's issues (a repository without a GitHub remote; on GitHub, issues live on
GitHub). An issue becomes a goal with "polly goal --issue N", or through "polly watch" when it
carries the intake label (config intake.label, default polly: polly issue add "…" --label polly).
Polly posts the goal's plan on the issue; answer it with a comment:

  polly issue comment N "/polly approve"     run the plan (Polly never merges)
  polly issue comment N "/polly reject"      nothing of it runs
  polly issue comment N "/polly cancel t1"   stop one task of the approved plan (work kept)

The terminal, the dashboard and "polly plan approve" answer too; whichever comes first wins.`;

/** The local forge or a clear refusal: issues of a GitHub repository are GitHub's. */
async function requireLocal(ctx: RepoContext, sub: string): Promise<void> {
  const selection = selectForge(ctx.config.forge, await originUrl(createGitRunner(), ctx.repo.root));
  if (selection.kind === 'github') {
    throw new PollyError(
      'bad_input',
      `polly issue ${sub}: this repository's forge is GitHub (${selection.owner}/${selection.repo}: ${selection.reason}); its issues live on GitHub. Open or answer the issue there (polly watch takes labelled issues in), or set forge.kind: local.`,
      { details: { forge: 'github' } },
    );
  }
}

function issueJson(i: LocalIssue) {
  return { ...i, url: localIssueUrl(i.number) };
}

function parseNumber(sub: string, raw: string | undefined): number {
  const n = Number(raw);
  if (!raw || !Number.isInteger(n) || n < 1)
    throw new PollyError('bad_input', `polly issue ${sub}: ${JSON.stringify(raw ?? '')} is not an issue number. Run polly issue list.`, { details: { argument: raw ?? null } });
  return n;
}

async function run(sub: string, rest: string[], io: CommandIO): Promise<number> {
  const ctx = await openRepoContext(io.cwd, io.env);
  await requireLocal(ctx, sub);
  if (sub === 'add') {
    const { values, positionals } = parseCommandArgs('issue add', rest, { body: { type: 'string' }, label: { type: 'string', multiple: true }, json: { type: 'boolean' } }, 1);
    const issue = await addLocalIssue(ctx.store, { title: positionals[0] ?? '', ...(values.body !== undefined ? { body: values.body } : {}), labels: values.label ?? [] });
    if (values.json) writeJson(io.stdout, issueJson(issue));
    else writeLine(io.stdout, `issue #${issue.number}: ${issue.title}${issue.labels.length ? ` [${issue.labels.join(', ')}]` : ''}`);
    io.stderr.write(`[polly] make it a goal: polly goal --issue ${issue.number}\n`);
    return 0;
  }
  if (sub === 'list') {
    const { values } = parseCommandArgs('issue list', rest, { json: { type: 'boolean' } }, 0);
    const issues = await listLocalIssues(ctx.store);
    const reg = await ctx.store.read();
    const goalOf = (n: number) =>
      Object.values(reg.goals)
        .filter((g) => g.issue?.forge === 'local' && g.issue.number === n)
        .map((g) => `${g.id} ${g.status}`)
        .at(-1) ?? '';
    if (values.json) {
      writeJson(
        io.stdout,
        issues.map((i) => ({ ...issueJson(i), goal: goalOf(i.number) || null })),
      );
      return 0;
    }
    if (issues.length === 0) {
      io.stderr.write('no local issues yet: polly issue add "TITLE"\n');
      return 0;
    }
    for (const l of formatTable(
      [
        { header: '#', value: (i: LocalIssue) => String(i.number) },
        { header: 'STATE', value: (i) => i.state },
        { header: 'LABELS', value: (i) => i.labels.join(',') },
        { header: 'GOAL', value: (i) => goalOf(i.number) },
        { header: 'COMMENTS', value: (i) => String(i.comments.length) },
        { header: 'TITLE', value: (i) => i.title, max: 60 },
      ],
      issues,
    ))
      writeLine(io.stdout, l);
    return 0;
  }
  if (sub === 'show') {
    const { values, positionals } = parseCommandArgs('issue show', rest, { json: { type: 'boolean' } }, 1);
    const issue = await localIssue(ctx.store, parseNumber('show', positionals[0]));
    if (values.json) {
      writeJson(io.stdout, issueJson(issue));
      return 0;
    }
    writeLine(io.stdout, `#${issue.number} ${issue.title} [${issue.state}]${issue.labels.length ? ` labels: ${issue.labels.join(', ')}` : ''}`);
    if (issue.body) writeLine(io.stdout, `\n${issue.body}`);
    for (const c of issue.comments) {
      const who = isPollyAuthored(c.body) ? 'polly' : c.author;
      writeLine(io.stdout, `\n--- comment ${c.id} by ${who} at ${c.createdAt}${c.updatedAt !== c.createdAt ? ` (edited ${c.updatedAt})` : ''}`);
      writeLine(io.stdout, c.body.replace(POLLY_MARKER, '').trimEnd());
    }
    return 0;
  }
  if (sub === 'comment') {
    const { values, positionals } = parseCommandArgs('issue comment', rest, { json: { type: 'boolean' } }, 2);
    const number = parseNumber('comment', positionals[0]);
    const { id } = await addLocalIssueComment(ctx.store, number, positionals[1] ?? '');
    if (values.json) writeJson(io.stdout, { number, id });
    else writeLine(io.stdout, `comment ${id} on issue #${number}`);
    if (ctx.store && (await ctx.store.read()).brain === null && /^\s*\/polly\b/i.test(positionals[1] ?? '')) {
      io.stderr.write('[polly] no Brain runs: the answer is read when one does (polly resume, polly watch, or a running polly goal)\n');
    }
    return 0;
  }
  throw new PollyError('bad_input', `polly issue: unknown subcommand ${JSON.stringify(sub)}. Use add, list, show or comment.`, { details: { argument: sub } });
}

export const command: Command = {
  summary: 'local forge issues: add, list, show, comment (answer the plan gate with /polly approve)',
  usage: USAGE,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (!sub) throw new PollyError('bad_input', `polly issue: name a subcommand.\n${USAGE}`);
    return run(sub, rest, io);
  },
};
