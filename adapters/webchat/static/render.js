// render.js — the conversation on the page: ChatView shows the history a
// connection starts with, new messages (text with its markup, a quote of
// the message replied to, attachments of every kind, buttons), edits of
// bot messages in place, and deletions. Nodes are built with createElement and textContent only (text
// markup through markup.js), so nothing a message holds runs as script.

import { el, renderText, safeURL } from './markup.js';

const STICK_PX = 80; // autoscroll while the view is this close to the bottom

// The media types each element can show, for attachments sent as bytes.
const IMAGE_TYPE = /^image\//;
const VIDEO_TYPE = /^(video\/|application\/ogg$)/;
const AUDIO_TYPE = /^(audio\/|application\/ogg$|video\/webm$)/;
// File names of videos and of animated stickers (Lottie), for attachments
// by URL.
const VIDEO_PATH = /\.(mp4|m4v|mov|webm|mkv|ogv)$/i;
const LOTTIE_PATH = /\.tgs$/i;

// What each kind of attachment is called, and its icon, where the page
// shows it as a link.
const KIND_LABELS = {
  photo: ['🖼', 'Photo'],
  document: ['📄', 'Document'],
  video: ['🎬', 'Video'],
  video_note: ['🎬', 'Video message'],
  animation: ['🖼', 'Animation'],
  sticker: ['🖼', 'Sticker'],
  audio: ['🎵', 'Audio'],
  voice: ['🎤', 'Voice message'],
};

// ChatView renders the messages of one chat into the log element; empty is
// the hint shown while there is none. userId returns the page's user ID,
// whose messages show as "You". onPress(messageID, data) sends a button's
// callback and reports whether it went out. fileURL(id) returns the URL
// of a file the server keeps by reference (an attachment's "file"), for
// this connection.
export class ChatView {
  #log;
  #empty;
  #userId;
  #onPress;
  #fileURL;
  #byId = new Map(); // message ID -> its element

  constructor({ log, empty, userId, onPress, fileURL }) {
    this.#log = log;
    this.#empty = empty;
    this.#userId = userId;
    this.#onPress = onPress;
    this.#fileURL = fileURL;
  }

