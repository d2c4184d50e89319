// iglearn demo page: one round = a coloured shape, the learner's word, the person's gesture.
// Plain JavaScript, no libraries. The page talks to the service's /demo/api endpoints.
"use strict";

const COLOURS = {red: "#c62828", green: "#2e7d32", blue: "#1565c0"};
const WINDOW = 20;  // rounds in the "recently right" share
const REFIT_WAIT_MS = 10000;  // longest wait for a re-fit under way before the next word
const MIN_EXTENT = 8;  // canvas pixels: a smaller drawing is a tap, not a gesture
const MAX_POINTS = 2000;  // a longer drawing is thinned to this many points before it is sent
                          // (the service takes at most 5000; it resamples to 16 anyway)

// The shapes' random draws: Math.random, or with ?seed=N in the page's address a seeded
// generator (mulberry32), so that the page shows the same sequence of shapes every time.
const random = (() => {
  const seed = new URLSearchParams(location.search).get("seed");
  if (seed === null || !/^[0-9]{1,9}$/.test(seed)) return Math.random;
  let a = Number(seed) >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
})();

const state = {colours: [], shapes: [], decision: null, colour: 0, shape: 0,
               strokes: [], drawing: false, history: [], busy: false, pending: false};

const $ = (id) => document.getElementById(id);
const canvas = $("canvas");
const pen = canvas.getContext("2d");

function say(message) {
  $("status").textContent = message;
}

function setBusy(busy) {
  state.busy = busy;
  document.body.dataset.state = busy ? "busy" : "ready";
  $("send").disabled = busy;
  $("reset").disabled = busy;
}

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify(body)};
  const response = await fetch("/demo/api/" + path, options);
  const value = await response.json();
  if (!response.ok) {
    const error = new Error(value.error + (value.field ? " (" + value.field + ")" : ""));
    error.status = response.status;
    throw error;
  }
  return value;
}

// -- the context: a coloured shape ---------------------------------------------------------
function drawShape(colour, shape) {
  const svg = $("shape");
  const fill = COLOURS[state.colours[colour]];
  const kinds = {
    circle: '<circle cx="80" cy="80" r="62"/>',
    square: '<rect x="22" y="22" width="116" height="116"/>',
    triangle: '<polygon points="80,14 148,142 12,142"/>',
  };
  const label = state.colours[colour] + " " + state.shapes[shape];
  svg.innerHTML = '<title id="shape-label">' + label + "</title>" +
    '<g fill="' + fill + '" stroke="#111" stroke-width="3">' + kinds[state.shapes[shape]] +
    "</g>";
  svg.dataset.colour = String(colour);
  svg.dataset.shape = String(shape);
  $("context-text").textContent = "a " + label + " (as the numbers of its colour and kind)";
}

// The next word comes from the newest model: while a re-fit is due or under way (it takes
// about a second), wait for it, at most REFIT_WAIT_MS. The last answer's status says
// whether one is pending; only then is the service asked again.
async function waitForModel() {
  if (!state.pending) return;
  const until = Date.now() + REFIT_WAIT_MS;
  let s = await api("status");
  while (s.refit_pending && Date.now() < until) {
    say("Re-fitting the policy and the decoder on " + s.learnable + " rounds…");
    await new Promise((resolve) => setTimeout(resolve, 100));
    s = await api("status");
  }
  showStatus(s);
}

async function newRound() {
  setBusy(true);
  clearCanvas();
  state.colour = Math.floor(random() * state.colours.length);
  state.shape = Math.floor(random() * state.shapes.length);
  drawShape(state.colour, state.shape);
  $("word").textContent = "…";
  try {
    await waitForModel();
    const d = await api("decide", {colour: state.colour, shape: state.shape});
    state.decision = d;
    $("word").textContent = d.word;
    $("word").dataset.action = String(d.action);
    $("word").style.color = "#111";
    $("explored").textContent = d.explored
      ? "(a random try, to keep exploring)"
      : "(its best guess, model version " + d.model_version + ")";
    $("round").textContent = String(state.history.length + 1);
    document.body.dataset.round = String(state.history.length + 1);
    setBusy(false);
  } catch (e) {
    say("The service did not answer: " + e.message + ". Reload the page to try again.");
  }
}

