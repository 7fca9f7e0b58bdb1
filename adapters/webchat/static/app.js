// app.js — the Herald web chat page: wires the connection (protocol.js) to
// the conversation (render.js), the message box (composer.js) and the
// bot's reply keyboard under it (keyboard.js), the notices (notices.js)
// and what the page remembers (storage.js). Plain ES modules,
// no build step, nothing loaded from other sites.

import { Composer } from './composer.js';
import { ReplyKeyboard } from './keyboard.js';
import { Banner, ChatAction, Status } from './notices.js';
import { Connection, errorText } from './protocol.js';
import { ChatView } from './render.js';
import * as storage from './storage.js';

const ROOM_RE = /^[\p{L}\p{Nd}._-]{1,64}$/u; // room names, as the server checks them
const ROOM_SHOWN = 80;                       // characters of an invalid room name quoted

const $ = (id) => document.getElementById(id);

// ?room=NAME puts the tab into the group chat "room:NAME"; without it the
// tab has a private chat of its own, kept across reloads.
const room = (new URLSearchParams(location.search).get('room') || '').trim();
const tab = storage.tabID();
const me = {
  chatId: room ? '' : storage.loadChat(tab),
  userId: storage.loadUser(),
  name: storage.loadName(),
};

const status = new Status($('status'));
const banner = new Banner($('banner'));
// fileKey is the key this connection fetches the chat's files by
// reference with; the history of each connection brings a new one, and
// renders every message again with it.
let fileKey = '';
const fileURL = (id) => {
  const u = new URL(`file/${encodeURIComponent(id)}`, location.href);
  u.search = `?k=${encodeURIComponent(fileKey)}`;
  u.hash = '';
  return u.href;
};
const view = new ChatView({ log: $('log'), empty: $('empty'), userId: () => me.userId, onPress: press, fileURL });
const conn = new Connection({
  hello: () => ({ type: 'hello', chat_id: me.chatId, user_id: me.userId, name: me.name, room }),
  onFrame,
  onState,
});
const composer = new Composer({
  form: $('composer'),
  input: $('input'),
  button: $('send'),
  attach: $('attach'),
  file: $('file'),
  send: (frame) => conn.send(frame),
  notify: (kind, text, ms) => banner.show(kind, text, ms),
});
const action = new ChatAction($('action'), () => $('title').textContent);
$('banner').addEventListener('click', () => { if (banner.kind === 'alert') { banner.hide(); } });
const keyboard = new ReplyKeyboard({
  box: $('reply-keyboard'),
  toggle: $('keyboard-toggle'),
  input: $('input'),
  send: (text) => composer.sendText(text),
});

function onFrame(f) {
  switch (f.type) {
    case 'history': onHistory(f); break;
    case 'message': if (f.message) { onMessage(f.message); } break;
    case 'echo': if (f.message) { view.append(f.message); } break;
    case 'edit': if (f.message) { view.edit(f.message); } break;
    case 'delete': if (f.message) { view.remove(f.message.id); } break;
    case 'answer': if (f.answer) { onAnswer(f.answer); } break;
    case 'action': action.show(f.action); break;
    case 'error': onError(f); break;
  }
}

// onHistory stores the chat and user IDs the server confirms and shows the
// chat's messages; the connection is open once it returns.
function onHistory(f) {
  if (storage.validID(f.chat?.id) && !room) {
    me.chatId = f.chat.id;
    storage.saveChat(tab, f.chat.id);
  }
  if (f.chat?.id) { document.body.dataset.chat = f.chat.id; }
  if (storage.validID(f.user?.id)) {
    me.userId = f.user.id;
    storage.saveUser(f.user.id);
  }
  if (f.bot?.name) {
    $('title').textContent = f.bot.name;
    document.title = `${f.bot.name} — web chat`;
  }
  if (f.max_text > 0) { composer.maxText = f.max_text; }
  fileKey = typeof f.file_key === 'string' ? f.file_key : '';
  composer.setMaxUpload(f.max_upload ?? 0);
  view.showHistory(Array.isArray(f.messages) ? f.messages : []);
  keyboard.reset(f.keyboard);
}

