/**
 * Landing order and stacked PRs on the local forge, end to end: real git (a bare origin), the real
 * `claude` implementer and `codex` reviewer against the scripted model server, the Brain as a
 * process, the human through git (test/helpers/human-merge.ts).
 *
 * Three parallel tasks change one file (docs/names.txt) in different places: bravo (line 2),
 * charlie (line 3) and delta (line 4). Adjacent lines conflict in git's merge, so the charlie PR
 * conflicts with both others and bravo and delta do not conflict with each other. A fourth task,
 * foxtrot, needs bravo's change: it is stacked on it (`stacked_on`).
 *
 * 1. `polly pr order` lands bravo and delta first, charlie after them, foxtrot after bravo; each
 *    PR body says so ("Land after #N") once `polly pr sync` has run; the foxtrot PR targets
 *    bravo's branch.
 * 2. A human merges the bravo PR. The next Brain pass: charlie (which conflicts with main now) gets
 *    main merged in by a fix round, its worker resolving the conflict; foxtrot's PR is retargeted to
 *    main and main is merged in (clean, no worker turn); delta's checks run on its merge with main
 *    and stay green. Every branch only gained commits; Polly merged nothing into main.
 * 3. The order and the bodies follow: bravo is gone from them, foxtrot is no longer stacked.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import { git, gitTestEnv, type TestRepo } from '../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { humanMerge } from '../helpers/human-merge.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { readJournalFile, readRegistryFile } from '../helpers/polly-state.js';
import { expectRunsConform } from '../helpers/trace-conformance.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const CLI = join(process.cwd(), 'dist/brain/cli.js');

const NAMES = 'alpha\nbravo\ncharlie\ndelta\necho\nfoxtrot\ngolf\n';

const task = (key: string, word: string, extra = '') => `  - key: ${key}
    title: Capitalise ${word}
    purpose: implement
    worker: claude-code
    reviewer: codex
    prompt: In docs/names.txt, write ${word} in capitals.
    acceptance:
      commands: ["grep -q ${word.toUpperCase()} docs/names.txt"]
${extra}`;

const PLAN = `goal: Capitalise four names
tasks:
${task('bravo', 'bravo')}${task('charlie', 'charlie')}${task('delta', 'delta')}${task('foxtrot', 'foxtrot', '    stacked_on: bravo\n').replace('grep -q FOXTROT docs/names.txt', 'grep -q FOXTROT docs/names.txt && grep -q BRAVO docs/names.txt')}`;

const edit = (word: string) => `      - steps:
          - read: docs/names.txt
          - edit: {path: docs/names.txt, old: "${word}\\n", new: "${word.toUpperCase()}\\n"}
          - finish: "${word} is in capitals."
`;

/** One implementer session per task; charlie's second turn resolves the conflict with bravo's merge. */
const SCRIPT = `sessions:
  - name: implement-bravo
    match: {role: implement, contains: ["write bravo in capitals"]}
    turns:
${edit('bravo')}  - name: implement-charlie
    match: {role: implement, contains: ["write charlie in capitals"]}
    turns:
${edit('charlie')}      - steps:
          - write:
              path: docs/names.txt
              content: |
                alpha
                BRAVO
                CHARLIE
                delta
                echo
                foxtrot
                golf
          - finish: "Kept both sides: BRAVO from main and this task's CHARLIE."
  - name: implement-delta
    match: {role: implement, contains: ["write delta in capitals"]}
    turns:
${edit('delta')}  - name: implement-foxtrot
    match: {role: implement, contains: ["write foxtrot in capitals"]}
    turns:
${edit('foxtrot')}  - name: review
    match: {role: review}
    repeat_last: true
    turns:
      - steps:
          - finish: '{"blocking": [], "non_blocking": []}'
`;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the CLI without blocking the event loop (the scripted model server lives in this process). */
function run(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Ran> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], { cwd, env, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as NodeJS.ErrnoException).code === 'number' ? (error as unknown as { code: number }).code : null) : 0;
      done({ code, stdout, stderr: error && code === null ? `${stderr}\n${error.message}` : stderr });
    });
  });
}

interface OrderJson {
  order: number[];
  prs: Array<{ number: number; after: number[]; stackedOn: number | null }>;
}

let server: ScriptedModelServer | null = null;
afterAll(async () => {
  await server?.close();
  await stopTrackedBrains();
});

