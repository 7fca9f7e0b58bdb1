// protocol.js — the page's WebSocket to the adapter: Connection opens it,
// joins the chat with a hello frame, passes the server's frames on,
// reconnects with backoff, and keeps what it is doing in one state value.
// The wire protocol is described in the package doc of
// github.com/heraldbot/herald/adapters/webchat.

const BACKOFF_MIN = 500;   // ms before the first reconnect attempt (halved by jitter at most)
const BACKOFF_MAX = 10000; // ms between attempts at most

// wsURL returns the URL of the adapter's WebSocket: "ws" beside the page,
// so the page works wherever its handler is mounted.
function wsURL() {
  const u = new URL('ws', location.href);
  u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  u.search = '';
  u.hash = '';
  return u.href;
}

// errorText returns what an error frame says, for the user.
export const errorText = (f) => String(f.text || f.code || 'The server refused a message.');

// Connection is the page's link to its chat. Its state is one of
//
//   'connecting'  a socket is opening, or waits for the history that
//                 answers its hello;
//   'open'        the history came: frames can be sent;
//   'closed'      no socket: the next attempt is scheduled with backoff;
//   'refused'     the chat cannot be opened (the server refused the hello,
//                 or the page called refuse): no more attempts, for good.
//
// Each change calls onState(state, detail), where detail is, for
//
//   'open':    {reconnected}, true when an open connection was lost since
//              the last history;
//   'closed':  {code, reason, dropped, everOpen, failures}: the close code
//              and reason (0 and '' when no socket could be made), whether
//              the socket lost was open, whether any connection of this
//              page has been, and the attempts failed in a row, this one
//              included;
//   'refused': {text}, why, for the user.
//
// onFrame gets every server frame that is a JSON object, except an error
// before the history, which refuses the chat (trying again would be
// refused again). A frame whose handling throws is logged and skipped, so
// it never stops the frames after it.
export class Connection {
  state = 'connecting';

  #hello;
  #onFrame;
  #onState;
  #ws = null;     // the current socket; events of older ones are ignored
  #timer = 0;     // the scheduled reconnect
  #failures = 0;  // attempts failed in a row, for the backoff
  #opens = 0;     // histories received by this page
  #lost = false;  // an open connection dropped since the last history

  // hello returns the hello frame to join with; it is called for each
  // connection, so it can name the chat the page now has.
  constructor({ hello, onFrame, onState }) {
    this.#hello = hello;
    this.#onFrame = onFrame;
    this.#onState = onState;
  }

  // start makes the first connection.
  start() { this.#connect(); }

  // restart drops the current connection, if any, and connects again at
  // once, with the backoff reset. A refused connection stays refused.
  restart() {
    if (this.state === 'refused') { return; }
    const old = this.#ws;
    this.#ws = null;
    old?.close(1000);
    this.#failures = 0;
    this.#connect();
  }

  // resume connects at once when no socket is open or opening, such as
  // while waiting for the next attempt.
  resume() {
    if (!this.#ws) { this.restart(); }
  }

  // suspend closes the connection, making no more attempts until restart
  // or resume: for a page leaving for the browser's back/forward cache
  // (pagehide), whose socket the browser may otherwise keep open, holding
  // the tab's place on the server while nobody sees the page.
  suspend() {
    clearTimeout(this.#timer);
    const old = this.#ws;
    this.#ws = null;
    old?.close(1000);
  }

  // send sends frame and reports whether it went out: only an open
  // connection sends.
  send(frame) {
    if (this.state !== 'open' || this.#ws?.readyState !== WebSocket.OPEN) { return false; }
    this.#ws.send(JSON.stringify(frame));
    return true;
  }

  // refuse stops for good: it closes the connection, makes no more
  // attempts and moves to 'refused' with text as the reason.
  refuse(text) {
    clearTimeout(this.#timer);
    const old = this.#ws;
    this.#ws = null;
    old?.close(1000);
    this.#set('refused', { text });
  }

  #set(state, detail) {
    this.state = state;
    this.#onState(state, detail);
  }

  #connect() {
    clearTimeout(this.#timer);
    if (this.state === 'refused') { return; }
    this.#set('connecting', {});
    let sock;
    try {
      sock = new WebSocket(wsURL());
    } catch {
      this.#retry({ code: 0, reason: '', dropped: false });
      return;
    }
    this.#ws = sock;
    sock.addEventListener('open', () => {
      if (sock === this.#ws) { sock.send(JSON.stringify(this.#hello())); }
    });
    sock.addEventListener('message', (e) => {
      if (sock === this.#ws && typeof e.data === 'string') { this.#receive(e.data); }
    });
    sock.addEventListener('close', (e) => {
      if (sock !== this.#ws) { return; }
      this.#ws = null;
      const dropped = this.state === 'open';
      if (dropped) { this.#lost = true; }
      this.#retry({ code: e.code, reason: e.reason, dropped });
    });
  }

  #receive(data) {
    let f;
    try { f = JSON.parse(data); } catch { return; }
    if (!f || typeof f !== 'object') { return; }
    try {
      if (f.type === 'error' && this.state !== 'open') {
        this.refuse(`The bot refused to open this chat: ${errorText(f)}`);
        return;
      }
      this.#onFrame(f);
      if (f.type === 'history') { this.#opened(); }
    } catch (err) {
      console.warn(`webchat: cannot handle a ${f.type} frame:`, err);
    }
  }

  #opened() {
    const reconnected = this.#lost;
    this.#lost = false;
    this.#opens++;
    this.#failures = 0;
    this.#set('open', { reconnected });
  }

  // retry schedules the next attempt after a failed or lost one.
  #retry(detail) {
    const base = Math.min(BACKOFF_MAX, BACKOFF_MIN * 2 ** this.#failures);
    const delay = Math.round(base / 2 + Math.random() * base / 2);
    this.#failures++;
    this.#set('closed', { ...detail, everOpen: this.#opens > 0, failures: this.#failures });
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#connect(), delay);
  }
}
