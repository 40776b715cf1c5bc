// The review workstation's page behaviour: segment playback, keyboard, the question
// before Finalize and Send back, one text at a time, the live diff.
// Served as a file (the Content-Security-Policy allows no inline script).
"use strict";

(function () {
  const REWIND_ON_RESUME_S = 2;
  const JUMP_S = 5;
  const RATE_STEP = 0.25;
  const RATE_MIN = 0.5;
  const RATE_MAX = 2;

  const player = document.getElementById("player");
  if (!player) {
    return;
  }
  const segments = Array.from(document.querySelectorAll("[data-testid=segment]"));
  const editor = document.getElementById("editor");
  const machine = document.getElementById("machine-text");
  const diff = document.getElementById("diff");
  const speed = document.getElementById("speed");
  let stopAt = null; // the end of the segment being played, in seconds

  function segmentTimes(position) {
    const element = segments[position];
    return {
      start: Number(element.dataset.startMs) / 1000,
      end: Number(element.dataset.endMs) / 1000,
    };
  }

  function playSegment(position) {
    if (position < 0 || position >= segments.length) {
      return;
    }
    const times = segmentTimes(position);
    stopAt = times.end;
    player.currentTime = times.start;
    player.play();
  }

  segments.forEach((element, position) => {
    const control = element.querySelector("[data-testid=segment-play]");
    control.addEventListener("click", (event) => {
      event.preventDefault();
      playSegment(position);
    });
  });

  // The list scrolls on its own: the page (and the reviewer's place in the editor) stays.
  const list = document.querySelector(".segments");
  function keepInList(element) {
    const top = element.offsetTop;
    if (top < list.scrollTop || top + element.offsetHeight > list.scrollTop + list.clientHeight) {
      list.scrollTop = Math.max(0, top - list.clientHeight / 3);
    }
  }

  // The legend's open or closed state is kept for the next page.
  const legend = document.querySelector("[data-testid=keys-legend]");
  if (legend) {
    legend.open = window.localStorage.getItem("medasr:legend") !== "closed";
    legend.addEventListener("toggle", () => {
      window.localStorage.setItem("medasr:legend", legend.open ? "open" : "closed");
    });
  }

  // The segment under the playing position is marked (and scrolled into its list).
  let marked = -1;
  function markPlaying() {
    const now = player.currentTime;
    const position = segments.findIndex((_, i) => {
      const times = segmentTimes(i);
      return now >= times.start && now < times.end;
    });
    if (position === marked) {
      return;
    }
    marked = position;
    segments.forEach((element, i) => {
      element.classList.toggle("playing", i === position);
      element.toggleAttribute("aria-current", i === position);
    });
    if (position >= 0) {
      keepInList(segments[position]);
    }
  }

  player.addEventListener("timeupdate", () => {
    if (stopAt !== null && player.currentTime >= stopAt) {
      player.pause();
      stopAt = null;
    }
    markPlaying();
  });
  player.addEventListener("seeked", markPlaying);

  function togglePlay() {
    if (player.paused) {
      stopAt = null;
      player.currentTime = Math.max(0, player.currentTime - REWIND_ON_RESUME_S);
      player.play();
    } else {
      player.pause();
    }
  }

  function jump(seconds) {
    const end = Number.isFinite(player.duration) ? player.duration : Infinity;
    player.currentTime = Math.min(Math.max(0, player.currentTime + seconds), end);
  }

  function changeRate(step) {
    const rate = Math.min(RATE_MAX, Math.max(RATE_MIN, player.playbackRate + step));
    player.playbackRate = rate;
    player.defaultPlaybackRate = rate;
    if (speed) {
      speed.textContent = rate.toFixed(2) + "×";
    }
  }

  function nextSegment() {
    // The first segment, or pause inside a long one (the waveform's marks), that starts
    // after the playing position.
    const now = player.currentTime;
    const next = segments.findIndex((_, i) => segmentTimes(i).start > now + 0.01);
    const pause = Array.from(document.querySelectorAll("[data-testid=sub-segment-mark]"))
      .map((mark) => Number(mark.dataset.atMs) / 1000)
      .filter((at) => at > now + 0.01)
      .sort((a, b) => a - b)[0];
    if (pause !== undefined && (next < 0 || pause < segmentTimes(next).start)) {
      stopAt = null;
      player.currentTime = pause;
      player.play();
      return;
    }
    playSegment(next);
  }

  // A decision pressed by its shortcut is meant: it is sent at once. Pressed by mouse
  // (or Enter on the focused button) Finalize and Send back ask first.
  const form = document.getElementById("decision");
  const dialog = document.querySelector("[data-testid=confirm-dialog]");
  let asked = null; // the button whose question the dialog shows

  function decide(testid) {
    const button = document.querySelector("[data-testid=" + testid + "]");
    if (button && form) {
      form.requestSubmit(button);
    }
  }

  document.querySelectorAll("button[data-confirm]").forEach((button) => {
    button.addEventListener("click", (event) => {
      if (!dialog || typeof dialog.showModal !== "function") {
        return; // no dialog: the browser's own submit, as without script
      }
      event.preventDefault();
      asked = button;
      dialog.querySelector("[data-testid=confirm-question]").textContent = button.dataset.confirm;
      dialog.showModal();
    });
  });
  if (dialog) {
    dialog.querySelector("[data-testid=confirm-no]").addEventListener("click", () => dialog.close());
    dialog.querySelector("[data-testid=confirm-yes]").addEventListener("click", () => {
      dialog.close();
      if (asked && form) {
        form.requestSubmit(asked);
      }
    });
  }

  // One text on screen: the editor, the machine's text or the changes (Alt+M cycles).
  const tabs = Array.from(document.querySelectorAll("[role=tab]"));
  function showView(position) {
    tabs.forEach((tab, i) => {
      tab.setAttribute("aria-selected", String(i === position));
      document.getElementById(tab.getAttribute("aria-controls")).hidden = i !== position;
    });
    if (position === 0 && editor) {
      editor.focus();
    }
  }
  tabs.forEach((tab, position) => tab.addEventListener("click", () => showView(position)));
  function nextView() {
    const shown = tabs.findIndex((tab) => tab.getAttribute("aria-selected") === "true");
    showView((shown + 1) % tabs.length);
  }

  // A held key (a foot pedal held down) repeats its keydown: a toggle or a decision acts
  // on the first press only; the jumps repeat.
  const once = (action) => (event) => {
    if (!event.repeat) {
      action();
    }
  };
  const KEYS = [
    [(e) => (e.ctrlKey && e.code === "Space") || e.key === "F8", once(togglePlay)],
    [(e) => (e.altKey && e.key === "ArrowLeft") || e.key === "F4" || e.key === "F7", () => jump(-JUMP_S)],
    [(e) => (e.altKey && e.key === "ArrowRight") || e.key === "F9", () => jump(JUMP_S)],
    [(e) => e.altKey && e.key === "ArrowDown", () => changeRate(-RATE_STEP)],
    [(e) => e.altKey && e.key === "ArrowUp", () => changeRate(RATE_STEP)],
    [(e) => (e.altKey && e.code === "KeyN") || e.key === "F2" || e.key === "F10", nextSegment],
    [(e) => e.altKey && !e.shiftKey && e.code === "KeyM", nextView],
    [(e) => e.ctrlKey && e.key === "Enter", once(() => decide("finalize"))],
    [(e) => e.altKey && e.shiftKey && e.code === "KeyB", once(() => decide("send-back"))],
  ];

  document.addEventListener("keydown", (event) => {
    if (dialog && dialog.open) {
      return; // the question's own keys (Enter, Escape) answer it
    }
    for (const [matches, action] of KEYS) {
      if (matches(event)) {
        event.preventDefault();
        action(event);
        return;
      }
    }
  });

  // The diff of the machine's text and the editor's, word by word (longest common
  // subsequence), redrawn as the reviewer types.
  function wordDiff(before, after) {
    const a = before.split(/\s+/).filter(Boolean);
    const b = after.split(/\s+/).filter(Boolean);
    const rows = a.length + 1;
    const cols = b.length + 1;
    const table = new Uint32Array(rows * cols);
    for (let i = a.length - 1; i >= 0; i--) {
      for (let j = b.length - 1; j >= 0; j--) {
        table[i * cols + j] = a[i] === b[j]
          ? table[(i + 1) * cols + j + 1] + 1
          : Math.max(table[(i + 1) * cols + j], table[i * cols + j + 1]);
      }
    }
    const pieces = [];
    let i = 0;
    let j = 0;
    const push = (kind, word) => {
      const last = pieces[pieces.length - 1];
      if (last && last.kind === kind) {
        last.words.push(word);
      } else {
        pieces.push({ kind: kind, words: [word] });
      }
    };
    while (i < a.length || j < b.length) {
      if (i < a.length && j < b.length && a[i] === b[j]) {
        push("same", a[i]);
        i++;
        j++;
      } else if (j < b.length && (i >= a.length || table[i * cols + j + 1] >= table[(i + 1) * cols + j])) {
        push("added", b[j]);
        j++;
      } else {
        push("removed", a[i]);
        i++;
      }
    }
    return pieces;
  }

  const MAX_DIFF_WORDS = 4000; // beyond, the page keeps the diff drawn when it loaded
  function redrawDiff() {
    const before = machine.textContent;
    const after = editor.value;
    if (before.split(/\s+/).length > MAX_DIFF_WORDS) {
      return;
    }
    diff.replaceChildren();
    for (const piece of wordDiff(before, after)) {
      const span = document.createElement("span");
      span.className = piece.kind;
      span.textContent = piece.words.join(" ");
      diff.append(span, " ");
    }
  }
  if (editor && machine && diff) {
    editor.addEventListener("input", redrawDiff);
  }
})();