  // clear removes every message.
  clear() {
    for (const box of this.#byId.values()) { box.remove(); }
    this.#byId.clear();
    this.#empty.hidden = false;
  }

  // showHistory replaces the conversation with messages, oldest first.
  showHistory(messages) {
    this.clear();
    const frag = document.createDocumentFragment();
    for (const m of messages) { frag.appendChild(this.#renderSafely(m)); }
    this.#log.appendChild(frag);
    this.#empty.hidden = this.#byId.size > 0;
  }

  // append adds a message at the end, unless it is shown already, and
  // scrolls to it if the view was at the bottom or the message is the
  // user's own.
  append(m) {
    if (!m || typeof m !== 'object' || !m.id || this.#byId.has(m.id)) { return; }
    const stick = this.nearBottom() || this.#isMine(m);
    this.#empty.hidden = true;
    this.#log.appendChild(this.#renderSafely(m));
    if (stick) { this.scrollToBottom(); }
  }

  // edit shows an edit of a bot message in place: its text (rendered as a
  // new message's is), parse mode and buttons become the edit's (no
  // buttons removes them), while its author, time, reply and attachments
  // stay, and it is marked edited. The new parts are built before the old
  // ones are touched, so an edit that cannot be rendered throws and leaves
  // the message as it was. An edit of a message the page does not show is
  // ignored.
  edit(e) {
    if (!e || typeof e !== 'object' || typeof e.id !== 'string') { return; }
    const box = this.#byId.get(e.id);
    if (!box) { return; }
    const text = typeof e.text === 'string' ? e.text : '';
    let body = null;
    if (text) {
      body = el('div', 'text');
      renderText(body, text, e.parse_mode);
    }
    const rows = Array.isArray(e.buttons) ? e.buttons.filter(Array.isArray) : [];
    const kb = rows.length ? this.#renderKeyboard(e.id, rows) : null;
    const stick = this.nearBottom();

    box.querySelector(':scope > .keyboard')?.remove();
    const oldBody = box.querySelector(':scope > .text');
    if (oldBody) {
      if (body) { oldBody.replaceWith(body); } else { oldBody.remove(); }
    } else if (body) {
      // The text goes where a new message has it: before its attachments.
      box.insertBefore(body, box.querySelector(':scope > .attachments'));
    }
    if (kb) { box.appendChild(kb); }
    const meta = box.querySelector(':scope > .meta');
    if (meta) { markEdited(meta, e.edited); }
    // Replies that quote the message quote its new text.
    for (const q of this.#log.querySelectorAll('.reply-to')) {
      if (q.dataset.replyTo === e.id) { q.textContent = replyExcerpt(box); }
    }
    if (stick) { this.scrollToBottom(); }
  }

  // remove takes a message off the page, for a deletion: replies that
  // quote it say it was deleted. A message the page does not show is
  // ignored.
  remove(id) {
    if (typeof id !== 'string') { return; }
    const box = this.#byId.get(id);
    if (!box) { return; }
    box.remove();
    this.#byId.delete(id);
    for (const q of this.#log.querySelectorAll('.reply-to')) {
      if (q.dataset.replyTo === id) {
        q.textContent = '↩ (deleted message)';
        q.classList.add('deleted');
        q.disabled = true;
      }
    }
    this.#empty.hidden = this.#byId.size > 0;
  }

  nearBottom() {
    const l = this.#log;
    return l.scrollHeight - l.scrollTop - l.clientHeight < STICK_PX;
  }

  scrollToBottom() { this.#log.scrollTop = this.#log.scrollHeight; }

  #isMine(m) { return !m.bot && m.from?.id === this.#userId(); }

  // renderSafely renders m, or, if m cannot be shown, a notice in its
  // place, so that one bad message never stops the history or the
  // messages after it.
  #renderSafely(m) {
    try {
      return this.#renderMessage(m);
    } catch (e) {
      console.warn(`webchat: cannot show message ${m?.id}:`, e);
      const box = el('article', `msg broken ${m?.bot ? 'bot' : 'user'}`);
      box.appendChild(el('div', 'text', '(this message cannot be shown)'));
      if (typeof m?.id === 'string' && m.id) {
        box.dataset.id = m.id;
        this.#byId.set(m.id, box);
      }
      return box;
    }
  }

  #renderMessage(m) {
    const mine = this.#isMine(m);
    const box = el('article', `msg ${m.bot ? 'bot' : 'user'}${mine ? ' mine' : ''}`);
    box.dataset.id = m.id;
    const meta = el('div', 'meta');
    meta.appendChild(el('span', 'author', mine ? 'You' : (m.from?.name || (m.bot ? 'Bot' : 'Guest'))));
    const when = new Date(m.time);
    if (!isNaN(when)) {
      const t = el('time', '', when.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }));
      t.dateTime = m.time;
      meta.appendChild(t);
    }
    if (m.edited) { markEdited(meta, m.edited); }
    box.appendChild(meta);
    if (m.reply_to) {
      const target = this.#byId.get(m.reply_to);
      if (target) { box.appendChild(renderReplyTo(target)); }
    }
    if (m.text) {
      const body = el('div', 'text');
      renderText(body, m.text, m.parse_mode);
      box.appendChild(body);
    }
    // forEach, not for…of, here and in renderKeyboard: a string where a
    // list belongs must fail (and show the notice), not be iterated.
    if (m.attachments?.length) {
      const list = el('div', 'attachments');
      m.attachments.forEach((a) => list.appendChild(this.#renderAttachment(a)));
      box.appendChild(list);
    }
    if (m.buttons?.length) { box.appendChild(this.#renderKeyboard(m.id, m.buttons)); }
    this.#byId.set(m.id, box);
    return box;
  }

  // renderAttachment shows an attachment as its kind is shown (see
  // mediaOf), or, where the page cannot show it, as a link to the file.
  // Its bytes come inline (data), by reference (file, fetched from the
  // server) or from a URL.
  #renderAttachment(a) {
    const kind = typeof a.kind === 'string' ? a.kind : '';
    const fig = el('figure', 'attachment');
    if (kind) { fig.dataset.kind = kind; }
    const [icon, label] = KIND_LABELS[kind] ?? KIND_LABELS.document;
    let name = typeof a.file_name === 'string' ? a.file_name : '';
    let src;
    const byRef = typeof a.file === 'string' && a.file !== '';
    const ours = byRef || Boolean(a.data); // bytes of a known type, from the server
    if (a.data) {
      src = `data:${a.mime || 'application/octet-stream'};base64,${a.data}`;
    } else if (byRef) {
      src = this.#fileURL(a.file);
    } else {
      src = safeURL(a.url);
      if (!name && src) { name = fileNameOf(src); }
    }
    if (!src) {
      fig.appendChild(el('span', 'unsupported', '(an attachment with an unsupported link)'));
      if (a.caption) { fig.appendChild(el('figcaption', '', a.caption)); }
      return fig;
    }
    const scroll = () => { if (this.nearBottom()) { this.scrollToBottom(); } };
    // A file by reference the server no longer keeps: say so in its place.
    const gone = (media) => {
      if (!byRef) { return; }
      media.addEventListener('error', () => {
        media.replaceWith(el('span', 'unsupported gone', `${icon} ${name || label}: no longer kept`));
      }, { once: true });
    };
    const how = mediaOf(kind, ours ? String(a.mime || '') : null, src);
    switch (how) {
      case 'image': {
        const img = el('img', kind === 'sticker' ? 'sticker' : '');
        img.src = src;
        img.alt = a.caption || name || label;
        img.loading = 'lazy';
        img.addEventListener('load', scroll);
        gone(img);
        fig.appendChild(img);
        break;
      }
      case 'loop': // an animation or a video sticker: plays by itself, silent, like a GIF
      case 'video': {
        const v = el('video', kind === 'video_note' ? 'round' : (kind === 'sticker' ? 'sticker' : ''));
        v.playsInline = true;
        v.preload = 'metadata';
        if (how === 'loop') {
          v.muted = true;
          v.loop = true;
          v.autoplay = true;
        } else {
          v.controls = true;
        }
        v.src = src;
        v.setAttribute('aria-label', a.caption || name || label);
        v.addEventListener('loadedmetadata', scroll);
        gone(v);
        fig.appendChild(v);
        break;
      }
      case 'audio': {
        fig.appendChild(el('span', 'audio-label', `${icon} ${kind === 'voice' ? label : (name || label)}`));
        const au = el('audio');
        au.controls = true;
        au.preload = 'metadata';
        au.src = src;
        au.setAttribute('aria-label', kind === 'voice' ? label : (name || label));
        gone(au);
        fig.appendChild(au);
        break;
      }
      default: {
        const doc = el('a', 'document', `${icon} ${name || label}`);
        doc.href = src;
        if (ours) {
          doc.download = name || 'file';
        } else {
          doc.target = '_blank';
          doc.rel = 'noopener noreferrer';
        }
        fig.appendChild(doc);
      }
    }
    if (a.caption) { fig.appendChild(el('figcaption', '', a.caption)); }
    return fig;
  }

  // renderKeyboard renders the button rows of the message messageID: URL
  // buttons are links, the others send their data as a callback.
  #renderKeyboard(messageID, rows) {
    const kb = el('div', 'keyboard');
    kb.setAttribute('role', 'group');
    kb.setAttribute('aria-label', 'Buttons');
    rows.forEach((row) => {
      const r = el('div', 'kb-row');
      row.forEach((b) => {
        if (b.url) {
          const href = safeURL(b.url);
          if (href) {
            const a = el('a', 'kb-btn kb-url', b.text);
            a.href = href;
            a.target = '_blank';
            a.rel = 'noopener noreferrer';
            r.appendChild(a);
          }
          return;
        }
        const btn = el('button', 'kb-btn', b.text);
        btn.type = 'button';
        btn.dataset.data = b.data;
        btn.addEventListener('click', () => {
          if (!this.#onPress(messageID, b.data)) { return; }
          btn.classList.add('pressed');
          setTimeout(() => btn.classList.remove('pressed'), 600);
        });
        r.appendChild(btn);
      });
      kb.appendChild(r);
    });
    return kb;
  }
}

// mediaOf returns how the page shows an attachment of kind: as an 'image',
// a 'video' player, a silent 'loop' (an animation or a sticker that is a
// video), an 'audio' player, or '' for a link. mime is the type of an
// attachment whose bytes the server has (inline or by reference), or null
// for one by URL, which is shown as its kind (or, for animations and
// stickers, its file name) says.
function mediaOf(kind, mime, src) {
  const byURL = mime === null;
  let path = '';
  if (byURL) {
    try { path = new URL(src).pathname; } catch { /* none */ }
  }
  switch (kind) {
    case 'photo':
      return byURL || IMAGE_TYPE.test(mime) ? 'image' : '';
    case 'animation':
    case 'sticker':
      if (byURL) { return VIDEO_PATH.test(path) ? 'loop' : (LOTTIE_PATH.test(path) ? '' : 'image'); }
      return IMAGE_TYPE.test(mime) ? 'image' : (VIDEO_TYPE.test(mime) ? 'loop' : '');
    case 'video':
    case 'video_note':
      return byURL || VIDEO_TYPE.test(mime) ? 'video' : '';
    case 'audio':
    case 'voice':
      return byURL || AUDIO_TYPE.test(mime) ? 'audio' : '';
  }
  return '';
}

// renderReplyTo returns the quote of target at the top of a reply to it;
// activating it shows target.
function renderReplyTo(target) {
  const b = el('button', 'reply-to', replyExcerpt(target));
  b.dataset.replyTo = target.dataset.id;
  b.type = 'button';
  b.title = 'Show the message this answers';
  b.addEventListener('click', () => {
    target.scrollIntoView({ block: 'center' });
    target.classList.add('flash');
    setTimeout(() => target.classList.remove('flash'), 1200);
  });
  return b;
}

// replyExcerpt returns the quote of the message target shows in a reply
// to it.
function replyExcerpt(target) {
  const quoted = target.querySelector(':scope > .text');
  const excerpt = quoted ? quoted.textContent : '(attachment)';
  return `↩ ${excerpt.length > 80 ? `${excerpt.slice(0, 80)}…` : excerpt}`;
}

// markEdited adds to a message's meta line, or updates, the mark of its
// last edit at the time edited.
function markEdited(meta, edited) {
  let mark = meta.querySelector('.edited');
  if (!mark) {
    mark = el('span', 'edited', 'edited');
    meta.appendChild(mark);
  }
  const when = new Date(edited);
  mark.title = isNaN(when) ? 'Edited' : `Edited at ${when.toLocaleString()}`;
}

// fileNameOf returns the last part of a URL's path, decoded where it can
// be (a bare '%' cannot), or the URL when the path has no name.
function fileNameOf(src) {
  let last = new URL(src).pathname.split('/').pop() || '';
  try { last = decodeURIComponent(last); } catch { /* keep it encoded */ }
  return last || src;
}
