/**
 * A workflow library: the workflows one agent area may run, each admitted or refused at load time.
 *
 * Loading checks every workflow exhaustively (`checker.ts`); a workflow with a `polly:` block is
 * checked with Polly's guarantees added (`guarantees.ts`). A refused workflow stays listed — with
 * the violated invariants as its reasons — but the runtime will not start it. A file that does not
 * parse is listed as refused with the parse error (file:line:column), so one bad edit does not take
 * the other workflows down.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { PollyError, isPollyError } from '../brain/core/errors.js';
import { builtinWorkflowsDir } from '../brain/core/install-paths.js';
import { checkWorkflow, type CheckResult } from './check/checker.js';
import { admissionKey, type AdmissionCache } from './check/admission-cache.js';
import { DEFAULT_GUARANTEE_POLICY, withPollyGuarantees, type GuaranteePolicy } from './check/guarantees.js';
import { WORKFLOW_FILE, loadWorkflow } from './load-workflow.js';
import type { EventRef, InvariantDecl, Workflow } from './workflow-schema.js';

/** One guarantee a workflow was admitted under: an invariant's name and what it says. */
export interface Guarantee {
  name: string;
  /** The pattern in words, e.g. `post_brief requires_before APPROVED`. */
  says: string;
}

/** A workflow of the library, admitted or refused. */
export interface LibraryEntry {
  name: string;
  /** The workflow file (or directory, when it did not load). */
  file: string;
  admitted: boolean;
  /** The checked workflow (with Polly's guarantees when it has a `polly:` block); null when it did not load. */
  workflow: Workflow | null;
  /** The checker's verdict; null when the file did not load. */
  check: CheckResult | null;
  /** The checker's one-line verdict (`admitted: NAME — …` / `REFUSED: NAME`). */
  line: string;
  /** Refused: the violated invariant names, or the load error. Admitted: []. */
  reasons: string[];
  guarantees: Guarantee[];
  /** Effect kind → the agent tool that performs it. */
  tools: Record<string, string>;
  /** The run key template, e.g. `brief:{channel}:{day}`. */
  key: string | null;
  description: string;
}

export interface WorkflowLibrary {
  /**
   * Every workflow, in load order, then the refused duplicates: a file whose name an earlier
   * source already holds is listed as `REFUSED: NAME` with reason `duplicate-name: …` and is
   * never served (`get` returns the first one).
   */
  entries(): LibraryEntry[];
  /** The served entry named `name`, or undefined. */
  get(name: string): LibraryEntry | undefined;
  /**
   * Check and add an in-memory workflow (e.g. a compiled plan task); the same workflow again
   * returns its entry. With `admissions`, a verdict stored there under the workflow's content hash
   * is used instead of a check (a plan's verdicts recorded at admission: brain/plan/plan-library.ts).
   * @throws PollyError `bad_input` when another workflow has the name.
   */
  add(workflow: Workflow, admissions?: AdmissionCache): LibraryEntry;
}

export interface WorkflowLibraryOptions {
  /** Policy for Polly's guarantees (default: {@link DEFAULT_GUARANTEE_POLICY}, 5 dispatches per turn). */
  policy?: GuaranteePolicy;
  /** In-memory workflows to add (checked like files). */
  workflows?: Workflow[];
  /**
   * Verdicts kept between processes (./check/admission-cache.ts) for the sources and `workflows`
   * (not for `add`): a workflow whose key is stored is not searched again. Default: none.
   */
  admissions?: AdmissionCache;
}

/** The built-in workflow directories: `workflows/customer-brief` and `workflows/polly-task`. */
export function builtinWorkflowDirs(): string[] {
  return ['customer-brief', 'polly-task'].map((n) => join(builtinWorkflowsDir(), n));
}

/**
 * Expand sources into workflow files: a directory holding `workflow.yaml` is one workflow; any
 * other directory contributes each `<sub>/workflow.yaml` (sorted); a file is itself.
 * @throws PollyError `bad_input` when a source does not exist.
 */
export function workflowFiles(sources: string[]): string[] {
  const out: string[] = [];
  for (const src of sources) {
    const path = resolve(src);
    if (!existsSync(path))
      throw new PollyError('bad_input', `workflow source ${JSON.stringify(src)} does not exist. Pass a directory holding ${WORKFLOW_FILE}, or a directory of such directories.`, {
        details: { path: src },
      });
    if (!statSync(path).isDirectory()) {
      out.push(path);
    } else if (existsSync(join(path, WORKFLOW_FILE))) {
      out.push(join(path, WORKFLOW_FILE));
    } else {
      for (const sub of readdirSync(path).sort()) {
        const f = join(path, sub, WORKFLOW_FILE);
        if (existsSync(f)) out.push(f);
      }
    }
  }
  return out;
}

function refText(r: EventRef): string {
  const parts = [...r.names, ...r.tools.map((t) => `tool:${t}`)];
  const what = parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
  return r.when ? `${what} when ${r.when}` : what;
}

/** An invariant in words (pattern and events), for `workflow_list`. */
export function describeInvariant(inv: InvariantDecl): string {
  switch (inv.pattern) {
    case 'never':
      return `never ${refText(inv.event)}`;
    case 'requires_before':
      return `${refText(inv.event)} only after ${inv.requires.map(refText).join(' and ')}${inv.reset_by ? ` (again after ${refText(inv.reset_by)})` : ''}`;
    case 'at_most':
      return `at most ${inv.count} × ${refText(inv.event)}`;
    case 'eventually_after':
      return `every ${refText(inv.event)} is followed by ${refText(inv.then)}`;
    case 'terminates':
      return 'every path terminates';
  }
}

