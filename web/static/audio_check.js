// When the player cannot load the recording, ask why: a recording that changed on disk
// since it was transcribed is refused (409) and the page says so instead of staying mute.
"use strict";

(function () {
  const player = document.getElementById("player");
  const notice = document.querySelector("[data-testid=notice]");
  if (!player || !notice) {
    return;
  }
  function askWhy() {
    fetch(player.currentSrc || player.src, { headers: { Range: "bytes=0-0" } })
      .then((answer) => {
        if (answer.status === 409) {
          notice.textContent = player.dataset.changedNotice;
          notice.classList.add("warning");
        }
      })
      .catch(() => {});
  }
  player.addEventListener("error", askWhy);
  if (player.error) {
    askWhy(); // it failed before this script ran
  }
})();