describe.skipIf(!SANDBOXED)('landing order and stacked tasks (local forge, real CLIs)', () => {
  it('orders three PRs touching one file and a stacked one, writes "Land after #N" into each body, and after a human merges the first the others get main merged in and stay green, the stacked PR retargeted to main', async () => {
    const { root, repo, origin } = sampleProjectWithOrigin('polly-landing-');
    mkdirSync(join(repo, 'docs'), { recursive: true });
    writeFileSync(join(repo, 'docs/names.txt'), NAMES);
    git(repo, ['add', 'docs/names.txt']);
    git(repo, ['commit', '-q', '-m', 'names']);
    git(repo, ['push', '-q', 'origin', 'main']);
    const env = gitTestEnv();
    expect((await run(['init'], repo, env, 60_000)).code).toBe(0);
    server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
    const brainEnv = { ...env, ...useScriptedModels(repo, server.url, { extra: [[['worktrees', 'setup'], null]] }) };
    writeFileSync(join(root, 'plan.yaml'), PLAN);

    // 1. All four run to ready PRs.
    const first = await run(['run', join(root, 'plan.yaml'), '--yes', '--json'], repo, brainEnv, 900_000);
    let reg = readRegistryFile(repo);
    const byKey = (k: string) => Object.values(reg.tasks).find((t) => t.title === `Capitalise ${k}`)!;
    for (const k of ['bravo', 'charlie', 'delta', 'foxtrot']) expect(byKey(k).status, `${k}: ${byKey(k).statusReason}\n${first.stderr.slice(-3000)}`).toBe('ready');
    const n = { bravo: byKey('bravo').pr!.number, charlie: byKey('charlie').pr!.number, delta: byKey('delta').pr!.number, foxtrot: byKey('foxtrot').pr!.number };
    const bravo = byKey('bravo');
    const foxtrot = byKey('foxtrot');
    // The stacked task started from bravo's branch and its PR targets it.
    expect(foxtrot.stackedOn).toBe(bravo.id);
    expect(reg.pullRequests[String(n.foxtrot)]!.base).toBe(`polly/${bravo.id}`);
    expect(git(origin, ['merge-base', '--is-ancestor', bravo.headCommit!, foxtrot.headCommit!])).toBe('');

    // `polly pr order`: bravo and delta land clean, charlie after both, foxtrot after bravo.
    const ordered = await run(['pr', 'order', '--json'], repo, env, 60_000);
    expect(ordered.code, ordered.stderr).toBe(0);
    const order = JSON.parse(ordered.stdout) as OrderJson;
    const of = (k: keyof typeof n) => order.prs.find((p) => p.number === n[k])!;
    expect(of('bravo').after).toEqual([]);
    expect(of('delta').after).toEqual([]);
    expect(of('charlie').after.sort()).toEqual([n.bravo, n.delta].sort());
    expect(of('foxtrot')).toMatchObject({ after: [n.bravo], stackedOn: n.bravo });
    expect(order.order.indexOf(n.charlie)).toBeGreaterThan(Math.max(order.order.indexOf(n.bravo), order.order.indexOf(n.delta)));
    expect(order.order.indexOf(n.foxtrot)).toBeGreaterThan(order.order.indexOf(n.bravo));

    // `polly pr sync` writes it into each body (the Brain does this every merge pass too).
    const sync1 = await run(['pr', 'sync', '--json'], repo, env, 120_000);
    expect(sync1.code, sync1.stderr).toBe(0);
    reg = readRegistryFile(repo);
    const body = (k: keyof typeof n) => reg.pullRequests[String(n[k])]!.body;
    expect(body('charlie')).toContain(
      `**Land after ${[n.bravo, n.delta]
        .sort((a, b) => order.order.indexOf(a) - order.order.indexOf(b))
        .map((x) => `#${x}`)
        .join(', ')}**`,
    );
    expect(body('charlie')).toContain('`docs/names.txt`');
    expect(body('foxtrot')).toContain(`**Land after #${n.bravo}**: this PR is stacked on #${n.bravo}`);
    expect(body('bravo')).toContain('Lands clean');
    expect(body('delta')).toContain('Lands clean');
    expect(reg.landing?.order).toEqual(order.order);

    // 2. A human merges the first PR of the order, bravo's, with a merge commit.
    const heads = Object.fromEntries(['charlie', 'delta', 'foxtrot'].map((k) => [k, git(origin, ['rev-parse', `polly/${byKey(k).id}`])]));
    const testRepo: TestRepo = {
      dir: repo,
      remote: origin,
      root,
      git: (a) => git(repo, a),
      write: (f, c) => writeFileSync(join(repo, f), c),
      commitAll: (m) => {
        git(repo, ['commit', '-q', '-am', m]);
        return git(repo, ['rev-parse', 'HEAD']);
      },
    };
    const merged = humanMerge(testRepo, `polly/${bravo.id}`, 'merge');
    const brain = await run(['brain', '--exit-when-idle', '--no-llm', '--all-prs'], repo, brainEnv, 900_000);
    reg = readRegistryFile(repo);
    const log = `${brain.stderr.slice(-4000)}\n${brain.stdout.slice(-2000)}`;
    expect(byKey('bravo').status, log).toBe('done');
    for (const k of ['charlie', 'delta', 'foxtrot']) expect(byKey(k).status, `${k}: ${byKey(k).statusReason}\n${log}`).toBe('ready');
    const journal = readJournalFile(repo);

    // charlie: main merged in by a fix round (the conflict resolved by the same session), green, pushed fast-forward.
    const charlie = byKey('charlie');
    expect(charlie.fixRound).toMatchObject({ action: 'CONFLICTS', baseMerge: { ref: 'origin/main', commit: merged, files: ['docs/names.txt'] } });
    const charlieHead = git(origin, ['rev-parse', `polly/${charlie.id}`]);
    expect(git(origin, ['rev-list', '--parents', '-n', '1', charlieHead]).split(' ').slice(1)).toEqual([heads.charlie, merged]);
    expect(git(origin, ['show', `${charlieHead}:docs/names.txt`])).toBe('alpha\nBRAVO\nCHARLIE\ndelta\necho\nfoxtrot\ngolf');
    expect(charlie.checks.map((c) => c.exitCode)).toEqual([0]);

    // foxtrot: retargeted to main, main merged in without a worker turn, green.
    expect(journal.filter((e) => e.kind === 'pr.retargeted').map((e) => e.data)).toEqual([
      expect.objectContaining({ number: n.foxtrot, taskId: foxtrot.id, from: `polly/${bravo.id}`, to: 'main', parentTaskId: bravo.id, parentNumber: n.bravo }),
    ]);
    expect(reg.pullRequests[String(n.foxtrot)]!.base).toBe('main');
    expect(byKey('foxtrot').baseBranch).toBe('main');
    expect(byKey('foxtrot').fixRound).toMatchObject({ action: 'CONFLICTS', baseMerge: { ref: 'origin/main', commit: merged, files: [] } });
    const foxtrotHead = git(origin, ['rev-parse', `polly/${foxtrot.id}`]);
    expect(git(origin, ['rev-list', '--parents', '-n', '1', foxtrotHead]).split(' ').slice(1)).toEqual([heads.foxtrot, merged]);
    expect(byKey('foxtrot').checks.map((c) => c.exitCode)).toEqual([0]);
    expect(server.requests.filter((r) => r.session === 'implement-foxtrot' && (r.turnIndex ?? 0) > 0)).toHaveLength(0);

    // delta: no conflict with main; Polly's check of its merge with main stays green, no round.
    const deltaPr = reg.pullRequests[String(n.delta)]!;
    expect(deltaPr.localCheck).toMatchObject({ headCommit: heads.delta, baseCommit: merged, conclusion: 'success' });
    expect(byKey('delta').fixRound ?? null).toBeNull();
    expect(git(origin, ['rev-parse', `polly/${byKey('delta').id}`])).toBe(heads.delta);

    // Polly merged nothing into main and never rewrote a branch.
    expect(git(origin, ['rev-parse', 'main'])).toBe(merged);
    for (const k of ['charlie', 'delta', 'foxtrot']) expect(git(origin, ['merge-base', '--is-ancestor', heads[k]!, `polly/${byKey(k).id}`])).toBe('');

    // 3. The order and the bodies follow the merge.
    const sync2 = await run(['pr', 'sync', '--json'], repo, env, 120_000);
    expect(sync2.code, sync2.stderr).toBe(0);
    reg = readRegistryFile(repo);
    expect(reg.landing!.order).not.toContain(n.bravo);
    expect(reg.landing!.stackedOn).toEqual({});
    expect(body('foxtrot')).not.toContain('stacked on');
    expect(body('charlie')).not.toContain(`#${n.bravo}`);
    expect(journal.filter((e) => e.kind === 'pr.landing_order').length).toBeGreaterThanOrEqual(1);
    expect(readFileSync(join(repo, '.polly/journal.jsonl'), 'utf8')).not.toContain('"kind":"pr.merge"');
    expect(await expectRunsConform(repo)).toBeGreaterThanOrEqual(4);
  }, 1_800_000);
});