// -- the gesture: strokes on the canvas ----------------------------------------------------
function clearCanvas() {
  state.strokes = [];
  pen.fillStyle = "#ffffff";
  pen.fillRect(0, 0, canvas.width, canvas.height);
}

function point(event) {
  const box = canvas.getBoundingClientRect();
  return [(event.clientX - box.left) * canvas.width / box.width,
          (event.clientY - box.top) * canvas.height / box.height];
}

function line(from, to) {
  pen.strokeStyle = "#111";
  pen.lineWidth = 4;
  pen.lineCap = "round";
  pen.lineJoin = "round";
  pen.beginPath();
  pen.moveTo(from[0], from[1]);
  pen.lineTo(to[0], to[1]);
  pen.stroke();
}

canvas.addEventListener("pointerdown", (event) => {
  if (state.busy) return;
  event.preventDefault();
  canvas.setPointerCapture(event.pointerId);
  state.drawing = true;
  state.strokes.push([point(event)]);
});
canvas.addEventListener("pointermove", (event) => {
  if (!state.drawing) return;
  const stroke = state.strokes[state.strokes.length - 1];
  const p = point(event);
  line(stroke[stroke.length - 1], p);
  stroke.push(p);
});
for (const name of ["pointerup", "pointercancel"]) {
  canvas.addEventListener(name, () => { state.drawing = false; });
}

// The page's own two gestures, for the keyboard: a circle (Y) and a zigzag (N).
function drawTemplate(kind) {
  clearCanvas();
  const c = canvas.width / 2, r = canvas.width * 0.3;
  const points = [];
  if (kind === "circle") {
    for (let i = 0; i <= 32; i++) {
      const a = 2 * Math.PI * i / 32;
      points.push([c + r * Math.cos(a), c + r * Math.sin(a)]);
    }
  } else {
    for (let i = 0; i <= 4; i++) {
      points.push([c - r + i * r / 2, c + (i % 2 ? -r : r) / 2]);
    }
  }
  for (let i = 1; i < points.length; i++) line(points[i - 1], points[i]);
  state.strokes = [points];
}

canvas.addEventListener("keydown", (event) => {
  const key = event.key.toLowerCase();
  if (key === "y" || key === "n") {
    event.preventDefault();
    drawTemplate(key === "y" ? "circle" : "zigzag");
    say("Drew the " + (key === "y" ? "circle" : "zigzag") + "; press Send (or Enter).");
  } else if (key === "enter") {
    event.preventDefault();
    send();
  }
});

// -- one round's end: send the gesture, show what the learner made of it -------------------
function showStatus(s, reward) {
  $("rounds").textContent = String(s.interactions);
  $("version").textContent = s.model_version === 0
    ? "none yet (first fit after " + s.min_interactions + " rounds)"
    : String(s.model_version);
  if (reward !== undefined) {
    $("reward").textContent = reward === null
      ? "– (no model yet)"
      : reward.toFixed(2) + (reward >= 0.5 ? " (read as “right”)" : " (read as “wrong”)");
    $("reward").dataset.value = reward === null ? "" : String(reward);
  }
  const recent = state.history.slice(-WINDOW);
  if (recent.length) {
    const right = recent.filter((r) => r.right).length;
    $("accuracy").textContent = right + " of " + recent.length +
      " (" + Math.round(100 * right / recent.length) + " %)";
  } else {
    $("accuracy").textContent = "–";
  }
  const last = s.last_refit || {};
  state.pending = s.refit_pending;
  if (s.refit_pending) {
    say("Re-fitting the policy and the decoder on " + s.learnable +
        " rounds, in the background…");
  } else if (last.error) {
    say("Waiting for data: " + last.error);
  } else if (last.version && last.held_back) {
    // stored, not served: say which model answers instead, and why
    say("Model version " + last.version + ", fitted on " + last.learnable +
        " rounds, is held back (" + last.held_back + "); " +
        (s.model_version ? "version " + s.model_version + " still answers."
                         : "the words stay random tries until a fit is served."));
  } else if (last.version) {
    say("Model version " + last.version + " was fitted on " + last.learnable +
        " rounds in " + (last.seconds || 0).toFixed(1) + " s.");
  } else {
    say("Collecting rounds: the first fit comes after " + s.min_interactions + ".");
  }
}

