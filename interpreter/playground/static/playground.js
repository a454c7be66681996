// jinjamark playground: editors with line numbers and error marks, and the API's answers shown.
// Plain browser JavaScript, no library: the page must work offline.
"use strict";

const $ = (id) => document.getElementById(id);
const editors = {};
let state = null;
let sequence = 0;   // answers to older requests are dropped
let timer = null;

// ---------------------------------------------------------------------------- editors

function makeEditor(host) {
  const gutter = document.createElement("div");
  gutter.className = "gutter";
  const area = document.createElement("div");
  area.className = "area";
  const backdrop = document.createElement("div");
  backdrop.className = "backdrop";
  const text = document.createElement("textarea");
  text.id = host.dataset.for;
  text.spellcheck = false;
  text.wrap = "off";
  text.setAttribute("autocomplete", "off");
  area.append(backdrop, text);
  host.append(gutter, area);
  const editor = { host, gutter, backdrop, text, error: null };
  text.addEventListener("input", () => { clearMark(editor); numberLines(editor); schedule(); });
  text.addEventListener("keydown", (event) => {  // Tab indents (Shift-Tab still leaves the editor)
    if (event.key !== "Tab" || event.shiftKey || event.ctrlKey || event.altKey || event.metaKey) return;
    event.preventDefault();
    document.execCommand("insertText", false, "    ");  // kept in the undo history, fires input
  });
  text.addEventListener("scroll", () => {
    gutter.scrollTop = text.scrollTop;
    backdrop.scrollTop = text.scrollTop;
    backdrop.scrollLeft = text.scrollLeft;
  });
  return editor;
}

function setText(editor, value) {
  editor.text.value = value;
  clearMark(editor);
  numberLines(editor);
}

function numberLines(editor) {
  const count = editor.text.value.split("\n").length + 1;  // one more: room to scroll
  if (editor.gutter.childElementCount === count) return;
  const lines = [];
  for (let i = 1; i <= count; i++) lines.push(`<div data-line="${i}">${i < count ? i : ""}</div>`);
  editor.gutter.innerHTML = lines.join("");
  markGutter(editor);
}

function markGutter(editor) {
  for (const div of editor.gutter.querySelectorAll(".error")) div.classList.remove("error");
  if (!editor.error || !editor.error.line) return;
  const div = editor.gutter.querySelector(`[data-line="${editor.error.line}"]`);
  if (div) { div.classList.add("error"); div.title = editor.error.message; }
}

// The error's line is tinted and its column marked in the backdrop, which holds the same text
// as the textarea (transparent) so that the marks fall under the right characters.
function markError(editor, error) {
  editor.error = error;
  markGutter(editor);
  if (!error.line) { editor.backdrop.textContent = ""; return; }
  const lines = editor.text.value.split("\n");
  const index = Math.min(error.line, lines.length) - 1;
  const line = Array.from(lines[index]);  // columns count code points, as Python's do
  const column = Math.max(0, Math.min((error.column || 1) - 1, line.length));
  const before = lines.slice(0, index).map((l) => escape(l) + "\n").join("");
  const at = line[column] || " ";
  editor.backdrop.innerHTML = before + `<span class="error-line">${escape(line.slice(0, column).join(""))}` +
    `<span class="error-at">${escape(at)}</span>${escape(line.slice(column + 1).join(""))}</span>`;
  editor.backdrop.scrollTop = editor.text.scrollTop;
  editor.backdrop.scrollLeft = editor.text.scrollLeft;
}

function clearMark(editor) {
  editor.error = null;
  editor.backdrop.textContent = "";
  markGutter(editor);
}

// Put the cursor on the error and scroll it into view.
function reveal(editor) {
  const error = editor.error;
  if (!error || !error.line) { editor.text.focus(); return; }
  revealAt(editor, error.line, error.column);
}

// Put the cursor on line `number`, column `column` (code points, from 1; the line's start
// without one) and scroll it into view.
function revealAt(editor, number, column) {
  const lines = editor.text.value.split("\n");
  let offset = 0;
  for (let i = 0; i < number - 1 && i < lines.length; i++) offset += lines[i].length + 1;
  const line = Array.from(lines[number - 1] || "");
  offset += line.slice(0, Math.max(0, (column || 1) - 1)).join("").length;
  editor.text.focus();
  editor.text.setSelectionRange(offset, offset);
  const lineHeight = parseFloat(getComputedStyle(editor.text).lineHeight) || 18;
  editor.text.scrollTop = Math.max(0, (number - 4) * lineHeight);
}

