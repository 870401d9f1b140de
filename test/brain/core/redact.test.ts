/**
 * brain/core/redact.ts: the one redaction the worker runner, the forge and the gate's log use.
 */
import { describe, expect, it } from 'vitest';
import { redactSecrets } from '../../../brain/core/redact.js';

describe('redactSecrets', () => {
  it('replaces known values verbatim, but never values under 4 characters', () => {
    expect(redactSecrets('key=abcd1234 and ab and abcd1234', { values: ['abcd1234', 'ab', null], shapes: false })).toBe('key=[redacted] and ab and [redacted]');
  });

  it('replaces token shapes and credential values, keeping the name and the auth scheme', () => {
    const out = redactSecrets('curl -H "Authorization: token s3cr3t" -d password=hunter22 ghp_abcdefghijklmnopqrstuvwxyz0123 AKIAABCDEFGHIJKLMNOP', { marker: '[X]' });
    expect(out).toBe('curl -H "Authorization: token [X]" -d password=[X] [X] [X]');
  });

  it('leaves secret-shaped text alone when shapes is false, and plain text alone always', () => {
    expect(redactSecrets('ghp_abcdefghijklmnopqrstuvwxyz0123', { shapes: false })).toBe('ghp_abcdefghijklmnopqrstuvwxyz0123');
    expect(redactSecrets('git push origin polly/t1')).toBe('git push origin polly/t1');
  });
});
