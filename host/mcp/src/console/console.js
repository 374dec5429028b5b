// The operator's page: swaps in the live sections every few seconds. The
// page is whole without this script; what it fetches is the same page,
// rendered (and escaped) by the server, parsed inertly by DOMParser.
(function () {
  "use strict";
  var every = Number(document.body.getAttribute("data-refresh")) || 5;
  function swap() {
    fetch(window.location.pathname, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (body) {
        var fresh = new DOMParser().parseFromString(body, "text/html");
        ["live", "state", "stamp"].forEach(function (id) {
          var now = document.getElementById(id), next = fresh.getElementById(id);
          if (now && next) { now.replaceWith(document.importNode(next, true)); }
        });
      })
      .catch(function () {})
      .then(function () { window.setTimeout(swap, every * 1000); });
  }
  window.setTimeout(swap, every * 1000);
})();
