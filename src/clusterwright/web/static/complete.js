// Scenario editor completion: the field names valid at the cursor's place in the YAML, with
// each field's description as a hint, from /scenario-schema.json (built from the same pydantic
// models that validate the scenario, so completion and validation cannot disagree).
//
// The place is read from indentation, as YAML nests: the keys of the lines above with less
// indentation are the path; a "- " opens a list item, and a workload item's section follows
// its "kind:". Flow mappings ({a: 1}) are not followed: completion is offered on block keys.
(function () {
  "use strict";

  var schema = null;
  var KEY = /^(\s*)(- +)?([A-Za-z_][A-Za-z0-9_]*)?\s*(:)?\s*(.*)$/;

  function parse(line) {
    var m = KEY.exec(line);
    var indent = m[1].length;
    var dash = m[2] ? m[2].length : 0;
    return { indent: indent, dash: !!m[2], col: indent + dash, key: m[4] ? m[3] : null,
             value: m[4] ? m[5].replace(/\s+#.*$/, "").replace(/^["']|["']$/g, "") : null };
  }

  function blank(line) { return /^\s*(#.*)?$/.test(line); }

  // The keys of the mapping whose keys start at column `col`, around line `at` (the item or
  // block it belongs to), e.g. a workload's "kind" wherever it is written.
  function siblings(lines, at, col) {
    var out = {};
    var i, p;
    for (i = at; i >= 0; i--) {
      if (blank(lines[i])) { continue; }
      p = parse(lines[i]);
      if (p.col < col) { break; }
      if (p.col === col && p.key) { out[p.key] = p.value; }
      if (p.dash && p.col === col) { break; }  // the first line of this list item
    }
    for (i = at + 1; i < lines.length; i++) {
      if (blank(lines[i])) { continue; }
      p = parse(lines[i]);
      if (p.col < col || (p.dash && p.col === col)) { break; }  // parent, or the next item
      if (p.col === col && p.key) { out[p.key] = p.value; }
    }
    return out;
  }

  // The path to the mapping holding a key at column `col` of line `at`: a list of steps,
  // {key: name} or {item: true, kind: value-of-its-kind}.
  function pathAt(lines, at, col) {
    var path = [];
    var need = col;
    var first = parse(lines[at]);
    if (first.dash && first.col === col) {
      path.unshift({ item: true, kind: siblings(lines, at, col).kind || null });
      need = first.indent;
    }
    for (var i = at - 1; i >= 0 && need > 0; i--) {
      if (blank(lines[i])) { continue; }
      var p = parse(lines[i]);
      if (p.dash && p.indent < need) {
        path.unshift({ item: true, kind: siblings(lines, i, p.col).kind || null });
        need = p.indent;
        continue;
      }
      if (p.col < need && p.key) {
        path.unshift({ key: p.key });
        need = p.col;
      }
    }
    return path;
  }

  // The section (model) name the path leads to, or null; a list item of unknown kind is the
  // union of its kinds' sections (returned as an array).
  function sectionOf(path) {
    var sec = schema.root;
    var kinds = null;
    for (var i = 0; i < path.length; i++) {
      var step = path[i];
      if (step.item) {
        if (!kinds) { return null; }
        if (step.kind && kinds[step.kind]) { sec = kinds[step.kind]; kinds = null; continue; }
        if (i === path.length - 1) { return Object.keys(kinds).map(function (k) { return kinds[k]; }); }
        return null;
      }
      if (Array.isArray(sec) || !schema.sections[sec]) { return null; }
      var f = schema.sections[sec][step.key];
      if (!f) { return null; }
      if (f.kinds) { kinds = f.kinds; sec = null; continue; }
      if (!f.section) { return null; }
      sec = f.section;
    }
    return kinds ? null : sec;
  }

  function fieldsOf(sec) {
    var out = {};
    (Array.isArray(sec) ? sec : [sec]).forEach(function (s) {
      var fs = schema.sections[s] || {};
      Object.keys(fs).forEach(function (k) { if (!out[k]) { out[k] = fs[k]; } });
    });
    return out;
  }

  // Completions for the text before the cursor: [{name, field}] of keys valid there that
  // start with what is typed and are not yet in the mapping; null when not at a key. With
  // nothing typed yet, only when asked (`all`: Ctrl+Space), so Enter on a blank line stays a
  // newline.
  function keysAt(text, pos, all) {
    if (!schema) { return null; }
    var lines = text.split("\n");
    var before = text.slice(0, pos).split("\n");
    var at = before.length - 1;
    var typed = /^(\s*)(- +)?([A-Za-z_][A-Za-z0-9_]*)?$/.exec(before[at]);
    if (!typed) { return null; }
    var col = typed[1].length + (typed[2] ? typed[2].length : 0);
    var prefix = typed[3] || "";
    if (!prefix && !all) { return null; }
    var sec = sectionOf(pathAt(lines, at, col));
    if (!sec) { return null; }
    var fields = fieldsOf(sec);
    var have = siblings(lines, at, col);
    return Object.keys(fields).filter(function (k) {
      return k.indexOf(prefix) === 0 && !(k in have);
    }).map(function (k) { return { name: k, field: fields[k] }; });
  }

  // The field written on the cursor's line ({path, field}), for the hint.
  function fieldAt(text, pos) {
    if (!schema) { return null; }
    var lines = text.split("\n");
    var at = text.slice(0, pos).split("\n").length - 1;
    var p = parse(lines[at] || "");
    if (!p.key) { return null; }
    var path = pathAt(lines, at, p.col);
    var sec = sectionOf(path);
    if (!sec) { return null; }
    var f = fieldsOf(sec)[p.key];
    if (!f) { return null; }
    var names = path.map(function (s) { return s.item ? "[]" : (s.key ? "." + s.key : ""); });
    return { path: (names.join("") + "." + p.key).replace(/^\./, "").replace(/\.\[\]/g, "[]"),
             field: f };
  }

  function describe(f) {
    var bits = [f.type];
    if (f.default !== null) { bits.push("default " + f.default); } else { bits.push("required"); }
    if (f.bounds) { bits.push(f.bounds); }
    return bits.join("; ") + (f.description ? " \u2014 " + f.description : "");
  }

  function setup(area) {
    var list = document.getElementById("completion");
    var hint = document.getElementById("field-hint");
    var items = [];
    var chosen = 0;

    function hide() { list.hidden = true; list.textContent = ""; items = []; }

    function show(found) {
      list.textContent = "";
      items = found;
      chosen = 0;
      found.slice(0, 12).forEach(function (c, i) {
        var li = document.createElement("li");
        li.setAttribute("role", "option");
        li.dataset.name = c.name;
        var b = document.createElement("b");
        b.textContent = c.name;
        li.appendChild(b);
        li.appendChild(document.createTextNode(" " + describe(c.field)));
        if (i === 0) { li.className = "chosen"; }
        li.addEventListener("mousedown", function (ev) { ev.preventDefault(); accept(c.name); });
        list.appendChild(li);
      });
      list.hidden = found.length === 0;
    }

    function accept(name) {
      var pos = area.selectionStart;
      var text = area.value;
      var start = pos;
      while (start > 0 && /[A-Za-z0-9_]/.test(text.charAt(start - 1))) { start--; }
      var insert = name + ": ";
      area.value = text.slice(0, start) + insert + text.slice(pos);
      area.selectionStart = area.selectionEnd = start + insert.length;
      hide();
      area.dispatchEvent(new Event("input", { bubbles: true }));
    }

    function refresh(all) {
      if (!schema) { return; }
      var pos = area.selectionStart;
      var found = area.selectionStart === area.selectionEnd ? keysAt(area.value, pos, all === true)
        : null;
      if (found && found.length) { show(found); } else { hide(); }
      var here = fieldAt(area.value, pos);
      hint.textContent = here ? here.path + ": " + describe(here.field) : "";
    }

    function load() {
      if (schema) { return; }
      fetch("/scenario-schema.json").then(function (r) { return r.json(); })
        .then(function (data) { schema = data; refresh(false); })
        .catch(function () { hint.textContent = ""; });
    }

    area.addEventListener("focus", load);
    area.addEventListener("input", function () { refresh(false); });
    area.addEventListener("click", function () { refresh(false); });
    area.addEventListener("keyup", function (ev) {
      var keys = ["ArrowUp", "ArrowDown", "Tab", "Enter", "Escape", " ", "Control", "Shift",
                  "Alt", "Meta"];
      if (keys.indexOf(ev.key) < 0) { refresh(false); }
    });
    area.addEventListener("blur", hide);
    area.addEventListener("keydown", function (ev) {
      if (ev.key === " " && ev.ctrlKey) {
        load();
        refresh(true);
        ev.preventDefault();
        return;
      }
      if (list.hidden || !items.length) { return; }
      var shown = list.children;
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        shown[chosen].className = "";
        chosen = (chosen + (ev.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
        shown[chosen].className = "chosen";
        ev.preventDefault();
      } else if (ev.key === "Tab" || ev.key === "Enter") {
        accept(shown[chosen].dataset.name);
        ev.preventDefault();
      } else if (ev.key === "Escape") {
        hide();
        ev.preventDefault();
      }
    });
  }

  window.ClusterwrightComplete = {
    keysAt: keysAt,
    fieldAt: fieldAt,
    ready: function () { return schema !== null; },
    use: function (data) { schema = data; }
  };

  document.addEventListener("DOMContentLoaded", function () {
    var area = document.getElementById("scenario-yaml");
    if (area && document.getElementById("completion")) { setup(area); }
  });
})();
