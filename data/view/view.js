// view.js: the live page of `continuo view`: the watch frames (docs/WATCH.md)
// as a scrolling piano roll with attention lines, the knobs as controls, the
// takes, the sync state and the latency.  Nothing is fetched but from the
// view process that served this page (its token in every request).
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const SPAN_S = 12;                      // seconds of music across the roll
const LOW = 21, HIGH = 108;             // the piano's keys
const HEAD_COLOURS = ["#e8596b", "#62d2a2", "#b78cf2", "#f2d35c", "#5cc8f2", "#f28cc8", "#a0e060", "#f0f0f0"];

const notes = new Map();                // id -> {id, who, pitch, vel, on, off}
const byPitch = { player: new Map(), model: new Map() };   // pitch -> open note
const attention = [];                   // {from: id, to: id, head, weight}
const marks = [];                       // {t, kind, label}
let clock = { t: 0, at: performance.now() / 1000 };   // session time at a moment of the page
let settings = {};
let heads = 0;
let unnamed = 0;                        // notes without an id so far
const answers = new Map();              // answer number -> {phrase: [notes], notes: [notes]}
let phrase = [], answer = null;         // the player's notes since the last answer; the answer playing

function q(path) { return path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN); }
function now() { return clock.t + performance.now() / 1000 - clock.at; }
function say(text) { document.getElementById("message").textContent = text; }

// ---- frames

function onNote(f) {
  // The player's notes come as played; the model's up to the answer's lead
  // (a replayed take's all at once) before they sound: only the first set
  // the page's clock, or the roll would run ahead of the music.
  if (f.who === "player") clock = { t: Math.max(clock.t, f.t - 0.05), at: performance.now() / 1000 };
  const side = byPitch[f.who];
  if (f.on) {
    const open = side.get(f.pitch);
    if (open && open.off === null) open.off = f.t;
    // A replayed take's notes have no id (they are not in the context as
    // these notes): each gets one of the page's own, so none hides another.
    const n = { id: f.id || "r" + ++unnamed, who: f.who, pitch: f.pitch, vel: f.vel, on: f.t, off: null };
    notes.set(n.id, n);
    side.set(f.pitch, n);
    if (f.who === "player") phrase.push(n);
    else if (answer) answer.notes.push(n);
  } else {
    const open = side.get(f.pitch);
    if (open && open.off === null) open.off = f.t;
  }
}

function onAttention(f) {
  heads = Math.max(heads, f.heads.length);
  f.heads.forEach((list, h) => list.forEach(([to, w]) => attention.push({ from: f.id, to, head: h, weight: w })));
  drawLegend();
}

function onFrame(f) {
  switch (f.type) {
    case "hello":
      clock = { t: f.t, at: performance.now() / 1000 };
      settings = f.settings || {};
      buildKnobs();
      showSync(f.sync, f.mode);
      break;
    case "note": onNote(f); break;
    case "attention": onAttention(f); break;
    case "set":
      settings[f.key] = f.value;
      showKnob(f.key, f.value);
      break;
    case "phrase_end": {
      const label = turnText(f);
      marks.push({ t: f.t, kind: "end", label });
      document.getElementById("turn").textContent = "phrase end: " + label;
      break;
    }
    case "answer":
      marks.push({ t: f.t, kind: "answer" });
      answer = { phrase, notes: [] };
      answers.set(f.answer, answer);
      phrase = [];
      refreshStatus();
      break;
    case "answer_stop":
      marks.push({ t: f.t, kind: "stop" });
      cutAnswer(f.t);
      break;
    case "saved": refreshStatus(); break;
    case "dropped": say(f.frames + " frames dropped (this page fell behind)"); break;
  }
}

// How a phrase_end frame says the phrase ended: "300 ms, auto (+1.27)" (auto's
// verdict, by the margin it passed), "800 ms, silence (auto -2.10)" (the
// silence rule; auto's verdict, if it judged, missed by that), "hand-over",
// "duet", "file played".
function turnText(f) {
  const other = { handover: "hand-over", duet: "duet", play: "file played" };
  if (f.by !== "verdict" && f.by !== "silence") return other[f.by] || f.by || "";
  const m = typeof f.margin === "number" ? (f.margin >= 0 ? "+" : "") + f.margin.toFixed(2) : null;
  if (f.by === "verdict") return f.after_ms + " ms, auto" + (m ? " (" + m + ")" : "");
  return f.after_ms + " ms, silence" + (m ? " (auto " + m + ")" : "");
}