// onMessage shows a bot message and puts up or removes the reply keyboard
// it carries, if any (also when the message itself cannot be shown). The
// bot's chat action ends with it.
function onMessage(m) {
  action.hide();
  view.append(m);
  if (typeof m === 'object' && 'keyboard' in m) { keyboard.apply(m.keyboard); }
}

// onAnswer shows the bot's answer to a button press: a passing notice, or
// an alert that stays until clicked.
function onAnswer(a) {
  if (typeof a.text !== 'string' || !a.text) { return; }
  if (a.alert) {
    banner.show('alert', a.text);
  } else {
    banner.show('info', a.text, 4000);
  }
}

// onError shows a frame the server refused; a message refused for now
// goes back into the box.
function onError(f) {
  const retryable = f.code === 'busy' || f.code === 'stopping';
  banner.show('error', errorText(f) + composer.refused(f.ref, retryable), 6000);
}

function onState(state, d) {
  status.show(state);
  composer.setEnabled(state === 'open');
  switch (state) {
    case 'open':
      if (d.reconnected) {
        banner.show('info', 'Reconnected.', 4000);
      } else if (banner.kind === 'warn') {
        banner.hide();
      }
      view.scrollToBottom();
      break;
    case 'closed': onClosed(d); break;
    case 'refused': banner.pin(d.text); break;
  }
}

// onClosed says why the connection closed, while it retries.
function onClosed(d) {
  if (d.code === 1013) {
    // Refused for now (too many open tabs): say why while retrying.
    banner.show('warn', `The bot refused this tab: ${d.reason || 'it is too busy'}. Retrying…`);
  } else if (d.dropped) {
    document.body.dataset.disconnects = String(Number(document.body.dataset.disconnects || 0) + 1);
    const why = {
      1001: 'Connection lost: the bot stopped or restarted.',
      1009: 'Connection closed: your message was too large.',
    }[d.code] ?? 'Connection lost.';
    banner.show('warn', `${why} Reconnecting…`);
  } else if (!d.everOpen && d.failures > 1) {
    banner.show('warn', 'Cannot reach the bot. Is it running? Retrying…');
  }
}

// press sends the callback of a button under the message messageId.
function press(messageId, data) {
  if (conn.send({ type: 'callback', data, message_id: messageId })) { return true; }
  banner.show('warn', 'Not connected; press the button again when the chat is back.', 4000);
  return false;
}

const nameBox = $('name');
nameBox.value = me.name;
nameBox.addEventListener('keydown', (e) => {
  if (e.key === 'Enter') {
    e.preventDefault();
    nameBox.blur();
  }
});
nameBox.addEventListener('change', () => {
  const name = nameBox.value.trim().slice(0, 64);
  nameBox.value = name;
  me.name = name;
  storage.saveName(name);
  conn.send({ type: 'name', name });
});

const newChat = $('new-chat');
if (room) {
  $('chat-label').textContent = `Room: ${room}`;
  newChat.hidden = true;
}
newChat.addEventListener('click', () => {
  me.chatId = '';
  storage.saveChat(tab, '');
  view.clear();
  banner.hide();
  conn.restart();
});

window.addEventListener('online', () => conn.resume());
// A page kept in the back/forward cache gives its place on the server
// back, and connects again when it is shown.
window.addEventListener('pagehide', () => conn.suspend());
window.addEventListener('pageshow', (e) => { if (e.persisted) { conn.restart(); } });
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') { conn.resume(); }
});

storage.pruneChats(tab);
if (room && !ROOM_RE.test(room)) {
  const shown = room.length > ROOM_SHOWN ? `${room.slice(0, ROOM_SHOWN)}…` : room;
  conn.refuse(`“${shown}” is not a valid room name: use 1 to 64 letters, digits, “.”, “-” or “_”, ` +
    'as in ?room=lobby. Without ?room= this page is a private chat.');
} else {
  conn.start();
}
composer.focus();
