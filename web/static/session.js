// The session as the page sees it: kept alive while the reviewer works in the page,
// unsaved text kept in this tab (sessionStorage) until it is saved, discarded or the
// reviewer signs out, offered back after a new sign-in, and a question before leaving
// unsaved changes. Served as a file (the Content-Security-Policy allows no inline script).
"use strict";

(function () {
  const PREFIX = "medasr:unsaved:"; // + item id + ":" + base revision
  const DECIDED = ["draft", "finalized", "accepted", "sent-back"];
  const KEEP_DELAY_MS = 400; // a burst of typing is written once
  const body = document.body;
  const reviewer = body.dataset.reviewer || "";
  const kept = window.sessionStorage;

  function keptKeys(item) {
    const prefix = PREFIX + (item === undefined ? "" : item + ":");
    const found = [];
    for (let i = 0; i < kept.length; i++) {
      const key = kept.key(i);
      if (key && key.startsWith(prefix)) {
        found.push(key);
      }
    }
    return found;
  }

  function keptEntries(item) {
    return keptKeys(item).map((key) => {
      let entry = {};
      try {
        entry = JSON.parse(kept.getItem(key)) || {};
      } catch (error) {
        entry = {};
      }
      const [itemId, base] = key.slice(PREFIX.length).split(":");
      return { key: key, item: itemId, base: base, reviewer: entry.reviewer, text: entry.text };
    });
  }

  function forget(item) {
    keptKeys(item).forEach((key) => kept.removeItem(key));
  }

  function say(message, link) {
    const notice = document.querySelector("[data-testid=notice]");
    if (!notice) {
      return;
    }
    notice.replaceChildren(document.createTextNode(message));
    if (link) {
      const anchor = document.createElement("a");
      anchor.href = link.href;
      anchor.textContent = link.text;
      notice.append(" ", anchor);
    }
  }

  // Signing out clears what this tab kept; signed in, another reviewer's text goes too.
  document.querySelectorAll("form[action='/logout']").forEach((form) => {
    form.addEventListener("submit", () => forget());
  });
  if (!reviewer) {
    return; // the sign-in page: kept text waits for its reviewer
  }
  keptEntries().filter((e) => e.reviewer !== reviewer).forEach((e) => kept.removeItem(e.key));
  // After Finalize, Accept or Send back the next item opens and names the decided one
  // (`done`): what was kept for that one is settled.
  const query = new URLSearchParams(window.location.search);
  const done = (query.get("done") || "").split(".")[0];
  if (done && DECIDED.includes(query.get("notice"))) {
    forget(done);
  }

  const form = document.getElementById("decision");
  const editor = document.getElementById("editor");
  const item = form ? form.dataset.itemId : null;
  const returnTo = item ? "/items/" + item : "";
  keepAlive();
  if (form && editor) {
    keepUnsaved();
  } else {
    pointToKept();
  }

  // A keep-alive request after activity (typing, listening, seeking), never without:
  // an abandoned page still times out.
  function keepAlive() {
    const idleS = Number(body.dataset.idleTimeoutS);
    const csrf = document.querySelector("input[name=csrf_token]");
    if (!Number.isFinite(idleS) || idleS <= 0 || !csrf) {
      return;
    }
    const player = document.getElementById("player");
    const everyMs = Math.max(2000, Math.min(idleS / 4, 120) * 1000);
    let active = false;
    let ended = false;
    const noteActivity = () => {
      active = true;
    };
    ["keydown", "input", "pointerdown"].forEach((type) => {
      document.addEventListener(type, noteActivity, true);
    });
    if (player) {
      ["play", "seeking", "ratechange"].forEach((type) => player.addEventListener(type, noteActivity));
    }
    const timer = window.setInterval(() => {
      if (player && !player.paused) {
        active = true;
      }
      if (!active || ended) {
        return;
      }
      active = false;
      fetch("/keepalive", {
        method: "POST",
        headers: { "x-csrf-token": csrf.value },
        credentials: "same-origin",
        cache: "no-store",
      }).then((answer) => {
        if (answer.status === 401) {
          ended = true;
          window.clearInterval(timer);
          const next = returnTo ? "&next=" + encodeURIComponent(returnTo) : "";
          say(
            "Your session has ended. What you typed here is kept in this browser tab;",
            { href: "/login?expired=1" + next, text: "sign in again to get it back." }
          );
        }
      }, () => {
        active = true; // the network failed: ask again at the next tick
      });
    }, everyMs);
  }

  function keepUnsaved() {
    const baseInput = form.querySelector("[name=base_revision]");
    const initial = editor.value;
    let sending = false;
    let pending = null;
    const keyNow = () => PREFIX + item + ":" + baseInput.value;
    const keep = () => {
      window.clearTimeout(pending);
      pending = null;
      if (editor.value !== initial) {
        kept.setItem(keyNow(), JSON.stringify({ reviewer: reviewer, text: editor.value }));
      }
    };
    editor.addEventListener("input", () => {
      window.clearTimeout(pending);
      pending = window.setTimeout(keep, KEEP_DELAY_MS);
    });
    form.addEventListener("submit", () => {
      sending = true;
      keep(); // the answer may be a sign-in page: the text is kept before it leaves
    });
    window.addEventListener("pagehide", keep);
    window.addEventListener("beforeunload", (event) => {
      if (!sending && editor.value !== initial) {
        event.preventDefault();
        event.returnValue = "";
      }
    });
    if (!done && DECIDED.includes(query.get("notice"))) {
      forget(item); // saved, finalized, accepted or sent back: nothing left to keep
      return;
    }
    if (window.location.pathname !== returnTo) {
      return; // an answer to a refused save shows the reviewer's text itself
    }
    const offered = keptEntries(item).filter((e) => e.text && e.text !== editor.value);
    if (offered.length) {
      offerBack(offered[offered.length - 1], baseInput);
    }
  }

  function offerBack(entry, baseInput) {
    const box = document.createElement("div");
    box.className = "recovered";
    box.setAttribute("data-testid", "recovered");
    box.setAttribute("role", "alert");
    const stale = entry.base !== baseInput.value;
    const words = document.createElement("p");
    words.textContent =
      "Text you typed on this recording was not saved (your session ended or you left the page)." +
      " It is kept in this browser tab only." +
      (stale ? " A newer revision was saved since: saving it will be refused as stale and shown beside that one." : "");
    const restore = document.createElement("button");
    restore.type = "button";
    restore.textContent = "Put it back in the editor";
    restore.setAttribute("data-testid", "restore-unsaved");
    const discard = document.createElement("button");
    discard.type = "button";
    discard.textContent = "Discard it";
    discard.setAttribute("data-testid", "discard-unsaved");
    restore.addEventListener("click", () => {
      editor.value = entry.text;
      baseInput.value = entry.base; // a save over a newer revision is refused, never silent
      editor.dispatchEvent(new Event("input"));
      box.remove();
    });
    discard.addEventListener("click", () => {
      forget(item);
      box.remove();
    });
    box.append(words, restore, " ", discard);
    form.before(box);
  }

  // Elsewhere (the queue, a search): say where kept text waits.
  function pointToKept() {
    const items = Array.from(new Set(keptEntries().map((e) => e.item)));
    if (items.length) {
      say("Unsaved text you typed is kept in this browser tab for recording " + items[0] + ":", {
        href: "/items/" + items[0],
        text: "open it to put it back or discard it.",
      });
    }
  }
})();