function escape(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

// ---------------------------------------------------------------------------- the API

async function call(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let answer;
  try { answer = await response.json(); } catch (e) { answer = { error: { message: `HTTP ${response.status}` } }; }
  return answer;
}

function request() {
  const mask = $("mask").value;  // "" is off: origins and masks cost an origin render each
  return {
    template: editors.template.text.value,
    conversation: editors.conversation.text.value,
    kwargs: editors.kwargs.text.value,
    add_generation_prompt: $("add-generation-prompt").checked,
    origins: $("origins").checked,
    append_only: $("append-only").checked,  // a render a turn
    mask: Boolean(mask),
    mask_source: mask || "auto",
  };
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(update, 250);
}

async function update() {
  const mine = ++sequence;
  const body = request();
  setStatus("loading", "rendering…");
  const [rendered, analysed] = await Promise.all([
    call("POST", "/api/render", body), call("POST", "/api/analyze", { template: body.template })]);
  if (mine !== sequence) return;
  for (const editor of Object.values(editors)) clearMark(editor);
  const error = rendered.error || analysed.error;
  showError(error);
  // what an error leaves on the page is the last good answer: shown dimmed
  $("render-output").classList.toggle("stale", Boolean(rendered.error));
  $("tokens-output").classList.toggle("stale", Boolean(rendered.error));
  $("append-only-output").classList.toggle("stale", Boolean(rendered.error));
  $("analysis-output").classList.toggle("stale", Boolean(analysed.error));
  if (!rendered.error) showRender(rendered);
  if (!analysed.error) showAnalysis(analysed);
  if (error) setStatus("error", `${error.kind || "error"}`);
  else setStatus("rendered", "rendered");
}

function setStatus(name, text) {
  document.body.dataset.state = name;
  $("status").textContent = text;
}

// ---------------------------------------------------------------------------- showing answers

function showError(error) {
  const box = $("error");
  if (!error) { box.hidden = true; box.textContent = ""; return; }
  const editor = editors[error.where];
  if (editor) markError(editor, error);
  const where = error.where ? `${error.where}` + (error.line ? `, line ${error.line}` : "") +
    (error.column ? `, column ${error.column}` : "") : "";
  box.innerHTML = `<span class="where">${escape(where)}</span> <span class="kind">${escape(error.kind || "")}</span>: ` +
    `<span class="message">${escape(error.message || "")}</span>` +
    (error.text && error.text !== error.message ? `<pre>${escape(error.text)}</pre>` : "");
  box.dataset.where = error.where || "";
  box.dataset.line = error.line || "";
  box.dataset.column = error.column || "";
  box.hidden = false;
  box.onclick = () => editor && reveal(editor);
}

function showRender(answer) {
  const parts = answer.parts;
  const out = $("render-output");
  out.textContent = "";
  const input = parts.items.reduce((n, item) => n + (item.input ? item.text.length : 0), 0);
  out.classList.toggle("origins", Boolean(answer.origins));
  if (answer.origins) {
    showOrigins(out, answer.origins);
  } else {
    for (const item of parts.items) {
      const span = document.createElement("span");
      span.textContent = item.text;
      if (item.input) span.className = "input";
      out.append(span);
    }
  }
  showOriginsLegend(answer.origins);
  if (!parts.items.length) out.innerHTML = '<span class="empty">(empty output)</span>';
  $("render-info").textContent = `${parts.length} characters, ${input} from input` +
    (parts.truncated ? ` (the first ${parts.items.reduce((n, i) => n + i.text.length, 0)} shown)` : "");
  showTokens(answer.tokens);
  showAppendOnly(answer.append_only);
}

// ---------------------------------------------------------------------------- append-only

// The turns whose prompt (what a server renders for that request) is no prefix of the whole
// conversation's render: a row each, with what each side has there; a click (or Enter) on a
// row puts the template editor's cursor on the line that wrote the prompt's differing text.
function showAppendOnly(found) {
  const out = $("append-only-output");
  out.textContent = "";
  out.hidden = !found;
  if (!found) return;
  const summary = document.createElement("div");
  summary.className = `summary ${found.append_only ? "yes" : "no"}`;
  summary.textContent = found.append_only ?
    `append-only: each of the ${found.checked} prompts is a prefix of the next` :
    `not append-only: ${found.breaks.length} of the ${found.checked} prompts are no prefix of the whole render`;
  out.append(summary);
  for (const item of found.breaks) out.append(breakRow(item, found.roles));
}

function breakRow(item, roles) {
  const row = document.createElement("div");
  row.className = "break";
  row.dataset.turn = item.turn;
  row.dataset.line = item.line || "";
  const head = document.createElement("div");
  const words = [`turn ${item.turn}`];
  if (item.offset !== null) words.push(`character ${item.offset}`);
  if (item.token !== null) words.push(`token ${item.token}`);
  if (item.message !== null) words.push(messageName(item.message, roles));
  head.append(words.join(" \u00b7 ") + " \u00b7 ");
  const cause = document.createElement("span");
  cause.className = "cause";
  cause.textContent = item.cause;
  head.append(cause);
  if (item.line) {
    const line = document.createElement("span");
    line.className = "line";
    line.textContent = ` \u00b7 template line ${item.line}` + (item.column ? `, column ${item.column}` : "");
    head.append(line);
  }
  row.append(head);
  const excerpt = document.createElement("dl");
  excerpt.className = "excerpt";
  const side = (name, text) => {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = text;
    excerpt.append(dt, dd);
  };
  if (item.offset === null) {  // the template raised for this prompt: prompt holds its message
    side("error", item.prompt);
  } else if (item.token !== null) {  // the text is a prefix, its tokens are not
    side("prompt ends", visible(item.prompt));
    side("whole has", visible(item.whole));
  } else {
    side("prompt has", visible(item.prompt));
    side("whole has", visible(item.whole));
  }
  row.append(excerpt);
  if (item.line) {
    row.tabIndex = 0;
    row.setAttribute("role", "button");
    row.title = `go to template line ${item.line}`;
    const go = () => revealAt(editors.template, item.line, item.column);
    row.addEventListener("click", go);
    row.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); go(); }
    });
  }
  return row;
}