// The answer was stopped at T (the player came back, panic, a stop): its
// notes planned after T never sound, so they leave the roll and the take the
// page would save (`ctl save-take` has the whole answer); those sounding then
// end at T.
function cutAnswer(t) {
  for (const [id, n] of notes) {
    if (n.who !== "model") continue;
    if (n.on >= t) notes.delete(id);
    else if (n.off === null || n.off > t) n.off = t;
  }
  if (answer) answer.notes = answer.notes.filter((n) => n.on < t);
}

function connect() {
  const es = new EventSource(q("/events"));
  const conn = document.getElementById("conn");
  es.onopen = () => { conn.textContent = "live"; conn.className = "on"; };
  es.onerror = () => { conn.textContent = "reconnecting"; conn.className = "off"; };
  es.onmessage = (e) => { try { onFrame(JSON.parse(e.data)); } catch (err) { say("bad frame: " + err); } };
}

// ---- the roll

function drawRoll() {
  const cv = document.getElementById("roll"), g = cv.getContext("2d");
  const W = cv.width, H = cv.height, t1 = now(), t0 = t1 - SPAN_S;
  const x = (t) => (t - t0) / SPAN_S * W, y = (p) => H - (p - LOW + 1) * H / (HIGH - LOW + 1);
  const kh = Math.max(2, H / (HIGH - LOW + 1) - 1);
  g.clearRect(0, 0, W, H);
  g.fillStyle = "#1a1d23";
  for (let p = LOW; p <= HIGH; p++)
    if ([1, 3, 6, 8, 10].includes(p % 12)) g.fillRect(0, y(p), W, kh);
  for (const m of marks) {
    if (m.t < t0) continue;
    g.strokeStyle = m.kind === "answer" ? "#7fd67f" : m.kind === "stop" ? "#e07b7b" : "#8890a0";
    g.setLineDash(m.kind === "end" ? [4, 4] : []);
    g.beginPath(); g.moveTo(x(m.t), 0); g.lineTo(x(m.t), H); g.stroke();
    if (m.label) {
      g.fillStyle = "#8890a0";
      g.font = "11px sans-serif";
      g.fillText(m.label, x(m.t) + 3, 12);
    }
  }
  g.setLineDash([]);
  for (const n of notes.values()) {
    const end = n.off === null ? t1 : n.off;
    if (end < t0) continue;
    g.fillStyle = n.who === "model" ? "#f0a040" : "#5fa8e8";
    g.globalAlpha = 0.45 + 0.55 * (n.vel / 127);
    g.fillRect(x(n.on), y(n.pitch), Math.max(2, x(end) - x(n.on)), kh);
  }
  g.globalAlpha = 1;
  for (const a of attention) {
    const from = notes.get(a.from), to = notes.get(a.to);
    if (!from || !to || from.on < t0) continue;
    g.strokeStyle = HEAD_COLOURS[a.head % HEAD_COLOURS.length];
    g.globalAlpha = Math.min(1, 0.25 + a.weight * 1.5);
    g.lineWidth = 1 + 3 * a.weight;
    g.beginPath();
    g.moveTo(x(from.on), y(from.pitch) + kh / 2);
    g.lineTo(x(to.on), y(to.pitch) + kh / 2);
    g.stroke();
  }
  g.globalAlpha = 1;
  g.lineWidth = 1;
  prune(t0 - 30);
  requestAnimationFrame(drawRoll);
}

// Notes and lines long gone from the roll are forgotten.
function prune(before) {
  for (const [id, n] of notes)
    if (n.off !== null && n.off < before) notes.delete(id);
  while (attention.length && !notes.has(attention[0].from)) attention.shift();
  while (marks.length && marks[0].t < before) marks.shift();
}

function drawLegend() {
  const box = document.getElementById("heads");
  if (box.childElementCount === heads) return;
  box.textContent = "";
  for (let h = 0; h < heads; h++) {
    const s = document.createElement("span");
    s.textContent = "head " + (h + 1);
    s.style.color = HEAD_COLOURS[h % HEAD_COLOURS.length];
    box.appendChild(s);
  }
}

