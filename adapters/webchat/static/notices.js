// notices.js — what the page tells the user about itself: Status, the
// connection's state in the top bar, Banner, the notice under it (lost
// connections, refusals, errors, the bot's answers to button presses),
// and ChatAction, what the bot is doing ("Herald is typing…").

// The status shown for each state of a Connection (protocol.js): the
// data-state of the status element and the page's body, and its text.
const STATUS = {
  connecting: ['connecting', 'Connecting…'],
  open: ['connected', 'Connected'],
  closed: ['offline', 'Offline — reconnecting…'],
  refused: ['error', 'Not connected'],
};

// Status shows a connection state in the element el.
export class Status {
  #el;

  constructor(el) { this.#el = el; }

  show(connectionState) {
    const [state, text] = STATUS[connectionState];
    this.#el.dataset.state = state;
    this.#el.textContent = text;
    document.body.dataset.state = state;
  }
}

// Banner shows one notice at a time in the element el, of the kind 'info',
// 'warn', 'error' or 'alert'. A notice shown with pin stays whatever comes later.
export class Banner {
  #el;
  #kind = '';      // of the notice shown, '' for none
  #timer = 0;
  #pinned = false;

  constructor(el) { this.#el = el; }

  // kind returns the kind of the notice shown, or '' when none is.
  get kind() { return this.#kind; }

  // show shows a notice for ms milliseconds, or until replaced when ms is
  // 0 or left out.
  show(kind, text, ms = 0) {
    if (!this.#pinned) { this.#show(kind, text, ms); }
  }

  // pin shows an error notice for good.
  pin(text) {
    this.#show('error', text, 0);
    this.#pinned = true;
  }

  // hide removes the notice, unless it is pinned.
  hide() {
    if (this.#pinned) { return; }
    clearTimeout(this.#timer);
    this.#el.hidden = true;
    this.#el.className = 'banner';
    this.#kind = '';
    delete this.#el.dataset.sticky;
  }

  #show(kind, text, ms) {
    clearTimeout(this.#timer);
    this.#el.className = `banner ${kind}`;
    this.#kind = kind;
    this.#el.textContent = text;
    this.#el.hidden = false;
    this.#el.dataset.sticky = ms ? 'false' : 'true';
    if (ms) { this.#timer = setTimeout(() => this.hide(), ms); }
  }
}

// What each chat action says, after the bot's name.
const ACTIONS = {
  typing: 'is typing…',
  upload_photo: 'is sending a photo…',
  record_video: 'is recording a video…',
  upload_video: 'is sending a video…',
  record_voice: 'is recording a voice message…',
  upload_voice: 'is sending a voice message…',
  upload_document: 'is sending a file…',
  choose_sticker: 'is choosing a sticker…',
  find_location: 'is finding a location…',
  record_video_note: 'is recording a video message…',
  upload_video_note: 'is sending a video message…',
};
const ACTION_MS = 5000; // how long an action shows, unless repeated

// ChatAction shows the bot's chat action in the element el for a few
// seconds, or until hidden (the bot's next message); name returns the
// bot's name.
export class ChatAction {
  #el;
  #name;
  #timer = 0;

  constructor(el, name) {
    this.#el = el;
    this.#name = name;
  }

  // show shows action, if the page knows it.
  show(action) {
    const says = ACTIONS[action];
    if (typeof action !== 'string' || !says) { return; }
    clearTimeout(this.#timer);
    this.#el.textContent = `${this.#name() || 'The bot'} ${says}`;
    this.#el.dataset.action = action;
    this.#el.hidden = false;
    this.#timer = setTimeout(() => this.hide(), ACTION_MS);
  }

  hide() {
    clearTimeout(this.#timer);
    this.#el.hidden = true;
    delete this.#el.dataset.action;
  }
}