// Text with its newlines, tabs and other control characters escaped, in quotes: "a\nb".
function visible(text) {
  return JSON.stringify(text);
}

// ---------------------------------------------------------------------------- origins

const HUES = 8;  // message i is coloured hue-(i % HUES): a message keeps its colour while editing

// Each origin part a span: input in its message's colour, the template text written for a
// message (its turn) in a pale tint of it, template text outside any turn neutral, the
// generation prompt outlined; the hover title says where the characters came from.
function showOrigins(out, origins) {
  for (const item of origins.items) {
    const span = document.createElement("span");
    span.textContent = item.text;
    const classes = ["origin", item.input ? "input" : "template"];
    if (item.message !== null) classes.push("hued", `hue-${item.message % HUES}`);
    else if (!item.input) classes.push("outside");
    if (item.generation_prompt) classes.push("prompt");
    span.className = classes.join(" ");
    span.title = originTitle(item, origins.roles);
    out.append(span);
  }
}

function messageName(index, roles) {
  const role = roles[index];
  return `message ${index}` + (typeof role === "string" ? ` (${role})` : "");
}

// e.g. "message 2 (assistant) · content · template line 7"
function originTitle(item, roles) {
  const words = [];
  if (item.generation_prompt) words.push("generation prompt");
  if (item.message !== null) words.push(messageName(item.message, roles));
  else if (!item.input && !item.generation_prompt) words.push("outside any turn");
  if (item.sources) {
    const named = item.sources.slice(0, 6).map((s) => (s.message !== null ? `message ${s.message} ` : "") +
      s.field + (s.key ? " (key)" : ""));
    words.push(`computed from ${named.join(" + ")}${item.sources.length > 6 ? " + …" : ""}`);
  } else if (item.input) {
    words.push(item.field + (item.key ? " (key)" : ""));
  } else {
    words.push("template text");
  }
  if (item.line) words.push(`template line ${item.line}`);
  return words.join(" \u00b7 ");
}

const LEGEND_MESSAGES = 12;

function showOriginsLegend(origins) {
  const legend = $("origins-legend");
  legend.textContent = "";
  legend.hidden = !origins;
  if (!origins) return;
  const chip = (text, className) => {
    const span = document.createElement("span");
    span.className = `chip ${className}`;
    span.textContent = text;
    legend.append(span);
  };
  origins.roles.slice(0, LEGEND_MESSAGES).forEach((_, i) => chip(messageName(i, origins.roles), `input hued hue-${i % HUES}`));
  if (origins.roles.length > LEGEND_MESSAGES) chip(`… ${origins.roles.length - LEGEND_MESSAGES} more`, "outside");
  chip("template text of a turn: pale", "template hued hue-0");
  chip("template text outside any turn", "template outside");
  chip("generation prompt", "template prompt");
  if (origins.truncated) chip("(the first characters only)", "outside");
}

