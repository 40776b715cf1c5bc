// The recording's waveform under the player: peaks fetched from medasr (computed on
// demand, no text), the chunks' edges, and the pauses inside chunks longer than
// MEDASR_REVIEW__SEGMENT_MAX_S as marks a click (or Enter on one) plays from.
"use strict";

(function () {
  const box = document.querySelector("[data-testid=waveform]");
  const player = document.getElementById("player");
  if (!box || !player) {
    return;
  }
  const canvas = box.querySelector("canvas");
  const marks = box.querySelector(".marks");
  const cursor = box.querySelector(".cursor");
  let durationMs = 0;

  function share(ms) {
    return durationMs ? Math.min(100, (100 * ms) / durationMs) + "%" : "0";
  }

  function draw(peaks) {
    const width = Math.max(1, Math.round(canvas.clientWidth * (window.devicePixelRatio || 1)));
    canvas.width = width;
    const height = canvas.height;
    const context = canvas.getContext("2d");
    context.fillStyle = "#5e7fa3";
    const perPixel = peaks.length / width;
    for (let x = 0; x < width; x++) {
      let loudest = 0;
      const end = Math.min(peaks.length, Math.ceil((x + 1) * perPixel));
      for (let i = Math.floor(x * perPixel); i < end; i++) {
        loudest = Math.max(loudest, peaks[i]);
      }
      const bar = Math.max(1, (loudest / 255) * height);
      context.fillRect(x, (height - bar) / 2, 1, bar);
    }
  }

  function playFrom(ms) {
    player.currentTime = ms / 1000;
    player.play();
  }

  function placeMarks(found) {
    document.querySelectorAll("[data-testid=segment]").forEach((segment) => {
      const edge = document.createElement("div");
      edge.className = "chunk-edge";
      edge.style.left = share(Number(segment.dataset.startMs));
      marks.append(edge);
    });
    for (const mark of found) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "sub-mark";
      button.setAttribute("data-testid", "sub-segment-mark");
      button.dataset.atMs = String(mark.at_ms);
      button.dataset.segment = String(mark.segment);
      button.title = "pause at " + (mark.at_ms / 1000).toFixed(1) + " s: play from here";
      button.style.left = share(mark.at_ms);
      button.addEventListener("click", (event) => {
        event.stopPropagation();
        playFrom(mark.at_ms);
      });
      marks.append(button);
    }
  }

  box.addEventListener("click", (event) => {
    const rect = box.getBoundingClientRect();
    playFrom(((event.clientX - rect.left) / rect.width) * durationMs);
  });
  player.addEventListener("timeupdate", () => {
    cursor.style.left = share(player.currentTime * 1000);
  });

  fetch(box.dataset.peaks, { credentials: "same-origin" })
    .then((answer) => (answer.ok ? answer.json() : Promise.reject(answer.status)))
    .then((found) => {
      durationMs = found.duration_ms;
      draw(found.peaks);
      placeMarks(found.marks);
      box.dataset.ready = "true";
    })
    .catch(() => {
      box.hidden = true; // no waveform: the player and the segments still work
    });
})();
