/**
 * A byte cap on what a command's log keeps (issue 27 item 5). A command Polly runs for a task (its
 * setup, its checks) runs code from the worktree, and its output goes to `.polly/logs/` as it comes
 * so it can be followed; without a cap a 100 MiB line or an endless `yes` is stored whole on the
 * file system `.polly/` lives on. The command's result (the in-memory tail the worker is told:
 * ./shell-command.ts `keepBytes`) is not affected.
 */

/** Bytes of each command's output a log keeps by default (16 MiB). */
export const LOG_MAX_BYTES = 16 * 1024 * 1024;

export interface CappedLog {
  /** Append a chunk of the command's output: the part within the cap, then (once) a line saying the log is cut. */
  write(chunk: Buffer): void;
  /** The command ended: say how many bytes were left out (nothing when none were). Once. */
  close(): void;
  /** The last byte written to the log (0x0a after a marker line): whether the next line needs a newline first. */
  readonly lastByte: number;
}

/**
 * Keep the first `maxBytes` of a command's output, through `append` (which writes to the log and
 * never throws). Past the cap: one line `[polly: output cut at N bytes: this log keeps no more of
 * this command]` as the cut starts (a live view shows it), and at {@link CappedLog.close}
 * `[polly: M bytes of output not kept]`.
 * @param maxBytes  bytes of output kept (default {@link LOG_MAX_BYTES}).
 */
export function cappedLog(append: (data: string | Buffer) => void, maxBytes = LOG_MAX_BYTES): CappedLog {
  let kept = 0;
  let dropped = 0;
  let lastByte = 0x0a;
  return {
    write(chunk) {
      if (chunk.length === 0) return;
      const part = chunk.length <= maxBytes - kept ? chunk : chunk.subarray(0, Math.max(0, maxBytes - kept));
      if (part.length > 0) {
        kept += part.length;
        lastByte = part[part.length - 1]!;
        append(part);
      }
      if (part.length === chunk.length) return;
      if (dropped === 0) append(`${lastByte === 0x0a ? '' : '\n'}[polly: output cut at ${maxBytes} bytes: this log keeps no more of this command]\n`);
      lastByte = 0x0a;
      dropped += chunk.length - part.length;
    },
    close() {
      if (dropped > 0) append(`[polly: ${dropped} bytes of output not kept]\n`);
      dropped = 0;
    },
    get lastByte() {
      return lastByte;
    },
  };
}
