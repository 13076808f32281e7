// mast report: the interactive trace explorer. Vanilla JS, no network, no eval.
// Every value from a trace or an annotation is put on the page with textContent, never as
// markup, so trace text cannot inject anything.
(function () {
  "use strict";
  var node = document.getElementById("mast-data");
  if (!node) return;
  var D = JSON.parse(node.textContent);
  var codes = D.codes;
  var sources = D.runs.concat(D.references); // columns of the side-by-side label table

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (k === "text") e.textContent = attrs[k];
        else if (k === "cls") e.className = attrs[k];
        else e.setAttribute(k, attrs[k]);
      }
    }
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }

  // Natural order: "t2" before "t10".
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function flaggedBy(t) {
    // code -> list of sources (runs and references) that say yes
    var out = {};
    sources.forEach(function (s) {
      var v = (t.runs[s] && t.runs[s].vector) || t.refs[s];
      if (!v) return;
      codes.forEach(function (c) {
        if (v[c] === true) (out[c] = out[c] || []).push(s);
      });
    });
    return out;
  }

  // ---- the trace list -------------------------------------------------------------------
  var state = { sort: "id", dir: 1, text: "", system: "", outcome: "", mode: "", run: "" };
  var tbody = document.querySelector("#trace-list tbody");
  var countNode = document.getElementById("trace-count");

  function nFlagged(t, run) {
    var r = t.runs[run];
    if (!r || !r.vector) return null;
    return codes.filter(function (c) { return r.vector[c] === true; }).length;
  }

  function sortValue(t, key) {
    if (key === "id" || key === "system" || key === "outcome") return t[key] || "";
    if (key.indexOf("run:") === 0) return nFlagged(t, key.slice(4));
    if (key.indexOf("col:") === 0) return (t.extra || {})[key.slice(4)];
    return "";
  }

  function compare(a, b) {
    var x = sortValue(a, state.sort), y = sortValue(b, state.sort);
    // Unknown values sort last whatever the direction.
    if (x === null || x === undefined || x === "") return (y === null || y === undefined || y === "") ? 0 : 1;
    if (y === null || y === undefined || y === "") return -1;
    var r = (typeof x === "number" && typeof y === "number") ? x - y : collator.compare(String(x), String(y));
    return r * state.dir || collator.compare(a.id, b.id);
  }

  function matches(t) {
    if (state.system && (t.system || "") !== state.system) return false;
    if (state.outcome && (t.outcome || "") !== state.outcome) return false;
    if (state.mode) {
      var who = flaggedBy(t)[state.mode] || [];
      if (state.run ? who.indexOf(state.run) < 0 : who.length === 0) return false;
    } else if (state.run && !t.runs[state.run]) return false;
    if (state.text) {
      var hay = (t.id + " " + (t.system || "") + " " + (t.search || "")).toLowerCase();
      if (hay.indexOf(state.text) < 0) return false;
    }
    return true;
  }

  function badge(code, extraCls, title) {
    var b = el("span", { cls: "mode " + (extraCls || ""), text: code });
    if (title) b.title = title;
    return b;
  }

  function renderList() {
    var shown = D.traces.filter(matches).sort(compare);
    tbody.textContent = "";
    shown.forEach(function (t) {
      var tr = el("tr", { "data-trace": t.key });
      tr.appendChild(el("td", null, [el("a", { href: "#trace=" + encodeURIComponent(t.key), text: t.id })]));
      tr.appendChild(el("td", { text: t.system || "–" }));
      tr.appendChild(el("td", { text: t.outcome || "–" }));
      D.runs.forEach(function (run) {
        var r = t.runs[run];
        var td = el("td", { cls: "modes" });
        if (!r) td.appendChild(el("span", { cls: "muted", text: "not annotated" }));
        else if (r.status !== "ok") td.appendChild(el("span", { cls: "status-bad", text: r.status }));
        else {
          var any = false;
          codes.forEach(function (c) {
            if (r.vector[c] === true) {
              any = true;
              td.appendChild(badge(c, r.ungrounded.indexOf(c) >= 0 ? "ungrounded" : "", D.names[c]));
            }
          });
          if (!any) td.appendChild(el("span", { cls: "muted", text: "none" }));
          if (r.unknown) td.appendChild(el("span", { cls: "muted", text: " +" + r.unknown + " unknown" }));
        }
        tr.appendChild(td);
      });
      D.references.forEach(function (ref) {
        var v = t.refs[ref];
        var td = el("td", { cls: "modes" });
        if (!v) td.appendChild(el("span", { cls: "muted", text: "–" }));
        else {
          var flagged = codes.filter(function (c) { return v[c] === true; });
          flagged.forEach(function (c) { td.appendChild(badge(c, "ref", D.names[c])); });
          if (!flagged.length) td.appendChild(el("span", { cls: "muted", text: "none" }));
        }
        tr.appendChild(td);
      });
      D.columns.forEach(function (col) {
        var value = (t.extra || {})[col.key];
        tr.appendChild(el("td", { text: value === null || value === undefined ? "–" : String(value) }));
      });
      tr.addEventListener("click", function (ev) {
        if (ev.target.tagName !== "A") location.hash = "trace=" + encodeURIComponent(t.key);
      });
      tbody.appendChild(tr);
    });
    countNode.textContent = shown.length + " of " + D.traces.length + " traces shown";
  }

  function bindFilter(id, key, lower) {
    var input = document.getElementById(id);
    if (!input) return;
    function update() {
      state[key] = lower ? input.value.trim().toLowerCase() : input.value;
      renderList();
    }
    input.addEventListener("input", update);
    input.addEventListener("change", update);
  }
  bindFilter("f-text", "text", true);
  bindFilter("f-system", "system");
  bindFilter("f-outcome", "outcome");
  bindFilter("f-mode", "mode");
  bindFilter("f-run", "run");

  document.querySelectorAll("#trace-list th[data-sort]").forEach(function (th) {
    th.addEventListener("click", function () {
      var key = th.getAttribute("data-sort");
      state.dir = state.sort === key ? -state.dir : 1;
      state.sort = key;
      document.querySelectorAll("#trace-list th[data-sort]").forEach(function (o) {
        o.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
      renderList();
    });
  });

  // ---- one trace ------------------------------------------------------------------------
  var view = document.getElementById("trace-view");

  function labelCell(value) {
    if (value === true) return el("td", { cls: "yes", text: "yes" });
    if (value === false) return el("td", { cls: "no", text: "no" });
    return el("td", { cls: "unk", text: "?" });
  }

  function labelTable(t) {
    var present = sources.filter(function (s) { return (t.runs[s] && t.runs[s].vector) || t.refs[s]; });
    var head = el("tr", null, [el("th", { text: "mode" })].concat(present.map(function (s) {
      return el("th", { text: s, cls: D.runs.indexOf(s) >= 0 ? "run" : "ref" });
    })));
    var body = el("tbody");
    codes.forEach(function (c) {
      var values = present.map(function (s) {
        var v = (t.runs[s] && t.runs[s].vector) || t.refs[s];
        return v[c];
      });
      var known = values.filter(function (v) { return v === true || v === false; });
      var split = known.indexOf(true) >= 0 && known.indexOf(false) >= 0;
      var tr = el("tr", { cls: split ? "disagree" : "", "data-code": c },
        [el("th", { text: c + " " + D.names[c] })]);
      values.forEach(function (v) { tr.appendChild(labelCell(v)); });
      body.appendChild(tr);
    });
    return el("div", { cls: "scroll" }, [
      el("table", { cls: "labels" }, [el("caption", {
        text: "Labels side by side (rows where the sources disagree are marked)" }),
        el("thead", null, [head]), body])]);
  }

  function whoWhen(t, r) {
    // The run's decisive error, with the trace's labelled one (Who&When) beside it.
    var box = el("div", { cls: "who-when" });
    var d = r.decisive;
    var line = el("p", { cls: "decisive-line" }, [el("b", { text: "Decisive error: " })]);
    if (d) {
      if (d.step) {
        line.appendChild(el("a", { href: "#step-" + t.key + "-" + d.step, cls: "ev-link", text: d.text }));
      } else {
        line.appendChild(document.createTextNode(d.text));
      }
      if (d.reason) line.appendChild(document.createTextNode(" — " + d.reason));
      if (d.quote) line.appendChild(el("span", { cls: "quote", text: " “" + d.quote + "”" }));
      if (d.grounded === false) line.appendChild(el("span", { cls: "status-bad", text: " (not grounded: " + (d.problem || "") + ")" }));
      if (d.method && d.method !== "verdict") line.appendChild(el("span", { cls: "muted", text: " [" + d.method + ", " + d.calls + " calls]" }));
    } else {
      line.appendChild(el("span", { cls: "muted", text: "not named" }));
    }
    box.appendChild(line);
    var l = t.label;
    if (l) {
      var same = d && l.step === d.step ? " (same step)" : "";
      var lab = el("p", { cls: "label-line" }, [el("b", { text: l.source + ": " }),
        document.createTextNode(l.text + same)]);
      if (l.reason) lab.appendChild(document.createTextNode(" — " + l.reason));
      box.appendChild(lab);
    }
    return box;
  }

  function findingsBlock(t) {
    var box = el("div", { cls: "findings" });
    D.runs.forEach(function (run) {
      var r = t.runs[run];
      if (!r) return;
      var part = el("div", { cls: "run-findings" }, [el("h4", { text: run + " — " + r.status })]);
      if (r.error) part.appendChild(el("p", { cls: "status-bad", text: r.error }));
      if (r.summary) part.appendChild(el("p", { text: r.summary }));
      part.appendChild(whoWhen(t, r));
      var list = el("ul");
      codes.forEach(function (c) {
        var f = r.findings[c];
        if (!f) return;
        var li = el("li", { "data-code": c }, [el("b", { text: c + " " + D.names[c] })]);
        if (f.rationale) li.appendChild(document.createTextNode(" — " + f.rationale));
        f.evidence.forEach(function (e) {
          var a = el("a", { href: "#step-" + t.key + "-" + e.step, cls: "ev-link", text: e.step });
          var item = el("div", { cls: "evidence" }, [a]);
          if (e.quote) item.appendChild(el("span", { cls: "quote", text: " “" + e.quote + "”" }));
          if (e.grounded === false) item.appendChild(el("span", { cls: "muted", text: " (not found in the trace)" }));
          li.appendChild(item);
        });
        if (!f.evidence.length) li.appendChild(el("div", { cls: "muted", text: "no evidence cited" }));
        list.appendChild(li);
      });
      if (list.childNodes.length) part.appendChild(list);
      else part.appendChild(el("p", { cls: "muted", text: "no mode flagged" }));
      box.appendChild(part);
    });
    return box;
  }

  function timeline(t) {
    // step id -> marks [{code, run}] from the evidence of flagged modes, plus extra marks
    var marks = {};
    D.runs.forEach(function (run) {
      var r = t.runs[run];
      if (!r) return;
      codes.forEach(function (c) {
        var f = r.findings[c];
        if (!f) return;
        f.evidence.forEach(function (e) {
          (marks[e.step] = marks[e.step] || []).push({ label: c, run: run, kind: "mode" });
        });
      });
    });
    (t.marks || []).forEach(function (m) {
      (marks[m.step] = marks[m.step] || []).push({ label: m.label, run: m.run || "", kind: m.kind || "note", note: m.note || "" });
    });
    if (t.label && t.label.step) {
      (marks[t.label.step] = marks[t.label.step] || []).push({ label: "labelled error (" + (t.label.agent || "?") + ")", run: "", kind: "label", note: t.label.source });
    }
    var box = el("ol", { cls: "timeline" });
    if (!t.steps) {
      return el("p", { cls: "muted", text: t.steps_note || "trace text not loaded (give --traces)" });
    }
    t.steps.forEach(function (s) {
      var here = marks[s.id] || [];
      var kinds = {};
      here.forEach(function (m) { kinds[m.kind] = true; });
      var cls = "step" + (kinds.mode ? " flagged" : "") + (kinds.decisive ? " decisive" : "") + (kinds.label ? " labelled" : "");
      var li = el("li", { cls: cls, id: "step-" + t.key + "-" + s.id, "data-step": s.id });
      var head = el("div", { cls: "step-head" }, [
        el("b", { text: s.id }), " ",
        el("span", { cls: "muted", text: (s.agent || "") + " · " + s.kind })]);
      here.forEach(function (m) {
        var title = m.kind === "mode" ? D.names[m.label] + " (" + m.run + ")" : [m.run, m.note].filter(Boolean).join(": ");
        var b = badge(m.label, m.kind === "mode" ? "" : m.kind, title);
        b.setAttribute("data-mark", m.kind);
        if (D.runs.length > 1 && m.run) b.textContent = m.label + " · " + m.run;
        head.appendChild(b);
      });
      li.appendChild(head);
      li.appendChild(el("pre", { text: s.text }));
      box.appendChild(li);
    });
    if (t.steps_note) box.appendChild(el("li", { cls: "muted", text: t.steps_note }));
    return box;
  }

  function showTrace(key) {
    var t = null;
    for (var i = 0; i < D.traces.length; i++) if (D.traces[i].key === key) t = D.traces[i];
    view.textContent = "";
    if (!t) { view.hidden = true; return; }
    view.hidden = false;
    var meta = [t.system && ("system " + t.system), t.outcome && ("outcome " + t.outcome),
      t.n_steps !== null && (t.n_steps + " steps")].filter(Boolean).join(" · ");
    view.appendChild(el("h3", { id: "trace-title", text: t.id }));
    view.appendChild(el("p", { cls: "muted", text: meta }));
    view.appendChild(el("a", { href: "#traces", text: "↑ back to the list" }));
    view.appendChild(labelTable(t));
    view.appendChild(findingsBlock(t));
    view.appendChild(el("h4", { text: "Steps (flagged modes marked at the steps their evidence cites)" }));
    view.appendChild(timeline(t));
    document.querySelectorAll("#trace-list tr.selected").forEach(function (r) { r.classList.remove("selected"); });
    var row = document.querySelector('#trace-list tr[data-trace="' + CSS.escape(key) + '"]');
    if (row) row.classList.add("selected");
  }

  function route() {
    var h = decodeURIComponent(location.hash.slice(1));
    if (h.indexOf("trace=") === 0) {
      showTrace(h.slice(6));
      view.scrollIntoView();
    } else if (h.indexOf("step-") === 0) {
      var target = document.getElementById(h);
      if (target) target.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", route);
  renderList();
  route();
  document.body.setAttribute("data-ready", "1");
})();