// The score of this tab's rounds, kept in the tab's session storage so that a reload keeps
// it (as long as the service has at least that many rounds: a reset elsewhere drops it).
const SAVED_HISTORY = "iglearn-demo-history";

function showHistoryItem(round, right, word) {
  const item = document.createElement("li");
  item.className = right ? "right" : "wrong";
  item.textContent = right ? "✓" : "✗";
  item.title = "round " + round + ": " + word + (right ? ", right" : ", wrong");
  const list = $("history");
  list.appendChild(item);
  while (list.children.length > 40) list.removeChild(list.firstChild);
}

function saveHistory() {
  try {
    sessionStorage.setItem(SAVED_HISTORY, JSON.stringify(state.history));
  } catch (e) {
    // no session storage (a private window's quota): the score lasts until a reload
  }
}

function restoreHistory(interactions) {
  let saved = [];
  try {
    saved = JSON.parse(sessionStorage.getItem(SAVED_HISTORY) || "[]");
  } catch (e) {
    saved = [];
  }
  const valid = Array.isArray(saved) && saved.length <= interactions &&
    saved.every((r) => r && typeof r.right === "boolean" && typeof r.word === "string");
  state.history = valid ? saved : [];
  $("history").innerHTML = "";
  state.history.forEach((r, i) => showHistoryItem(i + 1, r.right, r.word));
  saveHistory();
}

function addHistory(right, word) {
  state.history.push({right: right, word: word});
  showHistoryItem(state.history.length, right, word);
  saveHistory();
}

// The larger side of the box around a drawing's points, in canvas pixels.
function extent(points) {
  const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
  return Math.max(Math.max(...xs) - Math.min(...xs), Math.max(...ys) - Math.min(...ys));
}

// At most MAX_POINTS of a drawing's points, evenly spaced in drawing order, both ends kept.
function thinned(points) {
  if (points.length <= MAX_POINTS) return points;
  const step = (points.length - 1) / (MAX_POINTS - 1);
  return Array.from({length: MAX_POINTS}, (_, i) => points[Math.round(i * step)]);
}

async function send() {
  if (state.busy || !state.decision) return;
  const stroke = thinned([].concat(...state.strokes));
  if (stroke.length < 2) {
    say("Draw a gesture first (or press Y or N on the canvas).");
    return;
  }
  if (extent(stroke) < MIN_EXTENT) {
    clearCanvas();
    say("That was a tap, too small to read as a gesture: draw it larger.");
    return;
  }
  setBusy(true);
  try {
    const d = state.decision;
    const result = await api("feedback", {event_id: d.event_id, stroke: stroke});
    addHistory(state.colours[d.action] === state.colours[state.colour], d.word);
    showStatus(result, result.decoded_reward);
    state.decision = null;
  } catch (e) {
    if (e.status === 404) {
      // the service no longer knows this word's decision (the learner was reset, from
      // another tab or by its operator): sending again could never succeed, so start over
      state.decision = null;
      await newRound();
      if (state.decision) {
        say("The learner was reset elsewhere and forgot that word; this is a new round.");
      }
      return;
    }
    say("The gesture was not stored: " + e.message);
    setBusy(false);
    return;
  }
  await newRound();
}

async function reset() {
  if (state.busy) return;
  setBusy(true);
  try {
    const s = await api("reset", {});
    state.history = [];
    saveHistory();
    $("history").innerHTML = "";
    showStatus(s, null);
    $("reward").textContent = "–";
    say("The learner forgot everything. Start again, with any two gestures.");
  } catch (e) {
    say("Reset failed: " + e.message);
  }
  await newRound();
}

// While a re-fit is under way, look for the new model now and then.
setInterval(async () => {
  if (!state.pending || state.busy) return;
  try {
    showStatus(await api("status"));
  } catch (e) {
    // the next round reports it
  }
}, 1000);

$("send").addEventListener("click", send);
$("clear").addEventListener("click", () => { clearCanvas(); say("Cleared; draw again."); });
$("reset").addEventListener("click", reset);

(async function start() {
  setBusy(true);
  clearCanvas();
  try {
    const s = await api("status");
    state.colours = s.colours;
    state.shapes = s.shapes;
    restoreHistory(s.interactions);
    showStatus(s);
  } catch (e) {
    say("The service did not answer: " + e.message);
    return;
  }
  await newRound();
})();
