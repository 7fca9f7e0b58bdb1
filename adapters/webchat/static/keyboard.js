// keyboard.js — the bot's reply keyboard under the message box: rows of
// buttons, each of which sends its text as the user's message. A bot
// message puts it up, replacing the one shown, or removes it; it stays up
// through later messages until then. A one-time keyboard hides once a
// button was pressed, and the toggle beside the message box shows or
// hides it again.

import { el } from './markup.js';

// ReplyKeyboard shows a keyboard in the element box, with toggle, a
// button beside the message box that shows or hides it. While a keyboard
// is up, its placeholder, if it has one, replaces the placeholder of
// input, the message box. send(text) sends text as the user's message and
// reports whether it went out.
export class ReplyKeyboard {
  #box;
  #toggle;
  #input;
  #send;
  #placeholder;     // the message box's own placeholder
  #oneTime = false; // the keyboard shown hides after a press
  #up = false;      // a keyboard is up (shown or hidden by the toggle)

  constructor({ box, toggle, input, send }) {
    this.#box = box;
    this.#toggle = toggle;
    this.#input = input;
    this.#send = send;
    this.#placeholder = input.placeholder;
    toggle.addEventListener('click', () => this.#show(box.hidden));
    this.#clear();
  }

  // reset shows the keyboard k of a history frame, the chat's keyboard
  // when the page connects: none, when k is missing.
  reset(k) {
    if (!this.#set(k)) { this.#clear(); }
  }

  // apply applies the keyboard field k of a bot message: a keyboard
  // replaces the one up, a removal ({remove: true}) removes it, and
  // anything else (no field, a malformed one) changes nothing.
  apply(k) {
    if (k && typeof k === 'object' && k.remove === true) {
      this.#clear();
      return;
    }
    this.#set(k);
  }

  // set puts up the keyboard k and reports whether k was one: an object
  // with at least one button (a non-empty string) in its rows. The new
  // buttons are built before the old ones are removed, so a keyboard that
  // cannot be shown leaves the one up as it was.
  #set(k) {
    if (!k || typeof k !== 'object' || k.remove === true || !Array.isArray(k.rows)) { return false; }
    const rows = k.rows.filter(Array.isArray)
      .map((row) => row.filter((text) => typeof text === 'string' && text !== ''))
      .filter((row) => row.length > 0);
    if (rows.length === 0) { return false; }
    const frag = document.createDocumentFragment();
    for (const row of rows) {
      const r = el('div', 'rk-row');
      for (const text of row) {
        const b = el('button', 'rk-btn', text);
        b.type = 'button';
        b.addEventListener('click', () => this.#press(text));
        r.appendChild(b);
      }
      frag.appendChild(r);
    }
    this.#box.replaceChildren(frag);
    this.#oneTime = k.one_time === true;
    this.#up = true;
    this.#input.placeholder = typeof k.placeholder === 'string' && k.placeholder.trim()
      ? k.placeholder : this.#placeholder;
    this.#toggle.hidden = false;
    this.#show(true);
    return true;
  }

  // clear removes the keyboard.
  #clear() {
    this.#box.replaceChildren();
    this.#up = false;
    this.#oneTime = false;
    this.#input.placeholder = this.#placeholder;
    this.#toggle.hidden = true;
    this.#show(false);
  }

  // show shows (on) or hides the keyboard up; with none up it stays hidden.
  #show(on) {
    const shown = on && this.#up;
    this.#box.hidden = !shown;
    this.#toggle.setAttribute('aria-expanded', String(shown));
    this.#toggle.title = shown ? 'Hide the keyboard' : 'Show the keyboard';
    this.#toggle.classList.toggle('active', shown);
  }

  #press(text) {
    if (this.#send(text) && this.#oneTime) { this.#show(false); }
  }
}
