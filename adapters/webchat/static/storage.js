// storage.js — what the page remembers between loads. Each tab is a
// private chat of its own: the tab's ID lives in sessionStorage, which a
// reload of the tab keeps and a new tab does not share, and the tab's chat
// ID in localStorage under a key made from the tab's ID. The user's ID and
// name are the same in every tab of the browser profile. Storage that is
// disabled or full reads as empty, so the page then starts afresh.

const KEY_TAB = 'herald.webchat.tab';          // sessionStorage
const KEY_CHAT_PREFIX = 'herald.webchat.chat.'; // localStorage, + tab ID
const KEY_USER = 'herald.webchat.user';
const KEY_NAME = 'herald.webchat.name';
const CHAT_KEEP_MS = 30 * 24 * 3600 * 1000;     // forget tabs' chats unused this long
const CHAT_KEEP_MAX = 50;                       // and keep at most this many
const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;          // chat and user IDs, as the server checks them

// validID reports whether s is a chat or user ID the server accepts.
export const validID = (s) => typeof s === 'string' && ID_RE.test(s);

// Area is one Web Storage area whose methods never throw.
class Area {
  #name;

  constructor(name) { this.#name = name; }

  get(key) {
    try { return window[this.#name].getItem(key) || ''; } catch { return ''; }
  }

  // set stores value under key, or removes key when value is empty.
  set(key, value) {
    try {
      if (value) { window[this.#name].setItem(key, value); } else { window[this.#name].removeItem(key); }
    } catch { /* storage disabled or full */ }
  }

  keys() {
    try { return Object.keys(window[this.#name]); } catch { return []; }
  }
}

const local = new Area('localStorage');
const session = new Area('sessionStorage');

function randomID() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// tabID returns this tab's ID, making one on the tab's first load.
export function tabID() {
  let id = session.get(KEY_TAB);
  if (!validID(id)) {
    id = randomID();
    session.set(KEY_TAB, id);
  }
  return id;
}

// loadChat returns the ID of the chat of tab, or '' for a new chat. It is
// stored as {id, used} in JSON.
export function loadChat(tab) {
  try {
    const c = JSON.parse(local.get(KEY_CHAT_PREFIX + tab) || 'null');
    if (c && validID(c.id)) { return c.id; }
  } catch { /* not ours, or damaged: start afresh */ }
  return '';
}

// saveChat stores id as the chat of tab, or forgets tab's chat when id is
// empty.
export function saveChat(tab, id) {
  local.set(KEY_CHAT_PREFIX + tab, id ? JSON.stringify({ id, used: Date.now() }) : '');
}

// pruneChats forgets the chats of tabs other than current not used for
// CHAT_KEEP_MS, and all but the CHAT_KEEP_MAX most recently used (current
// included), so closed tabs do not fill the storage.
export function pruneChats(current) {
  const now = Date.now();
  const kept = [];
  for (const key of local.keys()) {
    if (!key.startsWith(KEY_CHAT_PREFIX) || key === KEY_CHAT_PREFIX + current) { continue; }
    let used = 0;
    try { used = Number(JSON.parse(local.get(key)).used) || 0; } catch { /* damaged: forget it */ }
    if (now - used > CHAT_KEEP_MS) { local.set(key, ''); } else { kept.push({ key, used }); }
  }
  kept.sort((a, b) => b.used - a.used);
  for (const { key } of kept.slice(CHAT_KEEP_MAX - 1)) { local.set(key, ''); }
}

// loadUser returns the stored user ID, or '' for a new user.
export function loadUser() {
  const id = local.get(KEY_USER);
  return validID(id) ? id : '';
}

export const saveUser = (id) => local.set(KEY_USER, id);

// loadName returns the user's display name, '' when none was set.
export const loadName = () => local.get(KEY_NAME);

export const saveName = (name) => local.set(KEY_NAME, name);
