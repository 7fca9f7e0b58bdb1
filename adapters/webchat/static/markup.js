// markup.js — message text as DOM nodes: plain text, the HTML subset a bot
// may use (Telegram's) and Telegram-style Markdown. Everything is built
// with createElement and text nodes: nothing of the bot's markup is ever
// parsed as HTML by the browser, and links lead only to web and mail
// addresses.

// el returns a new element with the class cls and the text text, each
// when given.
export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) { e.className = cls; }
  if (text !== undefined) { e.textContent = text; }
  return e;
}

// safeURL returns u as an absolute http(s) or mailto URL, or '' for
// anything else (javascript:, data: and the like are never followed).
export function safeURL(u) {
  if (!u) { return ''; }
  try {
    const p = new URL(u, location.href);
    if (p.protocol === 'http:' || p.protocol === 'https:' || p.protocol === 'mailto:') { return p.href; }
  } catch { /* invalid */ }
  return '';
}

// link makes a an external link to href, opened in a new tab.
function link(a, href) {
  a.href = href;
  a.target = '_blank';
  a.rel = 'noopener noreferrer';
  return a;
}

// renderText appends text to parent as the parse mode mode says: 'HTML',
// 'Markdown', or anything else for plain text.
export function renderText(parent, text, mode) {
  if (mode === 'HTML') {
    renderHTML(parent, text);
  } else if (mode === 'Markdown') {
    renderMarkdown(parent, text);
  } else {
    parent.textContent = text;
  }
}

// The allowed HTML tags and the element each becomes. renderHTML tokenizes
// the bot's HTML itself: other tags are dropped (their text kept),
// script-like elements dropped with their content, and attributes other
// than href and a spoiler class ignored.
const ALLOWED = new Map(Object.entries({
  b: 'b', strong: 'strong', i: 'i', em: 'em', u: 'u', ins: 'ins', s: 's', strike: 's', del: 'del',
  code: 'code', pre: 'pre', blockquote: 'blockquote', br: 'br', a: 'a', span: 'span', 'tg-spoiler': 'span',
}));
const DROPPED = new Set(['script', 'style', 'template', 'iframe', 'object', 'embed', 'noscript', 'title', 'textarea', 'svg', 'math']);
const TAG = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g;
const ENTITY = /&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z]{2,8});/g;
const ENTITIES = new Map(Object.entries({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' }));

function decodeEntities(s) {
  return s.replace(ENTITY, (all, e) => {
    if (e[0] === '#') {
      const n = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return n > 0 && n <= 0x10FFFF && (n < 0xD800 || n > 0xDFFF) ? String.fromCodePoint(n) : all;
    }
    return ENTITIES.get(e.toLowerCase()) ?? all;
  });
}

// attribute returns the decoded value of the attribute name in a tag's
// attribute text, or ''.
function attribute(attrs, name) {
  const m = new RegExp(`(?:^|[\\s/])${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s"'>]+))`, 'i').exec(attrs);
  return m ? decodeEntities(m[1] ?? m[2] ?? m[3]) : '';
}

function renderHTML(parent, html) {
  const stack = [{ name: '', node: parent }];
  let skip = 0; // depth inside dropped elements such as <script>
  let last = 0;
  const text = (s) => {
    if (s && !skip) { stack.at(-1).node.appendChild(document.createTextNode(decodeEntities(s))); }
  };
  for (const m of html.matchAll(TAG)) {
    text(html.slice(last, m.index));
    last = m.index + m[0].length;
    const closing = m[1] === '/';
    const name = m[2].toLowerCase();
    const attrs = m[3];
    if (DROPPED.has(name)) {
      if (closing) { skip = Math.max(0, skip - 1); } else if (!/\/\s*$/.test(attrs)) { skip++; }
      continue;
    }
    const tag = ALLOWED.get(name);
    if (skip || !tag) { continue; }
    if (closing) {
      const open = stack.findLastIndex((s, i) => i > 0 && s.name === name);
      if (open > 0) { stack.length = open; }
      continue;
    }
    const out = document.createElement(tag);
    if (tag === 'a') {
      const href = safeURL(attribute(attrs, 'href'));
      if (href) { link(out, href); }
    }
    if (name === 'tg-spoiler' || (name === 'span' && /(^|\s)tg-spoiler(\s|$)/.test(attribute(attrs, 'class')))) {
      makeSpoiler(out);
    }
    stack.at(-1).node.appendChild(out);
    if (tag !== 'br') { stack.push({ name, node: out }); }
  }
  text(html.slice(last));
}

function makeSpoiler(span) {
  span.className = 'spoiler';
  span.tabIndex = 0;
  span.setAttribute('role', 'button');
  span.setAttribute('aria-label', 'Spoiler: activate to show');
  span.addEventListener('click', () => span.classList.toggle('shown'));
  span.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      span.classList.toggle('shown');
    }
  });
}

// Telegram-style Markdown: ```pre```, `code`, *bold*, **bold**, _italic_,
// __underline__, ~strike~, [text](url). No nesting. The groups, in order:
// pre, code, bold, bold, underline, italic, strike, link text, link URL.
const MD = /```(?:[A-Za-z0-9_+-]*\n)?([\s\S]*?)```|`([^`\n]+)`|\*\*([^*\n]+)\*\*|\*([^*\n]+)\*|__([^_\n]+)__|_([^_\n]+)_|~([^~\n]+)~|\[([^\]\n]+)\]\(([^()\s]+)\)/g;
const MD_TAGS = ['pre', 'code', 'strong', 'strong', 'u', 'em', 's'];

function renderMarkdown(parent, text) {
  let last = 0;
  for (const m of text.matchAll(MD)) {
    if (m.index > last) { parent.appendChild(document.createTextNode(text.slice(last, m.index))); }
    const group = MD_TAGS.findIndex((_, i) => m[i + 1] !== undefined);
    let node;
    if (group >= 0) {
      node = el(MD_TAGS[group], '', m[group + 1]);
    } else {
      const href = safeURL(m[9]);
      node = href ? link(el('a', '', m[8]), href) : document.createTextNode(m[0]);
    }
    parent.appendChild(node);
    last = m.index + m[0].length;
  }
  if (last < text.length) { parent.appendChild(document.createTextNode(text.slice(last))); }
}
