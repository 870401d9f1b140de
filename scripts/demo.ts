/**
 * `npm run demo`: the end-to-end demo on the embedded default (scripted model, local forge).
 * PLACEHOLDER: the demo is not built yet — it lands with issue 9. Until then this says so plainly
 * and exits 1, so nobody mistakes it for a passing demo.
 */
process.stderr.write('polly demo: not built yet (placeholder) — the end-to-end demo lands with issue 9\n');
process.exitCode = 1;
export {};
