// riddlectl's pages: the live table, and the form's small helpers. Loaded from the
// server (the Content-Security-Policy allows no inline script), after htmx.
(function () {
  "use strict";
  var LIVE_KEY = "riddlectl.live";
  var TIMES_KEY = "riddlectl.times";

  // -- the live table: one EventSource per tab, closed while the tab is hidden --------
  function setupLive() {
    var rows = document.querySelector("[data-live]");
    var toggle = document.getElementById("live-toggle");
    if (!rows || !rows.dataset.live) return;
    var source = null;
    var wanted = localStorage.getItem(LIVE_KEY) !== "off";
    if (toggle) toggle.checked = wanted;
    // The version the page was drawn from: a change told before the stream opened
    // differs from it, and redraws the page at once.
    var seen = rows.dataset.version === undefined ? null : Number(rows.dataset.version);

    function open() {
      if (source || !wanted || document.hidden) return;
      source = new EventSource(rows.dataset.live);
      source.addEventListener("change", function (event) {
        var data = JSON.parse(event.data);
        if (seen !== null && data.version !== seen) {
          if (!anyTicked()) htmx.trigger(rows, "refresh");
          else updateCounts(data.counts);
        }
        seen = data.version;
      });
    }
    function close() {
      if (source) { source.close(); source = null; }
    }
    function anyTicked() {
      // Leave the rows alone while the user is choosing some: only the counts move.
      return rows.querySelector("input[name=id]:checked") !== null;
    }
    if (toggle) {
      toggle.addEventListener("change", function () {
        wanted = toggle.checked;
        localStorage.setItem(LIVE_KEY, wanted ? "on" : "off");
        if (wanted) { htmx.trigger(rows, "refresh"); open(); } else { close(); }
      });
    }
    document.addEventListener("visibilitychange", function () {
      if (document.hidden) { close(); } else { htmx.trigger(rows, "refresh"); open(); }
    });
    window.addEventListener("pagehide", close);
    open();
  }

  function updateCounts(counts) {
    Object.keys(counts || {}).forEach(function (queue) {
      var el = document.querySelector('#counts [data-queue="' + queue + '"] .n');
      if (el) el.textContent = counts[queue];
    });
  }

  // -- times: "7m ago", or the absolute local time when the setting says so ---------------
  function setupTimes() {
    var toggle = document.getElementById("times-toggle");
    var absolute = localStorage.getItem(TIMES_KEY) === "absolute";
    if (toggle) toggle.checked = absolute;
    function show(root) {
      root.querySelectorAll("time.ago").forEach(function (el) {
        // The server wrote its own local time; the browser's is the one its user lives in.
        var local = isoLocal(new Date(el.getAttribute("datetime")));
        if (el.dataset.rel === undefined) el.dataset.rel = el.textContent;
        el.textContent = absolute ? local.slice(0, 19).replace("T", " ") : el.dataset.rel;
        el.title = local + " local · " + el.getAttribute("datetime") + " UTC";
      });
    }
    if (toggle) {
      toggle.addEventListener("change", function () {
        absolute = toggle.checked;
        localStorage.setItem(TIMES_KEY, absolute ? "absolute" : "relative");
        show(document);
      });
    }
    document.body.addEventListener("htmx:afterSwap", function (event) { show(event.detail.target); });
    show(document);
  }

  // ISO 8601 in the browser's time zone, with its offset: 2026-12-07T03:04:05+01:00.
  function isoLocal(date) {
    function two(n) { return String(n).padStart(2, "0"); }
    var offset = -date.getTimezoneOffset();
    var zone = (offset >= 0 ? "+" : "-") + two(Math.floor(Math.abs(offset) / 60)) + ":" +
      two(Math.abs(offset) % 60);
    return date.getFullYear() + "-" + two(date.getMonth() + 1) + "-" + two(date.getDate()) +
      "T" + two(date.getHours()) + ":" + two(date.getMinutes()) + ":" +
      two(date.getSeconds()) + zone;
  }

  // -- copy buttons: the id (or other text) in data-copy to the clipboard ---------------
  function setupCopy() {
    document.body.addEventListener("click", function (event) {
      var button = event.target.closest("button.copy");
      if (!button) return;
      var label = button.textContent;
      navigator.clipboard.writeText(button.dataset.copy).then(function () {
        button.textContent = "Copied";
      }, function () {
        button.textContent = "Copy failed: select the id";
      }).then(function () {
        setTimeout(function () { button.textContent = label; }, 1500);
      });
    });
  }

  // -- the form ------------------------------------------------------------------------
  function setupForm() {
    var form = document.getElementById("new-form");
    if (!form) return;
    var add = document.getElementById("add-data");
    var answer = document.getElementById("answer-type");
    function showAnswerFields() {
      form.querySelectorAll(".answer-fields").forEach(function (el) {
        el.hidden = el.dataset.for !== answer.value;
      });
    }
    answer.addEventListener("change", showAnswerFields);
    showAnswerFields();
    add.addEventListener("click", function () { addDataRow(""); });
    // A row added by mistake goes again (the last one left is emptied instead).
    form.addEventListener("click", function (event) {
      var remove = event.target.closest(".remove-data");
      if (!remove) return;
      var row = remove.closest(".data-row");
      if (form.querySelectorAll(".data-row").length > 1) {
        row.remove();
      } else {
        row.querySelector(".data-name").value = "";
      }
      renumber();
      htmx.trigger(form, "change");
    });

    function addDataRow(value) {
      var rows = form.querySelectorAll(".data-row");
      var last = rows[rows.length - 1];
      var copy = last.cloneNode(true);
      copy.querySelector(".data-name").value = value;
      last.after(copy);
      renumber();
      htmx.process(copy);
      return copy;
    }
    // Each row's controls are named by its place, so that a screen reader tells them apart.
    function renumber() {
      form.querySelectorAll(".data-row").forEach(function (row, i) {
        var n = String(i + 1);
        row.querySelectorAll("[aria-label]").forEach(function (el) {
          el.setAttribute("aria-label", el.getAttribute("aria-label").replace(/\d+/, n));
        });
      });
    }
    document.body.addEventListener("htmx:afterSwap", function (event) {
      var stored = event.detail.target.querySelector("[data-uploaded]");
      if (!stored) return;
      var empty = Array.prototype.find.call(
        form.querySelectorAll(".data-name"), function (el) { return !el.value; });
      (empty || addDataRow("").querySelector(".data-name")).value = stored.dataset.uploaded;
      htmx.trigger(form, "change");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    setupLive();
    setupTimes();
    setupCopy();
    setupForm();
  });
})();
