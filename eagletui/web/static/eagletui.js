// eagletui serve: the page's own script (textual.js, loaded before it, draws the terminal).
//
// Every URL is resolved against the address the browser used, so the page works on whatever port an
// `ssh -L` tunnel forwards and under a reverse proxy's path: the server writes no host, port or
// scheme into the page. The web font is eagletui's own copy (no outside request), and the terminal
// starts once it has loaded so xterm measures the right cell size.
(function () {
  "use strict";
  for (const el of document.querySelectorAll(".textual-terminal")) {
    const url = new URL(el.dataset.sessionWebsocketUrl || "ws", document.baseURI);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.search = "";
    url.hash = "";
    el.dataset.sessionWebsocketUrl = url.href;
  }
  // xterm takes keys only while its hidden textarea has the focus, which only a click gave it: keys
  // did nothing until the page was clicked. Focus it as soon as the terminal exists, and again when
  // the window comes back to the front.
  function focusTerminal() {
    const area = document.querySelector(".xterm-helper-textarea");
    if (area) { area.focus({ preventScroll: true }); }
    return Boolean(area);
  }
  const start = window.onload;
  window.onload = function (event) {
    const font = document.fonts ? document.fonts.load("16px 'Roboto Mono'") : Promise.resolve();
    const patience = new Promise(function (resolve) { setTimeout(resolve, 3000); });
    Promise.race([font, patience]).catch(function () {}).then(function () {
      if (typeof start === "function") { start(event); }
      if (!focusTerminal()) {
        const watch = new MutationObserver(function () { if (focusTerminal()) { watch.disconnect(); } });
        watch.observe(document.body, { childList: true, subtree: true });
      }
    });
  };
  window.addEventListener("focus", focusTerminal);
  for (const button of document.querySelectorAll("button.reload")) {
    button.addEventListener("click", function () { window.location.reload(); });
  }
})();
