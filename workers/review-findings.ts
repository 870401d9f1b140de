/**
 * The cross-reviewer's structured answer: findings as JSON, validated against one schema.
 *
 * Shape (what the reviewer's prompt asks for, and what {@link parseFindings} accepts):
 * ```json
 * {"blocking": [{"file": "src/a.ts", "line": 12, "message": "…"}],
 *  "non_blocking": [{"file": "README.md", "line": 3, "message": "…"}]}
 * ```
 * `file` is a path relative to the repository root, `line` a 1-based line of the new file.
 */
import { z } from 'zod';
import { PollyError } from '../brain/core/errors.js';
import { visibleLine, visibleText } from '../brain/core/visible-text.js';

/** One finding of a review (stored in the registry's review records, brain/registry/registry-schema.ts). */
export interface ReviewFinding {
  file: string;
  line: number;
  message: string;
}

/** One finding: a file, a 1-based line, and what is wrong. */
export const findingSchema = z
  .object({
    file: z.string().min(1, 'file must be a non-empty path'),
    line: z.number().int('line must be an integer').min(1, 'line must be >= 1'),
    message: z.string().min(1, 'message must not be empty'),
  })
  .strict();

/** The whole answer. Unknown top-level keys are refused so that a typo ("nonblocking") is caught. */
export const reviewFindingsSchema = z
  .object({
    blocking: z.array(findingSchema),
    non_blocking: z.array(findingSchema),
  })
  .strict();

export interface ReviewFindings {
  blocking: ReviewFinding[];
  nonBlocking: ReviewFinding[];
}

/** The JSON Schema of the answer, for a reviewer's prompt or a CLI's `--output-schema`. */
export const REVIEW_FINDINGS_JSON_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['blocking', 'non_blocking'],
  properties: {
    blocking: { type: 'array', items: { $ref: '#/$defs/finding' } },
    non_blocking: { type: 'array', items: { $ref: '#/$defs/finding' } },
  },
  $defs: {
    finding: {
      type: 'object',
      additionalProperties: false,
      required: ['file', 'line', 'message'],
      properties: {
        file: { type: 'string', minLength: 1 },
        line: { type: 'integer', minimum: 1 },
        message: { type: 'string', minLength: 1 },
      },
    },
  },
} as const;

/**
 * Candidate JSON texts in an agent's final message, best first: the contents of fenced code blocks
 * (```json … ``` or ``` … ```), last block first, then every balanced `{…}` object in the text,
 * last first (an agent usually ends with its answer).
 */
export function jsonCandidates(text: string): string[] {
  const out: string[] = [];
  const fence = /```[ \t]*(?:json|JSON)?[ \t]*\r?\n([\s\S]*?)```/g;
  const fenced: string[] = [];
  for (let m = fence.exec(text); m; m = fence.exec(text)) fenced.push((m[1] ?? '').trim());
  out.push(...fenced.reverse());
  out.push(...balancedObjects(text).reverse());
  return [...new Set(out.filter((c) => c.startsWith('{')))];
}

/** Every top-level balanced `{…}` span in `text`, respecting JSON strings. */
function balancedObjects(text: string): string[] {
  const spans: string[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"' && depth > 0) inString = true;
    else if (ch === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (ch === '}' && depth > 0) {
      depth--;
      if (depth === 0) spans.push(text.slice(start, i + 1));
    }
  }
  return spans;
}

/** Human-readable list of zod issues: `blocking[0].line: line must be >= 1`. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => {
      const path = i.path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : String(p)), '');
      return `${path || '(root)'}: ${i.message}`;
    })
    .join('; ');
}

/**
 * Validate an already-parsed value against the findings schema. Control characters in `file` and
 * `message` come back shown as `\xNN`.
 * @throws PollyError `bad_input` naming every problem (path: message).
 */
export function validateFindings(value: unknown): ReviewFindings {
  const r = reviewFindingsSchema.safeParse(value);
  if (!r.success) {
    throw new PollyError(
      'bad_input',
      `review findings do not match the schema: ${describeIssues(r.error)}. Expected {"blocking": [{"file", "line", "message"}], "non_blocking": [...]}.`,
      { details: { issues: r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) } },
    );
  }
  // A finding is the reviewer's text, stored, posted and printed: its control characters (an
  // ANSI/OSC escape) are shown as `\xNN` from here on (brain/core/visible-text.ts).
  const visible = (f: ReviewFinding): ReviewFinding => ({ file: visibleLine(f.file), line: f.line, message: visibleText(f.message) });
  return { blocking: r.data.blocking.map(visible), nonBlocking: r.data.non_blocking.map(visible) };
}

/**
 * Extract the findings object from an agent's final text and validate it.
 *
 * Tries, in order, the fenced code blocks and then the balanced `{…}` spans of the text (last
 * first); the first candidate that parses as JSON *and* looks like findings (has `blocking` or
 * `non_blocking`) is validated. Returns camelCase findings.
 * @throws PollyError `bad_input` when the text has no JSON object, when no object has the
 *   findings keys, or when the findings fail the schema (every problem is named).
 */
