/**
 * Hosting the LLM brain of each open goal inside the Brain process: one turn at a time, the
 * session id kept on the goal so a restarted Brain resumes it, and the leftovers of a crashed
 * Brain's goal brains stopped.
 */
import { signalGroupOrPid } from '../../workers/proc/kill.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { isGoalFinal } from '../core/vocabulary.js';
import { endGoal, transitionGoal } from '../registry/goal-lifecycle.js';
import type { BrainProcessDeps, GoalBrain } from './brain-deps.js';

/** End a goal as failed with a reason the user sees (`polly goal` prints it and exits 1). */
export async function failGoal(deps: BrainProcessDeps, goalId: string, reason: string): Promise<void> {
  deps.log?.(`[polly] goal ${goalId} failed: ${reason}`);
  await deps.store.update((draft, tx) => {
    const goal = draft.goals[goalId];
    if (!goal || isGoalFinal(goal.status)) return;
    goal.brainReport = reason;
    endGoal(goal, 'failed', tx, { reason });
  });
}

/** Kill the process group of an LLM brain a crashed Brain left behind (recorded on its goal). */
export async function reapPreviousGoalBrains(deps: BrainProcessDeps, log: (l: string) => void): Promise<void> {
  const reg = await deps.store.read();
  for (const goal of Object.values(reg.goals)) {
    if (goal.brainPid && goal.brainPid !== process.pid && pidAlive(goal.brainPid)) {
      signalGroupOrPid(goal.brainPid, 'SIGTERM');
      log(`[polly] stopped the LLM brain a previous Brain left running (pid ${goal.brainPid}); its session resumes`);
    }
  }
}

/** One turn of a goal's LLM brain: records the turn, sends `text`, keeps the session id and report; a first turn that fails before any plan fails the goal. */
export async function brainTurn(deps: BrainProcessDeps, goalId: string, entry: { brain: GoalBrain; busy: boolean; cursor: number }, text: string, now: () => Date): Promise<void> {
  entry.busy = true;
  try {
    await deps.store.update((draft, tx) => {
      const seq = (draft.turn?.seq ?? 0) + 1;
      draft.turn = { seq, startedAt: now().toISOString(), dispatches: 0 };
      tx.emit('brain.turn', { goalId, turn: seq });
    });
    const result = await entry.brain.turn(text);
    const sessionId = result.sessionId ?? entry.brain.sessionId();
    const goalNow = (await deps.store.read()).goals[goalId];
    if (!result.ok && goalNow && goalNow.planIds.length === 0 && !goalNow.brainSessionId) {
      // The first turn failed before any plan (e.g. no API key: "Not logged in"): say so and stop.
      await failGoal(deps, goalId, `the Brain's model session failed: ${result.text.slice(0, 1000)}`);
      return;
    }
    await deps.store.update((draft, tx) => {
      const goal = draft.goals[goalId];
      if (goal) {
        goal.brainSessionId = sessionId;
        goal.brainReport = result.text;
        if (goal.status === 'open') transitionGoal(goal, 'planning');
      }
      tx.emit('brain.turn_ended', { goalId, ok: result.ok, text: result.text.slice(0, 2000) });
    });
  } finally {
    entry.busy = false;
  }
}
