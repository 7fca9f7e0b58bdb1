// notices.js — what the page tells the user about itself: Status, the
// connection's state in the top bar, and Banner, the notice under it
// (lost connections, refusals, errors).

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
// 'warn' or 'error'. A notice shown with pin stays whatever comes later.
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