// ---- knobs

const KNOBS = [
  { key: "density", label: "density", min: 0.25, max: 4, step: 0.05 },
  { key: "register", label: "register", min: -24, max: 24, step: 1 },
  { key: "velocity", label: "velocity", min: 0, max: 127, step: 1, auto: true },
  { key: "temperature", label: "temperature", min: 0, max: 2, step: 0.05 },
  { key: "rhythm_temperature", label: "rhythm temp.", min: 0.1, max: 4, step: 0.05 },
  { key: "pitch_temperature", label: "pitch temp.", min: 0.1, max: 4, step: 0.05 },
  { key: "motif", label: "motif", min: 0, max: 1, step: 0.05 },
  { key: "candidates", label: "candidates", min: 1, max: 8, step: 1 },
  { key: "phrase_end_bias", label: "end bias", min: -5, max: 5, step: 0.1 },
];
const KEYS = ["auto", "off", "C", "G", "D", "A", "E", "B", "F#", "F", "Bb", "Eb", "Ab", "Db",
              "a", "e", "b", "f#", "c#", "d", "g", "c", "f", "bb"];

function send(line) {
  return fetch(q("/cmd"), { method: "POST", body: line, headers: { "Content-Type": "text/plain" } })
    .then((r) => r.text().then((t) => { if (!r.ok) say(t); return r.ok; }))
    .catch((e) => { say("the view process does not answer: " + e); return false; });
}

function row(label, input) {
  const l = document.createElement("label");
  const span = document.createElement("span");
  span.textContent = label;
  const out = document.createElement("output");
  l.append(span, input, out);
  return [l, out];
}

function buildKnobs() {
  const form = document.getElementById("knobs");
  form.textContent = "";
  for (const k of KNOBS) {
    const input = document.createElement("input");
    Object.assign(input, { type: "range", min: k.min, max: k.max, step: k.step, id: "knob-" + k.key });
    const [l, out] = row(k.label, input);
    input.addEventListener("input", () => { out.textContent = input.value; });
    input.addEventListener("change", () => send("set " + k.key + " " + input.value));
    form.appendChild(l);
    showKnob(k.key, settings[k.key]);
  }
  const key = document.createElement("select");
  key.id = "knob-key";
  for (const name of KEYS) key.add(new Option(name, name));
  key.addEventListener("change", () => send("set key " + key.value));
  form.appendChild(row("key", key)[0]);
  const lock = document.createElement("input");
  Object.assign(lock, { type: "checkbox", id: "knob-key_lock" });
  lock.addEventListener("change", () => send("set key_lock " + (lock.checked ? "yes" : "no")));
  form.appendChild(row("key lock", lock)[0]);
  const end = document.createElement("select");
  end.id = "knob-phrase_end";
  for (const name of ["silence", "auto"]) end.add(new Option(name, name));
  end.addEventListener("change", () => send("set phrase_end " + end.value));
  form.appendChild(row("phrase end", end)[0]);
  showKnob("key", settings.key);
  showKnob("key_lock", settings.key_lock);
  showKnob("phrase_end", settings.phrase_end);
}

function showKnob(key, value) {
  const el = document.getElementById("knob-" + key);
  if (!el || value === undefined) return;
  if (el.type === "checkbox") el.checked = value === "yes" || value === "true" || value === true;
  else if (el.tagName === "SELECT") {
    if (![...el.options].some((o) => o.value === value)) el.add(new Option(value, value));
    el.value = value;
  }
  else {
    const v = parseFloat(value);
    if (!Number.isNaN(v)) el.value = v;
    const out = el.parentElement.querySelector("output");
    if (out) out.textContent = value;
  }
}

// ---- a take as a MIDI file (the page's own download: the service writes nothing)

function vlq(n) {
  const out = [n & 0x7f];
  while ((n >>= 7) > 0) out.unshift((n & 0x7f) | 0x80);
  return out;
}

