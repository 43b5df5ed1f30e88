// Clusterwright workbench: keep the editor's line gutter aligned with the text, and draw
// the compare page's plotly charts from their data-figure JSON. No other behaviour.
(function () {
  "use strict";

  function syncGutter() {
    var text = document.getElementById("scenario-yaml");
    var gutter = document.getElementById("gutter");
    if (text && gutter) { gutter.scrollTop = text.scrollTop; }
  }

  function drawPlots(root) {
    if (typeof window.Plotly === "undefined") { return; }
    var plots = (root || document).querySelectorAll("div.plot[data-figure]");
    for (var i = 0; i < plots.length; i++) {
      var el = plots[i];
      if (el.dataset.drawn) { continue; }
      var fig = JSON.parse(el.dataset.figure);
      window.Plotly.newPlot(el, fig.data, fig.layout,
        { displaylogo: false, responsive: true });
      el.dataset.drawn = "1";
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    var text = document.getElementById("scenario-yaml");
    if (text) { text.addEventListener("scroll", syncGutter); }
    syncGutter();
  });
  window.addEventListener("load", function () { drawPlots(document); });
  document.body.addEventListener("htmx:afterSettle", syncGutter);
})();