// ---------------------------------------------------------------------------- tokens

function showTokens(tokens) {
  const out = $("tokens-output");
  out.textContent = "";
  if (!tokens) {
    out.innerHTML = state.tokenizer ? '<span class="empty">The render is too long to show its tokens.</span>' :
      '<span class="empty">Start the playground with --model FOLDER (a model folder with ' +
      "tokenizer.json, and the tokenizers package installed) to see the tokens.</span>";
    $("tokens-info").textContent = "";
    return;
  }
  for (const token of tokens.items) {
    const span = document.createElement("span");
    span.className = "tok" + (token.control ? " control" : "") + (token.input ? " input" : "") +
      (token.mask ? " masked" : "");
    span.textContent = token.text.replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5") || "\u2205";
    span.title = `id ${token.id}` + (token.control ? ", control token" : "") + (token.input ? ", from input" : "") +
      (token.mask ? ", in the assistant mask" : "");
    out.append(span);
  }
  $("tokens-info").textContent = `${tokens.count} tokens, ${tokens.control} control tokens ` +
    `(encoding the flat string would give ${tokens.flat_control})` +
    (tokens.mask_source ? `, ${tokens.masked} in the assistant mask (source: ${tokens.mask_source})` : "");
}

function showAnalysis(analysis) {
  const out = $("analysis-output");
  const rows = [
    ["variables", analysis.variables.join(", ")],
    ["keys read", analysis.keys.join(", ")],
    ["content format", analysis.content_format],
    ["{% generation %}", analysis.has_generation],
  ];
  if (analysis.capabilities) {
    for (const [name, value] of Object.entries(analysis.capabilities)) rows.push([name, value]);
  } else {
    rows.push(["capabilities", `not probed: ${analysis.not_probed}`]);
  }
  out.innerHTML = rows.map(([name, value]) => `<dt>${escape(name.replace(/_/g, " "))}</dt>` +
    `<dd class="${value === true ? "yes" : value === false ? "no" : ""}">${escape(shown(value))}</dd>`).join("");
}

function shown(value) {
  if (value === true) return "yes";
  if (value === false) return "no";
  if (value === null || value === undefined) return "—";
  if (Array.isArray(value)) return value.length ? value.join(", ") : "—";
  return String(value);
}

// ---------------------------------------------------------------------------- examples

function choose(key) {
  const example = state.examples.find((e) => e.key === key);
  if (example) {
    setText(editors.template, example.template);
    setText(editors.conversation, example.conversation);
    setText(editors.kwargs, example.kwargs);
    $("add-generation-prompt").checked = example.add_generation_prompt;
  } else if (key.startsWith("model:")) {
    setText(editors.template, state.templates[key.slice(6)]);
  }
  update();
}

function fillPicker() {
  const picker = $("example");
  const add = (value, title) => picker.append(new Option(title, value));
  for (const name of Object.keys(state.templates)) add(`model:${name}`, `${state.model || "model"}: ${name}`);
  for (const example of state.examples) add(example.key, example.title);
  picker.addEventListener("change", () => choose(picker.value));
}

async function start() {
  for (const host of document.querySelectorAll(".editor")) editors[host.dataset.for] = makeEditor(host);
  state = await call("GET", "/api/state");
  if (state.error) { showError(state.error); setStatus("error", "cannot load"); return; }
  fillPicker();
  const tokens = Object.entries(state.special_tokens).map(([k, v]) => `${k}=${v}`).join(" ");
  $("model").textContent = state.model ? `model ${state.model}${tokens ? " · " + tokens : ""}` : "";
  $("add-generation-prompt").addEventListener("change", schedule);
  $("origins").addEventListener("change", schedule);
  $("append-only").addEventListener("change", schedule);
  $("mask").addEventListener("change", schedule);
  $("mask").disabled = !state.tokenizer;  // a mask is over tokens
  const first = state.examples[0];  // its conversation; the model's template when there is one
  setText(editors.conversation, first.conversation);
  setText(editors.kwargs, first.kwargs);
  $("add-generation-prompt").checked = first.add_generation_prompt;
  const modelTemplates = Object.keys(state.templates);
  setText(editors.template, modelTemplates.length ? state.templates[modelTemplates[0]] : first.template);
  await update();
}

document.addEventListener("DOMContentLoaded", start);
