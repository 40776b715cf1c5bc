// The review workstation's page behaviour: segment playback, keyboard, the live diff.
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
    segments.forEach((element, i) => element.classList.toggle("playing", i === position));
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

  player.addEventListener("timeupdate", () => {
    if (stopAt !== null && player.currentTime >= stopAt) {
      player.pause();
      stopAt = null;
    }
  });

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
    // The first segment that starts after the playing position.
    const now = player.currentTime;
    playSegment(segments.findIndex((_, i) => segmentTimes(i).start > now + 0.01));
  }

  function finalize() {
    const button = document.querySelector("[data-testid=finalize]");
    if (button) {
      button.click();
    }
  }

  const KEYS = [
    [(e) => (e.ctrlKey && e.code === "Space") || e.key === "F8", togglePlay],
    [(e) => (e.altKey && e.key === "ArrowLeft") || e.key === "F7", () => jump(-JUMP_S)],
    [(e) => (e.altKey && e.key === "ArrowRight") || e.key === "F9", () => jump(JUMP_S)],
    [(e) => e.altKey && e.key === "ArrowDown", () => changeRate(-RATE_STEP)],
    [(e) => e.altKey && e.key === "ArrowUp", () => changeRate(RATE_STEP)],
    [(e) => (e.altKey && e.code === "KeyN") || e.key === "F10", nextSegment],
    [(e) => e.ctrlKey && e.key === "Enter", finalize],
  ];

  document.addEventListener("keydown", (event) => {
    for (const [matches, action] of KEYS) {
      if (matches(event)) {
        event.preventDefault();
        action();
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
