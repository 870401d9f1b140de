/**
 * Markdown written by agents and people (PR bodies, review bodies) as HTML for the dashboard, safe
 * to put in a page: markdown-it (https://github.com/markdown-it/markdown-it, CommonMark) with raw
 * HTML disabled, so `<script>` or `<img onerror>` in the text is shown as text, never markup; its
 * link check refuses `javascript:`, `vbscript:`, `file:` and non-image `data:` URLs, so a link can
 * only go to a web page. Control and bidirectional characters are made visible first
 * (brain/core/visible-text.ts), as everywhere else on the pages. The page's Content-Security-Policy
 * (img-src 'self') keeps a Markdown image from loading anything from elsewhere.
 */
import MarkdownIt from 'markdown-it';
import { visibleText } from '../core/visible-text.js';

const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
// Links leave the dashboard: no Referer (the session's root is in the page's URL), no opener.
const link = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx]!.attrSet('rel', 'noopener noreferrer nofollow');
  return link(tokens, idx, options, env, self);
};

/** `text` (Markdown) as sanitised HTML (see the module doc). Pure. */
export function renderMarkdown(text: string): string {
  return md.render(visibleText(text.replace(/\r\n?/g, '\n')));
}
