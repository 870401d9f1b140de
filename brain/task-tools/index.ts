/**
 * The tools of the `polly-task` workflow, by the tool name each effect kind is bound to
 * (workflows/polly-task/workflow.yaml). The Brain process looks an order's tool up here.
 * There is no `merge` tool, and no `force_push`: Polly never merges a PR. (`integrate_base` merges
 * the PR's moved base INTO the task branch in its worktree, the fix for a conflict; the PR itself
 * is merged only by a human.)
 */
import { dispatchReviewTool } from './dispatch-review.js';
import { dispatch } from './dispatch.js';
import { integrateBaseTool } from './integrate-base.js';
import { replyPrTool } from './reply-pr.js';
import { markReadyTool } from './mark-ready.js';
import { openDraftPrTool } from './open-draft-pr.js';
import { pushTool } from './push.js';
import { runAcceptanceTool } from './run-acceptance.js';
import { sendFollowup } from './send-followup.js';
import type { TaskTool } from './types.js';

/** Effect tool name → implementation. */
export const TASK_TOOLS: Readonly<Record<string, TaskTool>> = Object.freeze({
  dispatch,
  send_followup: sendFollowup,
  run_acceptance: runAcceptanceTool,
  push: pushTool,
  open_draft_pr: openDraftPrTool,
  dispatch_review: dispatchReviewTool,
  mark_ready: markReadyTool,
  integrate_base: integrateBaseTool,
  reply_pr: replyPrTool,
});