// A track of NOTES on CHANNEL named NAME, times from T0, 960 ticks a second (480 a beat at 120 BPM).
function track(name, list, channel, t0) {
  const ev = [];
  for (const n of list) {
    const off = n.off === null ? n.on + 0.5 : n.off;
    ev.push([Math.round((n.on - t0) * 960), 0x90 | channel, n.pitch, Math.max(1, n.vel)]);
    ev.push([Math.round((off - t0) * 960), 0x80 | channel, n.pitch, 0]);
  }
  ev.sort((a, b) => a[0] - b[0] || (a[1] & 0xf0) - (b[1] & 0xf0));
  const bytes = [0, 0xff, 0x03, name.length, ...[...name].map((c) => c.charCodeAt(0))];
  let last = 0;
  for (const [t, st, d1, d2] of ev) { bytes.push(...vlq(Math.max(0, t - last)), st, d1, d2); last = Math.max(last, t); }
  bytes.push(0, 0xff, 0x2f, 0);
  const len = bytes.length;
  return [0x4d, 0x54, 0x72, 0x6b, len >>> 24, (len >>> 16) & 255, (len >>> 8) & 255, len & 255, ...bytes];
}

// Take N as a MIDI file: the player's phrase (channel 1) and the answer (channel 2); null if unseen.
function takeMidi(n) {
  const a = answers.get(n), all = a ? a.phrase.concat(a.notes) : [];
  if (!all.length) return null;
  const t0 = Math.min(...all.map((x) => x.on));
  const head = [0x4d, 0x54, 0x68, 0x64, 0, 0, 0, 6, 0, 1, 0, 2, 0x01, 0xe0];
  return new Uint8Array([...head, ...track("player", a.phrase, 0, t0), ...track("continuo", a.notes, 1, t0)]);
}

function saveTake(n) {
  const data = takeMidi(n);
  if (!data) return say("take #" + n + " was played before this page opened: replay it to save it");
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([data], { type: "audio/midi" }));
  link.download = "continuo-take-" + n + ".mid";
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

// ---- status and takes

function showSync(sync, mode) {
  if (!sync) return;
  const s = sync.link ? "Link " + Number(sync.tempo).toFixed(1) + " BPM, " + sync.peers + " peers"
          : Number(sync.tempo) > 0 ? "clock " + Number(sync.tempo).toFixed(1) + " BPM" : "free time";
  document.getElementById("sync").textContent = s + (mode ? " (" + mode + ")" : "");
}

function field(text, name) {
  const m = text.match(new RegExp("\\b" + name + "=(\\S+)"));
  return m ? m[1] : "";
}

function showTakes(text) {
  const list = document.getElementById("takes");
  list.textContent = "";
  for (const m of text.matchAll(/#(\d+) at [^;\n]*/g)) {     // `takes`: "ok 2 takes: #1 at 3.2 s, ...; #2 ..."
    const li = document.createElement("li");
    li.textContent = m[0];
    const b = document.createElement("button");
    b.textContent = "replay";
    b.addEventListener("click", () => send("replay " + m[1]));
    li.appendChild(b);
    if (answers.has(Number(m[1]))) {
      const s = document.createElement("button");
      s.textContent = "save";
      s.addEventListener("click", () => saveTake(Number(m[1])));
      li.appendChild(s);
    }
    list.appendChild(li);
  }
}

function refreshStatus() {
  fetch(q("/status")).then((r) => r.text()).then((text) => {
    const [status, takes] = text.split("\n");
    document.getElementById("latency").textContent =
      "first note p50 " + (field(status, "latency_ms_p50") || "-") + " ms";
    const delay = field(status, "answer_delay_ms_p50");
    document.getElementById("answers").textContent = "answer delay p50 " +
      (delay ? Math.round(parseFloat(delay)) : "-") + " ms, barge-ins " + (field(status, "barge_ins") || "0");
    document.getElementById("state").textContent = field(status, "state");
    const sync = field(status, "sync");
    showSync({ link: sync === "link", tempo: sync === "link" ? field(status, "link_tempo") : field(status, "tempo"),
               peers: field(status, "link_peers") || 0 }, field(status, "mode"));
    showTakes(takes || "");
  }).catch(() => {});
}

connect();
requestAnimationFrame(drawRoll);
refreshStatus();
setInterval(refreshStatus, 2000);
