// Herald web chat page: plain JavaScript, no build step, nothing loaded from
// other sites. The wire protocol is described in the package doc of
// github.com/heraldbot/herald/adapters/webchat.
(function () {
  'use strict';

  // Each tab is a private chat of its own. The tab's ID lives in
  // sessionStorage, which a reload of the tab keeps and a new tab does not
  // share; the chat's ID lives in localStorage under a key made from the
  // tab's ID. The user's ID and name are the same in every tab.
  var KEY_TAB = 'herald.webchat.tab';          // sessionStorage
  var KEY_CHAT_PREFIX = 'herald.webchat.chat.'; // localStorage, + tab ID
  var KEY_CHAT_LEGACY = 'herald.webchat.chat';  // the one chat of older pages
  var KEY_USER = 'herald.webchat.user';
  var KEY_NAME = 'herald.webchat.name';
  var CHAT_KEEP_MS = 30 * 24 * 3600 * 1000;     // forget tabs' chats unused this long
  var CHAT_KEEP_MAX = 50;                       // and keep at most this many
  var ID_RE = /^[A-Za-z0-9_-]{1,64}$/;          // chat and user IDs, as the server checks them
  var ROOM_RE = /^[\p{L}\p{Nd}._-]{1,64}$/u;    // room names, as the server checks them
  var MAX_PENDING = 32;                         // refs of sent messages remembered
  var BACKOFF_MIN = 500;    // ms before the first reconnect attempt (halved by jitter at most)
  var BACKOFF_MAX = 10000;  // ms between attempts at most
  var STICK_PX = 80;        // autoscroll while the view is this close to the bottom

  function $(id) { return document.getElementById(id); }
  var els = {
    log: $('log'), empty: $('empty'), form: $('composer'), input: $('input'), send: $('send'),
    status: $('status'), banner: $('banner'), name: $('name'), title: $('title'),
    chatLabel: $('chat-label'), newChat: $('new-chat')
  };

  function storage(area) {
    return {
      get: function (k) { try { return window[area].getItem(k) || ''; } catch (e) { return ''; } },
      set: function (k, v) {
        try { if (v) { window[area].setItem(k, v); } else { window[area].removeItem(k); } } catch (e) { /* storage disabled */ }
      },
      keys: function () {
        try { return Object.keys(window[area]); } catch (e) { return []; }
      }
    };
  }
  var store = storage('localStorage');
  var session = storage('sessionStorage');

  function validID(s) { return typeof s === 'string' && ID_RE.test(s); }

  function randomID() {
    var b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, function (x) { return (x < 16 ? '0' : '') + x.toString(16); }).join('');
  }

  // tabID returns this tab's ID, making one on the tab's first load.
  function tabID() {
    var id = session.get(KEY_TAB);
    if (!validID(id)) {
      id = randomID();
      session.set(KEY_TAB, id);
    }
    return id;
  }

  // The chat of this tab, as stored: {id, used} in JSON.
  function loadChat(tab) {
    try {
      var c = JSON.parse(store.get(KEY_CHAT_PREFIX + tab) || 'null');
      if (c && validID(c.id)) { return c.id; }
    } catch (e) { /* not ours, or damaged: start afresh */ }
    // A page from before per-tab chats kept one chat for the profile: the
    // first tab to load takes it over.
    var legacy = store.get(KEY_CHAT_LEGACY);
    store.set(KEY_CHAT_LEGACY, '');
    return validID(legacy) ? legacy : '';
  }

  function saveChat(tab, id) {
    store.set(KEY_CHAT_PREFIX + tab, id ? JSON.stringify({ id: id, used: Date.now() }) : '');
  }

  // pruneChats forgets the chats of tabs not used for CHAT_KEEP_MS and all
  // but the CHAT_KEEP_MAX most recently used, so closed tabs do not fill
  // the storage.
  function pruneChats(current) {
    var now = Date.now();
    var seen = [];
    store.keys().forEach(function (k) {
      if (k.indexOf(KEY_CHAT_PREFIX) !== 0 || k === KEY_CHAT_PREFIX + current) { return; }
      var used = 0;
      try { used = Number(JSON.parse(store.get(k)).used) || 0; } catch (e) { /* damaged: forget it */ }
      if (now - used > CHAT_KEEP_MS) { store.set(k, ''); } else { seen.push({ k: k, used: used }); }
    });
    seen.sort(function (a, b) { return b.used - a.used; });
    seen.slice(CHAT_KEEP_MAX - 1).forEach(function (c) { store.set(c.k, ''); });
  }

  var room = (new URLSearchParams(location.search).get('room') || '').trim();
  var tab = tabID();
  var storedUser = store.get(KEY_USER);
  var state = {
    chatId: room ? '' : loadChat(tab),
    userId: validID(storedUser) ? storedUser : '',
    name: store.get(KEY_NAME),
    maxText: 16384,
    ws: null,
    connected: false,
    joined: false,      // the current connection got its history
    everConnected: false,
    lost: false,        // the connection dropped since the last history
    fatal: false,       // the chat cannot be opened: no more reconnecting
    attempt: 0,
    timer: 0,
    bannerTimer: 0,
    refSeq: 0,
    pending: new Map(), // ref of a sent message -> its text, until refused or forgotten
    byId: new Map()     // message ID -> element
  };

  // ---- connection ----

  function wsURL() {
    var u = new URL('ws', location.href);
    u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    u.search = '';
    u.hash = '';
    return u.href;
  }

  function connect() {
    clearTimeout(state.timer);
    if (state.fatal) { return; }
    setStatus('connecting', 'Connecting…');
    var sock;
    try {
      sock = new WebSocket(wsURL());
    } catch (e) {
      scheduleReconnect();
      return;
    }
    state.ws = sock;
    state.joined = false;
    sock.addEventListener('open', function () {
      if (sock !== state.ws) { return; }
      sock.send(JSON.stringify({
        type: 'hello', chat_id: state.chatId, user_id: state.userId, name: state.name, room: room
      }));
    });
    sock.addEventListener('message', function (e) {
      if (sock !== state.ws || typeof e.data !== 'string') { return; }
      var f;
      try { f = JSON.parse(e.data); } catch (err) { return; }
      if (!f || typeof f !== 'object') { return; }
      try {
        onFrame(f);
      } catch (err) {
        // A frame the page cannot handle must not stop the ones after it.
        console.warn('webchat: cannot handle a ' + f.type + ' frame:', err);
      }
    });
    sock.addEventListener('close', function (e) {
      if (sock !== state.ws) { return; }
      state.ws = null;
      onClose(e);
    });
  }

  function onClose(e) {
    var had = state.connected;
    state.connected = false;
    state.joined = false;
    els.send.disabled = true;
    if (state.fatal) { return; }
    if (e.code === 1013) {
      // Refused for now (too many open tabs): say why while retrying.
      showBanner('warn', 'The bot refused this tab: ' + (e.reason || 'it is too busy') + '. Retrying…', 0);
    } else if (had) {
      state.lost = true;
      document.body.dataset.disconnects = String(Number(document.body.dataset.disconnects || 0) + 1);
      var why = 'Connection lost.';
      if (e.code === 1009) { why = 'Connection closed: your message was too large.'; }
      if (e.code === 1001) { why = 'Connection lost: the bot stopped or restarted.'; }
      showBanner('warn', why + ' Reconnecting…', 0);
    } else if (!state.everConnected && state.attempt >= 1) {
      showBanner('warn', 'Cannot reach the bot. Is it running? Retrying…', 0);
    }
    scheduleReconnect();
  }

  function scheduleReconnect() {
    if (state.fatal) { return; }
    var base = Math.min(BACKOFF_MAX, BACKOFF_MIN * Math.pow(2, state.attempt));
    var delay = Math.round(base / 2 + Math.random() * base / 2);
    state.attempt++;
    setStatus('offline', 'Offline — reconnecting…');
    clearTimeout(state.timer);
    state.timer = setTimeout(connect, delay);
  }

  function reconnectNow() {
    if (state.fatal) { return; }
    var old = state.ws;
    state.ws = null;
    state.connected = false;
    els.send.disabled = true;
    if (old) { old.close(1000); }
    state.attempt = 0;
    connect();
  }

  function send(frame) {
    if (!state.connected || !state.ws || state.ws.readyState !== WebSocket.OPEN) { return false; }
    state.ws.send(JSON.stringify(frame));
    return true;
  }

  // fatal shows why the chat cannot be opened, for good: the page stops
  // connecting and keeps the notice up.
  function fatal(text) {
    state.fatal = true;
    state.connected = false;
    clearTimeout(state.timer);
    var old = state.ws;
    state.ws = null;
    if (old) { old.close(1000); }
    els.send.disabled = true;
    setStatus('error', 'Not connected');
    showBanner('error', text, 0);
  }

  // ---- frames ----

  function onFrame(f) {
    switch (f.type) {
      case 'history': onHistory(f); break;
      case 'message':
      case 'echo': if (f.message) { appendMessage(f.message); } break;
      case 'edit': if (f.message) { applyEdit(f.message); } break;
      case 'error': onError(f); break;
    }
  }

  function onError(f) {
    var text = String(f.text || f.code || 'The server refused a message.');
    if (!state.joined) {
      // The hello was refused: trying again would be refused again.
      fatal('The bot refused to open this chat: ' + text);
      return;
    }
    var sent = typeof f.ref === 'string' && state.pending.has(f.ref) ? state.pending.get(f.ref) : null;
    if (sent !== null) { state.pending.delete(f.ref); }
    if (sent !== null && (f.code === 'busy' || f.code === 'stopping')) {
      if (!els.input.value.trim()) {
        els.input.value = sent;
        autosize();
        text += ' Your message is back in the box.';
      } else {
        text += ' Your message “' + (sent.length > 40 ? sent.slice(0, 40) + '…' : sent) + '” was not sent.';
      }
    }
    showBanner('error', text, 6000);
  }

  function onHistory(f) {
    if (f.chat && validID(f.chat.id) && !room) {
      state.chatId = f.chat.id;
      saveChat(tab, f.chat.id);
    }
    if (f.chat && f.chat.id) { document.body.dataset.chat = f.chat.id; }
    if (f.user && validID(f.user.id)) {
      state.userId = f.user.id;
      store.set(KEY_USER, f.user.id);
    }
    if (f.bot && f.bot.name) {
      els.title.textContent = f.bot.name;
      document.title = f.bot.name + ' — web chat';
    }
    if (f.max_text > 0) { state.maxText = f.max_text; }
    clearLog();
    var frag = document.createDocumentFragment();
    (Array.isArray(f.messages) ? f.messages : []).forEach(function (m) { frag.appendChild(renderSafely(m)); });
    els.log.appendChild(frag);
    els.empty.hidden = state.byId.size > 0;
    state.joined = true;
    state.connected = true;
    state.everConnected = true;
    state.attempt = 0;
    els.send.disabled = false;
    setStatus('connected', 'Connected');
    if (state.lost) {
      state.lost = false;
      showBanner('info', 'Reconnected.', 4000);
    } else if (els.banner.classList.contains('warn')) {
      hideBanner();
    }
    scrollToBottom();
  }

  // ---- rendering ----

  function clearLog() {
    state.byId.forEach(function (el) { el.remove(); });
    state.byId.clear();
    els.empty.hidden = false;
  }

  function nearBottom() {
    var l = els.log;
    return l.scrollHeight - l.scrollTop - l.clientHeight < STICK_PX;
  }

  function scrollToBottom() { els.log.scrollTop = els.log.scrollHeight; }

  function isMine(m) { return !m.bot && m.from && m.from.id === state.userId; }

  function appendMessage(m) {
    if (!m || typeof m !== 'object' || !m.id || state.byId.has(m.id)) { return; }
    var stick = nearBottom() || isMine(m);
    els.empty.hidden = true;
    els.log.appendChild(renderSafely(m));
    if (stick) { scrollToBottom(); }
  }

  // renderSafely renders m, or, if m cannot be shown, a notice in its
  // place, so that one bad message never stops the history or the
  // messages after it.
  function renderSafely(m) {
    try {
      return renderMessage(m);
    } catch (e) {
      console.warn('webchat: cannot show message ' + (m && m.id) + ':', e);
      var box = el('article', 'msg broken ' + (m && m.bot ? 'bot' : 'user'));
      box.appendChild(el('div', 'text', '(this message cannot be shown)'));
      if (m && typeof m.id === 'string' && m.id) {
        box.dataset.id = m.id;
        state.byId.set(m.id, box);
      }
      return box;
    }
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function renderMessage(m) {
    var mine = isMine(m);
    var box = el('article', 'msg ' + (m.bot ? 'bot' : 'user') + (mine ? ' mine' : ''));
    box.dataset.id = m.id;
    var author = mine ? 'You' : ((m.from && m.from.name) || (m.bot ? 'Bot' : 'Guest'));
    var meta = el('div', 'meta');
    meta.appendChild(el('span', 'author', author));
    var when = new Date(m.time);
    if (!isNaN(when)) {
      var t = el('time', '', when.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }));
      t.dateTime = m.time;
      meta.appendChild(t);
    }
    if (m.edited) { markEdited(meta, m.edited); }
    box.appendChild(meta);
    if (m.reply_to) {
      var target = state.byId.get(m.reply_to);
      if (target) { box.appendChild(renderReplyTo(target)); }
    }
    if (m.text) {
      var body = el('div', 'text');
      renderText(body, m.text, m.parse_mode);
      box.appendChild(body);
    }
    if (m.attachments && m.attachments.length) {
      var list = el('div', 'attachments');
      m.attachments.forEach(function (a) { list.appendChild(renderAttachment(a)); });
      box.appendChild(list);
    }
    if (m.buttons && m.buttons.length) { box.appendChild(renderKeyboard(m)); }
    state.byId.set(m.id, box);
    return box;
  }

  function renderReplyTo(target) {
    var b = el('button', 'reply-to', replyExcerpt(target));
    b.dataset.replyTo = target.dataset.id;
    b.type = 'button';
    b.title = 'Show the message this answers';
    b.addEventListener('click', function () {
      target.scrollIntoView({ block: 'center' });
      target.classList.add('flash');
      setTimeout(function () { target.classList.remove('flash'); }, 1200);
    });
    return b;
  }

  // replyExcerpt returns the quote of the message target shows in a reply
  // to it.
  function replyExcerpt(target) {
    var quoted = target.querySelector(':scope > .text');
    var excerpt = quoted ? quoted.textContent : '(attachment)';
    return '↩ ' + (excerpt.length > 80 ? excerpt.slice(0, 80) + '…' : excerpt);
  }

  // markEdited adds to a message's meta line, or updates, the mark of its
  // last edit at the time edited.
  function markEdited(meta, edited) {
    var mark = meta.querySelector('.edited');
    if (!mark) {
      mark = el('span', 'edited', 'edited');
      meta.appendChild(mark);
    }
    var when = new Date(edited);
    mark.title = isNaN(when) ? 'Edited' : 'Edited at ' + when.toLocaleString();
  }

  // applyEdit shows an edit of a bot message in place: its text (rendered
  // as a new message's is), parse mode and buttons become the edit's (no
  // buttons removes them), while its author, time, reply and attachments
  // stay, and it is marked edited. The new parts are built before the old
  // ones are touched, so an edit that cannot be rendered leaves the
  // message as it was. An edit of a message the page does not show is
  // ignored.
  function applyEdit(e) {
    if (!e || typeof e !== 'object' || typeof e.id !== 'string') { return; }
    var box = state.byId.get(e.id);
    if (!box) { return; }
    var text = typeof e.text === 'string' ? e.text : '';
    var body = null;
    if (text) {
      body = el('div', 'text');
      renderText(body, text, e.parse_mode);
    }
    var rows = Array.isArray(e.buttons) ? e.buttons.filter(Array.isArray) : [];
    var kb = rows.length ? renderKeyboard({ id: e.id, buttons: rows }) : null;
    var stick = nearBottom();

    var oldBody = box.querySelector(':scope > .text');
    var oldKb = box.querySelector(':scope > .keyboard');
    if (oldKb) { oldKb.remove(); }
    if (oldBody) {
      if (body) { oldBody.replaceWith(body); } else { oldBody.remove(); }
    } else if (body) {
      // The text goes where a new message has it: before its attachments.
      box.insertBefore(body, box.querySelector(':scope > .attachments'));
    }
    if (kb) { box.appendChild(kb); }
    var meta = box.querySelector(':scope > .meta');
    if (meta) { markEdited(meta, e.edited); }
    // Replies that quote the message quote its new text.
    els.log.querySelectorAll('.reply-to').forEach(function (q) {
      if (q.dataset.replyTo === e.id) { q.textContent = replyExcerpt(box); }
    });
    if (stick) { scrollToBottom(); }
  }

  // safeURL returns an absolute http(s) or mailto URL, or '' for anything
  // else (javascript:, data: and the like are never followed).
  function safeURL(u) {
    if (!u) { return ''; }
    try {
      var p = new URL(u, location.href);
      if (p.protocol === 'http:' || p.protocol === 'https:' || p.protocol === 'mailto:') { return p.href; }
    } catch (e) { /* invalid */ }
    return '';
  }

  function renderText(parent, text, mode) {
    if (mode === 'HTML') { renderHTML(parent, text); } else if (mode === 'Markdown') { renderMarkdown(parent, text); } else { parent.textContent = text; }
  }

  // The HTML a bot may use (Telegram's subset). renderHTML tokenizes it
  // itself and builds the allowed elements with createElement, so nothing
  // of the bot's markup is ever parsed as HTML by the browser: other tags
  // are dropped (their text kept), script-like elements dropped with their
  // content, and attributes other than href and a spoiler class ignored.
  var ALLOWED = {
    b: 'b', strong: 'strong', i: 'i', em: 'em', u: 'u', ins: 'ins', s: 's', strike: 's', del: 'del',
    code: 'code', pre: 'pre', blockquote: 'blockquote', br: 'br', a: 'a', span: 'span', 'tg-spoiler': 'span'
  };
  var DROPPED = { script: 1, style: 1, template: 1, iframe: 1, object: 1, embed: 1, noscript: 1, title: 1, textarea: 1, svg: 1, math: 1 };
  var TAG = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g;
  var ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

  function decodeEntities(s) {
    return s.replace(/&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z]{2,8});/g, function (all, e) {
      if (e.charAt(0) === '#') {
        var n = (e.charAt(1) === 'x' || e.charAt(1) === 'X') ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
        return (n > 0 && n <= 0x10FFFF && (n < 0xD800 || n > 0xDFFF)) ? String.fromCodePoint(n) : all;
      }
      var name = e.toLowerCase();
      return Object.prototype.hasOwnProperty.call(ENTITIES, name) ? ENTITIES[name] : all;
    });
  }

  function attribute(attrs, name) {
    var m = new RegExp('(?:^|[\\s/])' + name + '\\s*=\\s*(?:"([^"]*)"|\'([^\']*)\'|([^\\s"\'>]+))', 'i').exec(attrs);
    if (!m) { return ''; }
    return decodeEntities(m[1] !== undefined ? m[1] : (m[2] !== undefined ? m[2] : m[3]));
  }

  function renderHTML(parent, html) {
    var stack = [{ name: '', node: parent }];
    var skip = 0; // depth inside dropped elements such as <script>
    var last = 0;
    var m;
    function text(s) {
      if (s && !skip) { stack[stack.length - 1].node.appendChild(document.createTextNode(decodeEntities(s))); }
    }
    TAG.lastIndex = 0;
    while ((m = TAG.exec(html)) !== null) {
      text(html.slice(last, m.index));
      last = TAG.lastIndex;
      var closing = m[1] === '/';
      var name = m[2].toLowerCase();
      var attrs = m[3];
      if (DROPPED[name]) {
        if (closing) { skip = Math.max(0, skip - 1); } else if (!/\/\s*$/.test(attrs)) { skip++; }
        continue;
      }
      var tag = ALLOWED[name];
      if (skip || !tag) { continue; }
      if (closing) {
        for (var i = stack.length - 1; i > 0; i--) {
          if (stack[i].name === name) { stack.length = i; break; }
        }
        continue;
      }
      var out = document.createElement(tag);
      if (tag === 'a') {
        var href = safeURL(attribute(attrs, 'href'));
        if (href) { out.href = href; out.target = '_blank'; out.rel = 'noopener noreferrer'; }
      }
      if (name === 'tg-spoiler' || (name === 'span' && /(^|\s)tg-spoiler(\s|$)/.test(attribute(attrs, 'class')))) {
        makeSpoiler(out);
      }
      stack[stack.length - 1].node.appendChild(out);
      if (tag !== 'br') { stack.push({ name: name, node: out }); }
    }
    text(html.slice(last));
  }

  function makeSpoiler(span) {
    span.className = 'spoiler';
    span.tabIndex = 0;
    span.setAttribute('role', 'button');
    span.setAttribute('aria-label', 'Spoiler: activate to show');
    span.addEventListener('click', function () { span.classList.toggle('shown'); });
    span.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); span.classList.toggle('shown'); } });
  }

  // Telegram-style Markdown: ```pre```, `code`, *bold*, **bold**, _italic_,
  // __underline__, ~strike~, [text](url). No nesting.
  var MD = /```(?:[A-Za-z0-9_+-]*\n)?([\s\S]*?)```|`([^`\n]+)`|\*\*([^*\n]+)\*\*|\*([^*\n]+)\*|__([^_\n]+)__|_([^_\n]+)_|~([^~\n]+)~|\[([^\]\n]+)\]\(([^()\s]+)\)/g;

  function renderMarkdown(parent, text) {
    var last = 0;
    var m;
    MD.lastIndex = 0;
    while ((m = MD.exec(text)) !== null) {
      if (m[0] === '') { MD.lastIndex++; continue; }
      if (m.index > last) { parent.appendChild(document.createTextNode(text.slice(last, m.index))); }
      var node;
      if (m[1] !== undefined) { node = el('pre', '', m[1]); }
      else if (m[2] !== undefined) { node = el('code', '', m[2]); }
      else if (m[3] !== undefined) { node = el('strong', '', m[3]); }
      else if (m[4] !== undefined) { node = el('strong', '', m[4]); }
      else if (m[5] !== undefined) { node = el('u', '', m[5]); }
      else if (m[6] !== undefined) { node = el('em', '', m[6]); }
      else if (m[7] !== undefined) { node = el('s', '', m[7]); }
      else {
        var href = safeURL(m[9]);
        if (href) {
          node = el('a', '', m[8]);
          node.href = href;
          node.target = '_blank';
          node.rel = 'noopener noreferrer';
        } else {
          node = document.createTextNode(m[0]);
        }
      }
      parent.appendChild(node);
      last = m.index + m[0].length;
    }
    if (last < text.length) { parent.appendChild(document.createTextNode(text.slice(last))); }
  }

  function renderAttachment(a) {
    var fig = el('figure', 'attachment ' + (a.kind || ''));
    var name = a.file_name || '';
    var src = '';
    if (a.data) {
      src = 'data:' + (a.mime || 'application/octet-stream') + ';base64,' + a.data;
    } else {
      src = safeURL(a.url);
      if (!name && src) { name = fileNameOf(src); }
    }
    var isImage = a.kind === 'photo' && (a.data ? /^image\//.test(a.mime || '') : !!src);
    if (!src) {
      fig.appendChild(el('span', 'unsupported', '(an attachment with an unsupported link)'));
    } else if (isImage) {
      var img = el('img');
      img.src = src;
      img.alt = a.caption || name || 'Photo';
      img.loading = 'lazy';
      img.addEventListener('load', function () { if (nearBottom()) { scrollToBottom(); } });
      fig.appendChild(img);
    } else {
      var link = el('a', 'document', '📄 ' + (name || 'Document'));
      link.href = src;
      if (a.data) { link.download = name || 'file'; } else { link.target = '_blank'; link.rel = 'noopener noreferrer'; }
      fig.appendChild(link);
    }
    if (a.caption) { fig.appendChild(el('figcaption', '', a.caption)); }
    return fig;
  }

  // fileNameOf returns the last part of a URL's path, decoded where it can
  // be (a bare '%' cannot), or the URL when the path has no name.
  function fileNameOf(src) {
    var last = new URL(src).pathname.split('/').pop() || '';
    try { last = decodeURIComponent(last); } catch (e) { /* keep it encoded */ }
    return last || src;
  }

  function renderKeyboard(m) {
    var kb = el('div', 'keyboard');
    kb.setAttribute('role', 'group');
    kb.setAttribute('aria-label', 'Buttons');
    m.buttons.forEach(function (row) {
      var r = el('div', 'kb-row');
      row.forEach(function (b) {
        if (b.url) {
          var href = safeURL(b.url);
          if (!href) { return; }
          var a = el('a', 'kb-btn kb-url', b.text);
          a.href = href;
          a.target = '_blank';
          a.rel = 'noopener noreferrer';
          r.appendChild(a);
          return;
        }
        var btn = el('button', 'kb-btn', b.text);
        btn.type = 'button';
        btn.dataset.data = b.data;
        btn.addEventListener('click', function () { press(m.id, b.data, btn); });
        r.appendChild(btn);
      });
      kb.appendChild(r);
    });
    return kb;
  }

  function press(messageId, data, btn) {
    if (!send({ type: 'callback', data: data, message_id: messageId })) {
      showBanner('warn', 'Not connected; press the button again when the chat is back.', 4000);
      return;
    }
    btn.classList.add('pressed');
    setTimeout(function () { btn.classList.remove('pressed'); }, 600);
  }

  // ---- status and notices ----

  function setStatus(s, text) {
    els.status.dataset.state = s;
    els.status.textContent = text;
    document.body.dataset.state = s;
  }

  // showBanner shows a notice for ms milliseconds, or until replaced when
  // ms is 0. A fatal notice stays whatever comes later.
  function showBanner(kind, text, ms) {
    if (state.fatal && !(kind === 'error' && ms === 0)) { return; }
    clearTimeout(state.bannerTimer);
    els.banner.className = 'banner ' + kind;
    els.banner.textContent = text;
    els.banner.hidden = false;
    els.banner.dataset.sticky = ms ? 'false' : 'true';
    if (ms) { state.bannerTimer = setTimeout(hideBanner, ms); }
  }

  function hideBanner() {
    if (state.fatal) { return; }
    clearTimeout(state.bannerTimer);
    els.banner.hidden = true;
    els.banner.className = 'banner';
    delete els.banner.dataset.sticky;
  }

  // ---- composer and controls ----

  function autosize() {
    els.input.style.height = 'auto';
    els.input.style.height = Math.min(els.input.scrollHeight, 160) + 'px';
  }

  function submit() {
    var text = els.input.value;
    if (!text.trim()) { return; }
    if (new TextEncoder().encode(text).length > state.maxText) {
      showBanner('error', 'This message is too long (at most ' + state.maxText + ' bytes).', 6000);
      return;
    }
    var ref = 'm' + (++state.refSeq);
    if (!send({ type: 'message', text: text, ref: ref })) {
      showBanner('warn', 'Not connected; your message is kept. Send it again when the chat is back.', 4000);
      return;
    }
    state.pending.set(ref, text);
    if (state.pending.size > MAX_PENDING) { state.pending.delete(state.pending.keys().next().value); }
    els.input.value = '';
    autosize();
    els.input.focus();
  }

  // Enter sends and Shift+Enter adds a line. Some input paths (automation,
  // a few IMEs) deliver the Enter's line break separately from its keydown,
  // so the break that follows a handled Enter is dropped as well.
  var enterHandled = false;
  els.form.addEventListener('submit', function (e) { e.preventDefault(); submit(); });
  els.input.addEventListener('keydown', function (e) {
    enterHandled = false;
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      enterHandled = true;
      submit();
    }
  });
  els.input.addEventListener('beforeinput', function (e) {
    if (enterHandled && (e.inputType === 'insertLineBreak' || e.inputType === 'insertParagraph')) { e.preventDefault(); }
    enterHandled = false;
  });
  els.input.addEventListener('keyup', function () { enterHandled = false; });
  els.input.addEventListener('input', autosize);

  els.name.value = state.name;
  els.name.addEventListener('keydown', function (e) { if (e.key === 'Enter') { e.preventDefault(); els.name.blur(); } });
  els.name.addEventListener('change', function () {
    var n = els.name.value.trim().slice(0, 64);
    els.name.value = n;
    state.name = n;
    store.set(KEY_NAME, n);
    send({ type: 'name', name: n });
  });

  if (room) {
    els.chatLabel.textContent = 'Room: ' + room;
    els.newChat.hidden = true;
  }
  els.newChat.addEventListener('click', function () {
    state.chatId = '';
    saveChat(tab, '');
    clearLog();
    hideBanner();
    reconnectNow();
  });

  window.addEventListener('online', function () { if (!state.ws) { reconnectNow(); } });
  document.addEventListener('visibilitychange', function () {
    if (document.visibilityState === 'visible' && !state.ws) { reconnectNow(); }
  });

  pruneChats(tab);
  if (room && !ROOM_RE.test(room)) {
    fatal('“' + (room.length > 80 ? room.slice(0, 80) + '…' : room) + '” is not a valid room name: use 1 to 64 ' +
      'letters, digits, “.”, “-” or “_”, as in ?room=lobby. Without ?room= this page is a private chat.');
  } else {
    connect();
  }
  els.input.focus();
}());
