// The wsp console's live notices: the page listens to the change feed (through the console,
// which adds the session's key) and says when the open file or folder has a newer version.
"use strict";
(function () {
  var body = document.body;
  var notice = document.getElementById("live");
  if (!notice || !window.EventSource) { return; }
  var path = body.getAttribute("data-watch-path");
  var prefix = body.getAttribute("data-watch-prefix");
  var version = parseInt(body.getAttribute("data-version") || "0", 10);
  var editing = body.hasAttribute("data-editing");
  if (path === null && prefix === null) { return; }
  var source = new EventSource("/console/events");
  // Tells whoever looks (a test, a stylesheet) that changes from now on will be shown.
  source.addEventListener("open", function () { body.setAttribute("data-live", "open"); });
  source.addEventListener("error", function () { body.setAttribute("data-live", "retrying"); });
  function say(text) {
    notice.textContent = text;
    notice.hidden = false;
  }
  source.addEventListener("workspace.updated", function (event) {
    var change;
    try { change = JSON.parse(event.data).payload; } catch (e) { return; }
    if (!change || typeof change.path !== "string") { return; }
    if (path !== null && change.path === path && change.version !== version) {
      if (editing) {
        say("This file changed since you opened it (now version " + change.version +
            "). Your text is kept: saving will show you the other change to merge.");
        body.setAttribute("data-stale", String(change.version));
      } else {
        say("A newer version (" + change.version + ") of this file was saved. Reload to see it.");
      }
    } else if (prefix !== null && change.path.indexOf(prefix) === 0) {
      say(change.path + " changed (version " + change.version + "). Reload to see it.");
    }
  });
})();
