// Progressive enhancement only: every page works without this script.
"use strict";

function countdown(el) {
  const left = Date.parse(el.dataset.expires) - Date.now();
  if (left <= 0) { el.textContent = "now (expired)"; return; }
  const s = Math.floor(left / 1000);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  el.textContent = "in " + h + "h " + m + "m " + (s % 60) + "s (" + el.getAttribute("datetime") + ")";
}

function tick() { document.querySelectorAll("[data-expires]").forEach(countdown); }

function writing(source) {
  // The answer as the model writes it; the page reloads with the recorded one when it lands.
  const line = document.getElementById("answer-live-line");
  const text = document.getElementById("answer-live");
  if (!line || !text) return;
  source.addEventListener("token", (event) => {
    const token = JSON.parse(event.data);
    if (line.hidden && token.status !== "open") return;  // written already: the timeline has it
    text.textContent = text.textContent.slice(0, token.offset) + token.text;
    line.hidden = false;
  });
  source.addEventListener("reset", (event) => {
    text.textContent = "";
    document.getElementById("live").textContent = "The answer starts over (" + JSON.parse(event.data).reason + ").";
  });
}

function follow(url, lastSeq) {
  const source = new EventSource(url);
  writing(source);
  source.addEventListener("moved", (event) => {
    const moved = JSON.parse(event.data);
    if (String(moved.last_seq) === lastSeq) return;
    source.close();
    document.getElementById("live").textContent = "The run moved: now " + moved.status + ". Reloading.";
    window.location.reload();
  });
}

document.addEventListener("DOMContentLoaded", () => {
  tick();
  setInterval(tick, 1000);
  const body = document.body;
  if (body.dataset.stream) follow(body.dataset.stream, body.dataset.lastSeq);
});