export function parseFindings(text: string): ReviewFindings {
  const candidates = jsonCandidates(text);
  let parsedAny = false;
  let firstSyntaxError: string | null = null;
  for (const c of candidates) {
    let value: unknown;
    try {
      value = JSON.parse(c);
    } catch (error) {
      firstSyntaxError ??= (error as Error).message;
      continue;
    }
    parsedAny = true;
    if (value && typeof value === 'object' && !Array.isArray(value) && ('blocking' in value || 'non_blocking' in value)) {
      return validateFindings(value);
    }
  }
  const excerpt = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  if (candidates.length === 0) {
    throw new PollyError('bad_input', `the reviewer's answer holds no JSON object: ${JSON.stringify(excerpt)}. Ask it to end with the findings JSON.`);
  }
  if (!parsedAny) {
    throw new PollyError('bad_input', `the reviewer's answer holds no valid JSON (${firstSyntaxError ?? 'unparseable'}): ${JSON.stringify(excerpt)}.`);
  }
  throw new PollyError(
    'bad_input',
    `the reviewer's JSON has neither "blocking" nor "non_blocking": ${JSON.stringify(excerpt)}. Expected {"blocking": [...], "non_blocking": [...]}.`,
  );
}

/**
 * New-side line numbers that a review comment may target, per file, from a unified diff
 * (`git diff base...head`): the added and context lines inside hunks. GitHub refuses a whole
 * review (422 "pull_request_review_thread.line must be part of the diff") when one comment targets
 * any other line, so findings outside these lines go into the review body instead. Pure.
 */
export function commentableLines(diff: string): Map<string, Set<number>> {
  const out = new Map<string, Set<number>>();
  let file: string | null = null;
  let line = 0;
  let inHunk = false;
  for (const raw of diff.split('\n')) {
    if (raw.startsWith('diff --git ')) {
      file = null;
      inHunk = false;
    } else if (raw.startsWith('+++ ')) {
      const p = raw.slice(4).trim();
      file = p === '/dev/null' ? null : p.replace(/^b\//, '');
      inHunk = false;
    } else if (raw.startsWith('@@')) {
      const m = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(raw);
      inHunk = m !== null && file !== null;
      line = m ? Number(m[1]) : 0;
    } else if (inHunk && file !== null) {
      if (raw.startsWith('+') || raw.startsWith(' ')) {
        if (!out.has(file)) out.set(file, new Set());
        out.get(file)!.add(line);
        line += 1;
      } else if (!raw.startsWith('-') && !raw.startsWith('\\')) {
        inHunk = false;
      }
    }
  }
  return out;
}

export interface ReviewFromFindingsOptions {
  /** The reviewing worker, e.g. `codex`. */
  reviewer: string;
  round: number;
  /** From {@link commentableLines}; when given, findings on other lines go into the body. */
  commentable?: Map<string, Set<number>>;
}

/**
 * Turn validated findings into a forge review (`ReviewInput` of forge.ts): one line comment per
 * finding, marked **blocking** or non-blocking, and a body with the verdict. The event is always
 * `COMMENT`: Polly's own token opened the PR, and GitHub refuses APPROVE and REQUEST_CHANGES from a
 * PR's author (422); whether the PR may go ready is Polly's decision (zero blocking findings).
 */
export function reviewFromFindings(
  findings: ReviewFindings,
  options: ReviewFromFindingsOptions,
): { event: 'COMMENT'; body: string; comments: Array<{ path: string; line: number; body: string }> } {
  const all = [...findings.blocking.map((f) => ({ ...f, blocking: true })), ...findings.nonBlocking.map((f) => ({ ...f, blocking: false }))];
  const text = (f: { message: string; blocking: boolean }) => `${f.blocking ? '**Blocking**' : 'Non-blocking'} (${options.reviewer}, round ${options.round}): ${f.message}`;
  const inDiff = (f: ReviewFinding) => !options.commentable || (options.commentable.get(f.file)?.has(f.line) ?? false);
  const comments = all.filter(inDiff).map((f) => ({ path: f.file, line: f.line, body: text(f) }));
  const outside = all.filter((f) => !inDiff(f));
  const verdict =
    findings.blocking.length === 0
      ? `no blocking findings${findings.nonBlocking.length ? `, ${findings.nonBlocking.length} non-blocking` : ''}`
      : `${findings.blocking.length} blocking finding${findings.blocking.length === 1 ? '' : 's'}${findings.nonBlocking.length ? `, ${findings.nonBlocking.length} non-blocking` : ''}`;
  const body = [
    `Cross-review by \`${options.reviewer}\`, round ${options.round}: ${verdict}.`,
    ...(outside.length ? ['', 'Findings outside the diff:', ...outside.map((f) => `- \`${f.file}:${f.line}\` — ${text(f)}`)] : []),
  ].join('\n');
  return { event: 'COMMENT', body, comments };
}
