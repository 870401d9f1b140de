/**
 * brain/ui/markdown.ts `renderMarkdown` (issue 32 item 9): Markdown from agents and people becomes
 * HTML without any of its own raw HTML, script links or hidden characters. The browser side (a
 * hostile PR body runs nothing in Chromium) is in test/brain/ui/ui-pages.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { renderMarkdown } from '../../../brain/ui/markdown.js';

describe('renderMarkdown', () => {
  it('renders CommonMark: headings, emphasis, code, lists, links with rel', () => {
    expect(renderMarkdown('## What\n\n**bold** `code`\n\n- a\n- b\n\n[docs](https://example.com/d)')).toBe(
      '<h2>What</h2>\n<p><strong>bold</strong> <code>code</code></p>\n<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n' +
        '<p><a href="https://example.com/d" rel="noopener noreferrer nofollow">docs</a></p>\n',
    );
  });

  it('shows raw HTML as text: no tag, no attribute of the input reaches the page', () => {
    const out = renderMarkdown('<script>alert(1)</script>\n\n<img src=x onerror=alert(1)> and <b onclick="x()">b</b>');
    expect(out).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n<p>&lt;img src=x onerror=alert(1)&gt; and &lt;b onclick=&quot;x()&quot;&gt;b&lt;/b&gt;</p>\n');
  });

  it('refuses script and data URLs in links and images (left as text)', () => {
    for (const url of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'vbscript:x', 'file:///etc/passwd', 'data:text/html,<b>hi</b>']) {
      const out = renderMarkdown(`[a](${url}) ![i](${url})`);
      expect(out, url).not.toMatch(/<a |<img /);
    }
  });

  it('makes control and bidirectional characters visible; CRLF is a line end', () => {
    expect(renderMarkdown('abc\u202edef')).toBe('<p>abc\\u{202e}def</p>\n');
    expect(renderMarkdown('a\r\nb\rc')).toBe('<p>a\nb\nc</p>\n');
  });
});