/**
 * Check a workflow (adding Polly's guarantees when it has a `polly:` block) into a library entry;
 * with `admissions`, a verdict stored for the same checked workflow and checker is reused, and a
 * new one is stored.
 */
export function checkedEntry(loaded: Workflow, policy: GuaranteePolicy, file = loaded.file, admissions?: AdmissionCache): LibraryEntry {
  let wf: Workflow;
  try {
    wf = loaded.polly ? withPollyGuarantees(loaded, policy) : loaded;
  } catch (error) {
    if (!isPollyError(error)) throw error;
    return {
      name: loaded.name,
      file,
      admitted: false,
      workflow: null,
      check: null,
      line: `REFUSED: ${loaded.name}`,
      reasons: [error.message],
      guarantees: [],
      tools: {},
      key: null,
      description: loaded.description,
    };
  }
  const check = admittedBefore(wf, admissions);
  return {
    name: wf.name,
    file,
    admitted: check.admitted,
    workflow: wf,
    check,
    line: check.line,
    reasons: check.admitted ? [] : check.violations.map((v) => v.invariant),
    guarantees: wf.invariants.map((inv) => ({ name: inv.name, says: describeInvariant(inv) })),
    tools: Object.fromEntries(wf.effects.map((e) => [e.kind, e.tool])),
    key: wf.key,
    description: wf.description,
  };
}

/** The stored verdict for `wf` in `admissions`, else a fresh check (stored there). */
function admittedBefore(wf: Workflow, admissions: AdmissionCache | undefined): CheckResult {
  if (!admissions) return checkWorkflow(wf);
  const key = admissionKey(wf);
  const stored = admissions.get(key);
  if (stored) return stored;
  const check = checkWorkflow(wf);
  admissions.put(key, check);
  return check;
}

/** Load and check one workflow file into a library entry (never throws for a bad workflow). */
export function loadLibraryEntry(file: string, policy: GuaranteePolicy, admissions?: AdmissionCache): LibraryEntry {
  let loaded: Workflow;
  try {
    loaded = loadWorkflow(file);
  } catch (error) {
    if (!isPollyError(error)) throw error;
    const name = basename(dirname(file));
    return { name, file, admitted: false, workflow: null, check: null, line: `REFUSED: ${name}`, reasons: [error.message], guarantees: [], tools: {}, key: null, description: '' };
  }
  return checkedEntry(loaded, policy, file, admissions);
}

function duplicate(name: string, a: string, b: string): PollyError {
  return new PollyError('bad_input', `two workflows are named ${JSON.stringify(name)}: ${a} and ${b}. Rename one (the name is part of every run's identity).`, {
    details: { name, files: [a, b] },
  });
}

/** The refused entry for a workflow file whose name `first` already holds (the first one wins). */
function duplicateEntry(entry: LibraryEntry, first: LibraryEntry): LibraryEntry {
  const reason = `duplicate-name: ${JSON.stringify(entry.name)} is already served from ${first.file}; this copy (${entry.file}) is not served. Rename it (the name is part of every run's identity).`;
  return { ...entry, admitted: false, workflow: null, line: `REFUSED: ${entry.name} (duplicate name; ${entry.file})`, reasons: [reason], guarantees: [] };
}

/**
 * Build a library from workflow sources (see {@link workflowFiles}) and in-memory workflows (e.g.
 * a plan's compiled task workflows), checking each. More can be added later with `add`. A source
 * file whose workflow name an earlier file already has is refused (listed, not served: see
 * {@link WorkflowLibrary.entries}); the rest are served.
 * @throws PollyError `bad_input` for a missing source, or an in-memory workflow whose name is taken (names both).
 */
export function createWorkflowLibrary(sources: string[], options: WorkflowLibraryOptions = {}): WorkflowLibrary {
  const policy = options.policy ?? { ...DEFAULT_GUARANTEE_POLICY };
  const byName = new Map<string, LibraryEntry>();
  const duplicates: LibraryEntry[] = [];
  const put = (entry: LibraryEntry): LibraryEntry => {
    const other = byName.get(entry.name);
    if (other) throw duplicate(entry.name, other.file, entry.file);
    byName.set(entry.name, entry);
    return entry;
  };
  for (const file of workflowFiles(sources)) {
    const entry = loadLibraryEntry(file, policy, options.admissions);
    const first = byName.get(entry.name);
    if (first) duplicates.push(duplicateEntry(entry, first));
    else put(entry);
  }
  for (const wf of options.workflows ?? []) put(checkedEntry(wf, policy, wf.file, options.admissions));
  return {
    entries: () => [...byName.values(), ...duplicates],
    get: (name) => byName.get(name),
    add(wf, admissions) {
      const other = byName.get(wf.name);
      if (other?.workflow && other.file === wf.file && JSON.stringify(other.workflow.transitions) === JSON.stringify(wf.transitions)) return other;
      // Not the library's file cache: a compiled plan's verdicts live on its plan record (`admissions`).
      return put(checkedEntry(wf, policy, wf.file, admissions));
    },
  };
}
