// What-if page: each control change asks /runs/<id>/whatif.json for the re-priced costs and
// shows them. A value the server refuses (or a non-number) shows a message naming the
// control, and the numbers stay those of the last valid state.
(function () {
  "use strict";
  var root = document.getElementById("whatif");
  if (!root) { return; }
  var run = root.dataset.run;
  var form = document.getElementById("whatif-form");
  var error = document.getElementById("whatif-error");
  var seq = 0;
  var first = JSON.parse(document.getElementById("whatif-first").textContent);
  var start = {};

  function usd(v) {
    if (v === null || v === undefined) { return "—"; }
    var a = Math.abs(v);
    if (a >= 1e9) { return "$" + (v / 1e9).toFixed(2) + "B"; }
    if (a >= 1e6) { return "$" + (v / 1e6).toFixed(1) + "M"; }
    if (a >= 1e4) { return "$" + Math.round(v / 1e3).toLocaleString("en-US") + "k"; }
    if (a >= 100) { return "$" + Math.round(v).toLocaleString("en-US"); }
    return "$" + v.toFixed(2);
  }
  var show = {
    total_cost_usd: usd, capex_usd: usd, annual_opex_usd: usd, cloud_annual_usd: usd,
    cost_per_gpu_hour_usd: usd,
    breakeven_months: function (v) { return v === null ? "never (renting costs less)" : v.toFixed(1); },
    breakeven_utilization: function (v) { return v === null ? "—" : (100 * v).toFixed(0) + " %"; },
    within_budget: function (v) { return v === null ? "no budget" : (v ? "yes" : "no"); }
  };

  function rows(id, obj) {
    var body = document.querySelector("#" + id + " tbody");
    body.textContent = "";
    Object.keys(obj).forEach(function (k) {
      var tr = document.createElement("tr");
      var th = document.createElement("th");
      var td = document.createElement("td");
      th.textContent = k.replace(/_/g, " ");
      td.textContent = usd(obj[k]);
      tr.appendChild(th); tr.appendChild(td); body.appendChild(tr);
    });
  }

  function render(d) {
    document.querySelectorAll("#whatif-results tr").forEach(function (tr) {
      var k = tr.dataset.key;
      tr.querySelector("td").textContent = show[k](d[k]);
    });
    rows("whatif-capex", d.capex_by_category_usd);
    rows("whatif-opex", d.opex_breakdown_usd);
    var box = document.getElementById("whatif-replan");
    var list = document.getElementById("whatif-replan-why");
    list.textContent = "";
    (d.replan || []).forEach(function (why) {
      var li = document.createElement("li");
      li.textContent = why;
      list.appendChild(li);
    });
    box.hidden = !(d.replan && d.replan.length);
  }

  function fail(control, message) {
    error.textContent = (control ? control.replace(/_/g, " ") + ": " : "") + message +
      " (showing the last valid values)";
    error.dataset.control = control || "";
    error.hidden = false;
    document.querySelectorAll("[data-control]").forEach(function (el) {
      el.classList.toggle("bad", el.dataset.control === control);
    });
  }

  // The server's ranges (data-low/-high), checked here first so that a refusal is a message
  // naming the control rather than a failed request; the server checks them again.
  function invalid() {
    var bad = null;
    form.querySelectorAll("input[type=number]").forEach(function (el) {
      if (bad) { return; }
      var v = Number(el.value), lo = Number(el.dataset.low), hi = Number(el.dataset.high);
      var openLow = el.dataset.openLow === "1";
      if (el.value.trim() === "" || !isFinite(v)) {
        bad = [el.name, "not a number"];
      } else if (v > hi || (openLow ? v <= lo : v < lo)) {
        bad = [el.name, el.value + " is outside " + (openLow ? "(" : "[") + lo + ", " + hi + "]"];
      }
    });
    return bad;
  }

  function update() {
    var bad = invalid();
    if (bad) { seq++; fail(bad[0], bad[1]); return; }
    var params = new URLSearchParams();
    form.querySelectorAll("input[type=number], select").forEach(function (el) {
      if (el.value !== String(start[el.name])) { params.set(el.name, el.value); }
    });
    var mine = ++seq;
    fetch("/runs/" + run + "/whatif.json?" + params.toString()).then(function (r) {
      return r.json().then(function (d) { return { ok: r.ok, d: d }; });
    }).then(function (x) {
      if (mine !== seq) { return; }
      if (x.ok) {
        error.hidden = true;
        document.querySelectorAll(".bad").forEach(function (el) { el.classList.remove("bad"); });
        render(x.d);
      } else if (x.d.detail) {  // FastAPI's own refusal: not a number
        var loc = x.d.detail[0].loc;
        fail(loc[loc.length - 1], "not a number");
      } else {
        fail(x.d.control, x.d.error.replace(/^[a-z_]+: /, ""));
      }
    });
  }

  form.querySelectorAll("input[type=number], select").forEach(function (el) {
    start[el.name] = el.value;
    el.addEventListener("input", function () {
      var range = document.getElementById(el.id + "-range");
      if (range && el.value !== "") { range.value = el.value; }
      update();
    });
  });
  form.querySelectorAll("input[type=range]").forEach(function (el) {
    el.addEventListener("input", function () {
      document.getElementById("wi-" + el.dataset.control).value = el.value;
      update();
    });
  });
  document.getElementById("whatif-reset").addEventListener("click", function () {
    form.querySelectorAll("input[type=number], select").forEach(function (el) {
      el.value = start[el.name];
      var range = document.getElementById(el.id + "-range");
      if (range) { range.value = start[el.name]; }
    });
    update();
  });
  render(first);
})();
