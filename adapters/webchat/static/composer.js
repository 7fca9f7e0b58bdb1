// composer.js — the message box: Enter sends and Shift+Enter adds a line,
// the box grows with its text, a message longer than the server takes is
// stopped before it is sent, and a message the server turns away for now
// (busy, stopping) can go back into the box. The attach button sends a
// file, captioned with the box's text.

const MAX_PENDING = 32;  // refs of sent messages remembered
const MAX_HEIGHT = 160;  // px the box grows to at most
const EXCERPT = 40;      // characters of a message quoted in a notice

// fileKind returns the attachment kind a file of media type type goes as.
export function fileKind(type) {
  if (type === 'image/gif') { return 'animation'; }
  if (type.startsWith('image/')) { return 'photo'; }
  if (type.startsWith('video/')) { return 'video'; }
  if (type.startsWith('audio/')) { return 'audio'; }
  return 'document';
}

// base64 returns the base64 of the bytes of buf, an ArrayBuffer.
function base64(buf) {
  const bytes = new Uint8Array(buf);
  const parts = [];
  for (let i = 0; i < bytes.length; i += 0x8000) {
    parts.push(String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000)));
  }
  return btoa(parts.join(''));
}

// Composer runs the form form with its textarea input and its submit
// button, and the attach button with its file input. send(frame) sends a
// frame and reports whether it went out; notify(kind, text, ms) shows a
// notice (see Banner.show in notices.js).
export class Composer {
  // maxText is the longest message, in UTF-8 bytes, the server takes.
  maxText = 16384;

  #input;
  #button;
  #attach;
  #file;
  #maxUpload = 0;   // the largest file the server takes; 0: none
  #enabled = false;
  #send;
  #notify;
  #refSeq = 0;
  #pending = new Map();   // ref of a sent message -> its text, until refused or forgotten
  #enterHandled = false;

  constructor({ form, input, button, attach, file, send, notify }) {
    this.#input = input;
    this.#button = button;
    this.#attach = attach;
    this.#file = file;
    attach.addEventListener('click', () => file.click());
    file.addEventListener('change', () => {
      const f = file.files?.[0];
      file.value = '';
      if (f) { this.#sendFile(f); }
    });
    this.#send = send;
    this.#notify = notify;

    // Enter sends and Shift+Enter adds a line. Some input paths
    // (automation, a few IMEs) deliver the Enter's line break separately
    // from its keydown, so the break that follows a handled Enter is
    // dropped as well.
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.#submit();
    });
    input.addEventListener('keydown', (e) => {
      this.#enterHandled = false;
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.#enterHandled = true;
        this.#submit();
      }
    });
    input.addEventListener('beforeinput', (e) => {
      if (this.#enterHandled && (e.inputType === 'insertLineBreak' || e.inputType === 'insertParagraph')) {
        e.preventDefault();
      }
      this.#enterHandled = false;
    });
    input.addEventListener('keyup', () => { this.#enterHandled = false; });
    input.addEventListener('input', () => this.#autosize());
  }

  focus() { this.#input.focus(); }

  // setEnabled enables or disables the send and attach buttons.
  setEnabled(on) {
    this.#enabled = on;
    this.#button.disabled = !on;
    this.#attach.disabled = !on;
  }

  // setMaxUpload sets the largest file, in bytes, the server takes; 0
  // hides the attach button.
  setMaxUpload(n) {
    this.#maxUpload = Number.isSafeInteger(n) && n > 0 ? n : 0;
    this.#attach.hidden = this.#maxUpload === 0;
  }

  // #sendFile sends the file f, captioned with the box's text, which then
  // leaves the box.
  async #sendFile(f) {
    if (f.size > this.#maxUpload) {
      this.#notify('error', `“${f.name}” is too large (at most ${this.#maxUpload} bytes).`, 6000);
      return;
    }
    const caption = this.#input.value.trim();
    if (new TextEncoder().encode(caption).length > this.maxText) {
      this.#notify('error', `The caption is too long (at most ${this.maxText} bytes).`, 6000);
      return;
    }
    let content;
    try {
      content = base64(await f.arrayBuffer());
    } catch {
      this.#notify('error', `“${f.name}” could not be read.`, 6000);
      return;
    }
    const frame = { type: 'file', kind: fileKind(f.type), file_name: f.name, mime: f.type, content, caption, ref: `f${++this.#refSeq}` };
    if (!this.#enabled || !this.#send(frame)) {
      this.#notify('warn', 'Not connected; send the file again when the chat is back.', 4000);
      return;
    }
    if (caption && this.#input.value.trim() === caption) {
      this.#input.value = '';
      this.#autosize();
    }
  }

  // refused tells the composer the server refused the frame with ref. If
  // it was a message and giveBack is true, its text goes back into the
  // box when the box is empty. It returns what to add to the refusal's
  // notice: what happened to the message, or ''.
  refused(ref, giveBack) {
    if (typeof ref !== 'string' || !this.#pending.has(ref)) { return ''; }
    const sent = this.#pending.get(ref);
    this.#pending.delete(ref);
    if (!giveBack) { return ''; }
    if (!this.#input.value.trim()) {
      this.#input.value = sent;
      this.#autosize();
      return ' Your message is back in the box.';
    }
    return ` Your message “${sent.length > EXCERPT ? `${sent.slice(0, EXCERPT)}…` : sent}” was not sent.`;
  }

  #autosize() {
    this.#input.style.height = 'auto';
    this.#input.style.height = `${Math.min(this.#input.scrollHeight, MAX_HEIGHT)}px`;
  }

  // sendText sends text as the user's message, as if typed into the box
  // but leaving the box as it is (a reply keyboard's button sends its
  // text so), and reports whether it went out; when it did not, a notice
  // says why.
  sendText(text) {
    if (!this.#post(text)) {
      this.#notify('warn', 'Not connected; press the button again when the chat is back.', 4000);
      return false;
    }
    return true;
  }

  #submit() {
    const text = this.#input.value;
    if (!text.trim()) { return; }
    if (new TextEncoder().encode(text).length > this.maxText) {
      this.#notify('error', `This message is too long (at most ${this.maxText} bytes).`, 6000);
      return;
    }
    if (!this.#post(text)) {
      this.#notify('warn', 'Not connected; your message is kept. Send it again when the chat is back.', 4000);
      return;
    }
    this.#input.value = '';
    this.#autosize();
    this.#input.focus();
  }

  // post sends a message frame with text, remembering its ref so that a
  // refusal can give the text back, and reports whether it went out.
  #post(text) {
    const ref = `m${++this.#refSeq}`;
    if (!this.#send({ type: 'message', text, ref })) { return false; }
    this.#pending.set(ref, text);
    if (this.#pending.size > MAX_PENDING) { this.#pending.delete(this.#pending.keys().next().value); }
    return true;
  }
}
