// llm-ledger explorer: update the page without a full reload. The server renders every page; this
// script only fetches the next URL and swaps #page (or, while a control is being dragged or typed
// into, only the page's content, so the control keeps its grip), keeping the URL (and so the back
// button) in step with what is shown. Without it, the forms and links work as they are.
(() => {
  "use strict";
  let latest = 0;

  // Sliders (log scale) appear only with the script: without it the text box beside each is the control.
  function showSliders() {
    for (const s of document.querySelectorAll("input.slider[hidden]")) s.hidden = false;
    keyboardScrolling();
  }

  // A box that scrolls sideways (a wide table on a phone, a plot, the row of page links) takes the
  // keyboard's focus, so that its arrow keys scroll it; one that fits does not add a tab stop.
  function keyboardScrolling() {
    for (const el of document.querySelectorAll("table, figure.plot, nav.pages ul")) {
      const scrolls = el.scrollWidth > el.clientWidth + 1;
      if (scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.dataset.scrollFocus = "1";
        if (!el.hasAttribute("aria-label") && !el.hasAttribute("aria-labelledby")) {
          el.setAttribute("aria-label", "scrolls sideways");
        }
      } else if (!scrolls && el.dataset.scrollFocus) {
        el.removeAttribute("tabindex");
        delete el.dataset.scrollFocus;
      }
    }
    for (const nav of document.querySelectorAll("nav.pages ul")) markMore(nav);
  }
  window.addEventListener("resize", keyboardScrolling);
  // The row of page links fades at its right edge while links are cut off there (CSS `.more`).
  function markMore(el) {
    el.classList.toggle("more", el.scrollLeft + el.clientWidth < el.scrollWidth - 1);
  }
  document.addEventListener("scroll", (e) => {
    if (e.target instanceof Element && e.target.matches("nav.pages ul")) markMore(e.target);
  }, true);

  // The panel of every control: closed unless the reader opened it, which is remembered.
  const PANEL_KEY = "llm-ledger.panel";
  function storedPanel() {
    try { return localStorage.getItem(PANEL_KEY); } catch (e) { return null; }
  }
  function restorePanel() {
    const p = document.getElementById("panel");
    if (p && storedPanel() === "open") p.open = true;
  }
  document.addEventListener("toggle", (e) => {
    if (e.target.id !== "panel") return;
    try { localStorage.setItem(PANEL_KEY, e.target.open ? "open" : "closed"); } catch (err) { /* private mode */ }
  }, true);
  // Open the panel at a control (a value of the scenario bar, an error's "go to"), and focus it.
  function openControl(id) {
    const el = document.getElementById(id);
    const p = document.getElementById("panel");
    if (!el || !p) return false;
    p.open = true;
    for (let d = el.parentElement; d; d = d.parentElement) if (d.tagName === "DETAILS") d.open = true;
    const target = el.matches("input, select, textarea") ? el : el.querySelector("input:checked, input, select");
    el.scrollIntoView({ block: "center" });
    if (target) target.focus({ preventScroll: true });
    return true;
  }

  function swap(html, url, push) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const next = doc.getElementById("page");
    if (!next) return false;
    const focused = document.activeElement && document.activeElement.id;
    document.getElementById("page").replaceWith(document.adoptNode(next));
    document.title = doc.title;
    if (push) history.pushState(null, "", url);
    restorePanel();
    showSliders();
    if (focused) {
      const el = document.getElementById(focused);
      if (el) el.focus();
    }
    return true;
  }

  // Swap only the content (the controls stay as they are, mid-drag or mid-typing).
  function swapContent(html) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const next = doc.getElementById("content");
    if (!next) return false;
    document.getElementById("content").replaceWith(document.adoptNode(next));
    document.title = doc.title;
    return true;
  }

  async function go(url, push, init, scrollTo) {
    const id = ++latest;
    document.body.classList.add("loading");
    try {
      const res = await fetch(url, Object.assign({ headers: { Accept: "text/html" } }, init));
      const html = await res.text();
      if (id !== latest) return; // a newer request has started
      // After an upload's redirect res.url is the page with the config in its URL; a failed upload stays put.
      const shown = res.redirected || !init ? res.url : location.href;
      if (!swap(html, shown, push && shown !== location.href)) location.assign(url);
      else if (!push && shown !== location.href && !init) history.replaceState(null, "", shown);
      if (scrollTo === "top") window.scrollTo(0, 0);
      else if (scrollTo) {
        const el = document.getElementById(scrollTo);
        if (el) el.scrollIntoView({ block: "start" });
        else window.scrollTo(0, 0);
      }
    } catch (e) {
      if (!init) location.assign(url);
    } finally {
      if (id === latest) document.body.classList.remove("loading");
    }
  }

  // While dragging or typing: the content only; the first update of a gesture pushes a history
  // entry, the rest replace it, so back goes to before the gesture.
  let gesture = false;
  let timer = 0;
  // One request at a time; what changed meanwhile is fetched when it answers (so a slow answer
  // is shown rather than dropped, and the page keeps up with the hand).
  let inflight = false;
  let pending = null;
  async function live(form) {
    if (inflight) {
      pending = form;
      return;
    }
    inflight = true;
    const url = formUrl(form);
    const id = ++latest;
    const t0 = performance.now();
    try {
      const res = await fetch(url, { headers: { Accept: "text/html" } });
      const html = await res.text();
      if (id !== latest) return; // a full update has started since
      if (!swapContent(html)) return;
      if (url !== location.pathname + location.search) {
        if (gesture) history.replaceState(null, "", url);
        else history.pushState(null, "", url);
      }
      gesture = true;
      window.__lastUpdateMs = performance.now() - t0;
    } catch (e) {
      /* the next change retries */
    } finally {
      inflight = false;
      if (pending) {
        const f = pending;
        pending = null;
        live(f);
      }
    }
  }
  function schedule(form, ms) {
    clearTimeout(timer);
    timer = setTimeout(() => live(form), ms);
  }

  // The form's URL without empty fields or fields at their default, so links stay short.
  function formUrl(form) {
    const params = new URLSearchParams();
    for (const el of form.elements) {
      if (!el.name || el.disabled || el.type === "submit" || el.type === "file") continue;
      if ((el.type === "radio" || el.type === "checkbox") && !el.checked) continue;
      const v = el.value.trim();
      if (v === "" || (el.dataset.default !== undefined && v === el.dataset.default)) continue;
      params.append(el.name, v);
    }
    const q = params.toString();
    return new URL(form.getAttribute("action"), location.href).pathname + (q ? "?" + q : "");
  }

  function upload(form) {
    const file = form.querySelector("input[type=file]");
    if (!file || !file.files.length) return;
    go(form.action, true, { method: "POST", body: new FormData(form) });
  }

  document.addEventListener("input", (e) => {
    const el = e.target;
    const form = el.form;
    if (!form || form.id !== "controls") return;
    if (el.classList.contains("slider")) {
      const box = document.getElementById(el.dataset.for);
      if (!box) return;
      box.value = String(Math.max(1, Math.round(Math.pow(2, Number(el.value)))));
      // At once: live() keeps one request in flight and fetches the latest state when it answers,
      // so a fast drag is coalesced without a timer (a 15 ms timer here was a third of the
      // 50 ms budget per update).
      clearTimeout(timer);
      live(form);
    } else if (el.type === "text") {
      schedule(form, 250);
    }
  });

  document.addEventListener("change", (e) => {
    const form = e.target.form;
    if (!form) return;
    if (form.id === "controls") {
      clearTimeout(timer);
      pending = null;
      const wasGesture = gesture;
      gesture = false;
      // The end of a drag or of typing: the whole page (links, hidden fields) catches up, on the
      // history entry the gesture made.
      go(formUrl(form), !wasGesture);
    } else if (form.id === "upload" && e.target.type === "file") upload(form);
  });

  document.addEventListener("submit", (e) => {
    const form = e.target;
    if (form.id === "controls") {
      e.preventDefault();
      clearTimeout(timer);
      const wasGesture = gesture;
      gesture = false;
      go(formUrl(form), !wasGesture);
    } else if (form.id === "upload") {
      e.preventDefault();
      upload(form);
    }
  });

  document.addEventListener("click", (e) => {
    const a = e.target.closest && e.target.closest("a[href]");
    if (!a || a.target || a.hasAttribute("download") || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
    // An SVG link's href is an object; its attribute is the URL.
    const url = new URL(a.getAttribute("href"), location.href);
    if (url.origin !== location.origin || /^\/(api|plot|assets)\//.test(url.pathname)) return;
    if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
    if (a.dataset.control && openControl(a.dataset.control)) {
      e.preventDefault();
      return;
    }
    e.preventDefault();
    // Every link that changes the view scrolls to what it changed: another page to its top (to its
    // result while the panel is kept open); on
    // Powers of ten a new node (a row, a block, the breadcrumb, an experiment) to the zoom path,
    // which then sticks to the top; on another page a new scenario to its result.
    // With the panel of controls open (remembered from another page), another page opens at its
    // result, the panel above it, rather than at the panel's top.
    let to = "top";
    if (url.pathname === location.pathname) to = document.getElementById("zoom-top") ? "zoom-top" : "content";
    else if (storedPanel() === "open") to = "content";
    go(url.pathname + url.search, true, undefined, to);
  });

  window.addEventListener("popstate", () => go(location.pathname + location.search, false));
  restorePanel();
  showSliders();
})();

// ---- Plot tooltips and clickable points -------------------------------------
// Every data mark of a plot is an SVG element with a <title> (its numbers: the browser shows it on
// hover without this script), some wrapped in a link (a point that stands for a scenario or an
// operator). Here the title becomes a styled tooltip: on hover and keyboard focus with a mouse, and
// on a tap with a finger — the first tap on a linked mark shows its numbers, a second tap follows
// the link. The title moves to data-tip (and aria-label) on first use, so the browser's own
// tooltip does not show twice.
(() => {
  "use strict";
  let box = null; // the tooltip element
  let shown = null; // the mark it shows
  let finger = false; // the last press was a touch or a pen

  function tipBox() {
    if (!box || !box.isConnected) {
      box = document.createElement("div");
      box.id = "plot-tip";
      box.setAttribute("role", "tooltip");
      box.hidden = true;
      document.body.appendChild(box);
    }
    return box;
  }

  // The mark at `node`: the nearest SVG element (below the <svg>) with a title or a data-tip.
  function markOf(node) {
    for (let el = node; el && el instanceof SVGElement && el.tagName !== "svg"; el = el.parentNode) {
      if (el.dataset.tip !== undefined) return el;
      const t = el.firstElementChild;
      if (t && t.tagName === "title") {
        el.dataset.tip = t.textContent;
        if (!el.hasAttribute("aria-label")) el.setAttribute("aria-label", t.textContent.replace(/\n/g, "; "));
        t.remove();
        return el;
      }
      if (el.tagName === "a" && el.firstElementChild) return markOf(el.firstElementChild);
    }
    return null;
  }

  function place(x, y) {
    const b = tipBox();
    const gap = 14, edge = 6;
    const w = b.offsetWidth, h = b.offsetHeight;
    let left = x + gap, top = y + gap;
    if (left + w + edge > window.innerWidth) left = Math.max(edge, x - gap - w);
    if (top + h + edge > window.innerHeight) top = Math.max(edge, y - gap - h);
    b.style.left = left + "px";
    b.style.top = top + "px";
  }

  function show(mark, x, y) {
    const b = tipBox();
    if (shown && shown !== mark) shown.classList.remove("tip-on");
    b.textContent = mark.dataset.tip;
    b.classList.toggle("linked", !!mark.closest("a[href]"));
    b.classList.toggle("finger", finger);
    b.hidden = false;
    shown = mark;
    mark.classList.add("tip-on");
    if (x === undefined) {
      const r = mark.getBoundingClientRect();
      x = r.left + r.width / 2;
      y = r.top + r.height / 2;
    }
    place(x, y);
  }

  function hide() {
    if (box) box.hidden = true;
    if (shown) shown.classList.remove("tip-on");
    shown = null;
  }

  document.addEventListener("pointerdown", (e) => {
    finger = e.pointerType !== "mouse";
  }, true);
  document.addEventListener("pointerover", (e) => {
    if (e.pointerType !== "mouse") return; // a tap shows the tip on click, below
    const m = markOf(e.target);
    if (m) show(m, e.clientX, e.clientY);
  });
  document.addEventListener("pointermove", (e) => {
    if (!shown || e.pointerType !== "mouse") return;
    if (!shown.isConnected) hide();
    else if (shown.contains(e.target)) place(e.clientX, e.clientY);
  });
  document.addEventListener("pointerout", (e) => {
    if (e.pointerType !== "mouse" || !shown) return;
    if (!e.relatedTarget || !shown.contains(e.relatedTarget)) hide();
  });
  // Before the page's link handler (capture): a first tap on a mark shows its numbers only.
  document.addEventListener("click", (e) => {
    const m = markOf(e.target);
    if (!m) {
      if (finger) hide();
      return;
    }
    if (finger && shown !== m) {
      e.preventDefault();
      e.stopPropagation();
      show(m);
      return;
    }
    hide(); // the link is followed (a mouse click, or a second tap)
    // A link to a row of this page (a roofline operator): scroll to the row and mark it here; the
    // browser's own fragment navigation does not follow SVG links reliably.
    const a = m.closest("a.mark-link");
    if (!a) return;
    const url = new URL(a.getAttribute("href"), location.href);
    if (!url.hash || url.pathname !== location.pathname || url.search !== location.search) return;
    const row = document.getElementById(decodeURIComponent(url.hash.slice(1)));
    if (!row) return;
    e.preventDefault();
    e.stopPropagation();
    history.pushState(null, "", url.pathname + url.search + url.hash);
    for (const t of document.querySelectorAll(".is-target")) t.classList.remove("is-target");
    row.classList.add("is-target");
    row.scrollIntoView({ block: "center" });
  }, true);
  // Keyboard focus (a tap also focuses a link: its tip waits for the click above).
  document.addEventListener("focusin", (e) => {
    const m = markOf(e.target);
    if (m && !finger) show(m);
  });
  document.addEventListener("focusout", () => { if (!finger) hide(); });
  // The keyboard reaches every mark: a plot's linked marks are links, and of the others the
  // first is a tab stop; from a mark the arrow keys (and Home, End) go to the plot's others.
  function stops(svg) {
    const out = [];
    for (const el of svg.querySelectorAll("title, [data-tip]")) {
      const m = el.tagName === "title" ? el.parentNode : el;
      if (m === svg || m.tagName === "svg") continue;
      const stop = m.closest("a") || m;
      if (out[out.length - 1] !== stop) out.push(stop);
    }
    return out;
  }
  function step(e) {
    const keys = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: -Infinity, End: Infinity };
    if (!(e.key in keys) || !(e.target instanceof SVGElement)) return false;
    const svg = e.target.closest("svg");
    if (!svg) return false;
    const all = stops(svg);
    const i = all.indexOf(e.target);
    if (i < 0) return false;
    const d = keys[e.key];
    const j = d === -Infinity ? 0 : d === Infinity ? all.length - 1 : Math.min(all.length - 1, Math.max(0, i + d));
    const next = all[j];
    if (next.tagName !== "a" && !next.hasAttribute("tabindex")) next.setAttribute("tabindex", "-1");
    next.focus();
    return true;
  }
  document.addEventListener("keydown", (e) => {
    finger = false;
    if (e.key === "Escape") hide();
    else if (step(e)) e.preventDefault();
  });
  window.addEventListener("scroll", () => { if (finger) hide(); }, { passive: true });
})();
// ---- end of plot tooltips ----------------------------------------------------------------------

// ---- Saved scenarios (Compare) and the network graph's search ----------------------------------
// "Save for comparison" keeps up to four scenarios (their query strings) in this browser; the
// navigation's link to Compare then carries them (s1 … s4), so the server lines them up. On the
// Compare page the URL is the comparison: the saved list follows it. The network graph's search
// box marks the operators as one types (the server does the same for the plain form).
(() => {
  "use strict";
  const KEY = "llm-ledger.saved";
  const MAX = 4;
  const SLOTS = ["s1", "s2", "s3", "s4"];

  function load() {
    try {
      const v = JSON.parse(localStorage.getItem(KEY) || "[]");
      return Array.isArray(v) ? v.filter((s) => typeof s === "string" && s !== "").slice(-MAX) : [];
    } catch (e) {
      return [];
    }
  }
  function store(list) {
    try {
      localStorage.setItem(KEY, JSON.stringify(list.slice(-MAX)));
    } catch (e) {
      /* storage off: the URL still carries a comparison */
    }
  }

  // The scenario of this URL: its query without the page's own keys (`default` for none).
  function scenario(keys) {
    const p = new URLSearchParams(location.search);
    for (const k of keys) p.delete(k);
    const s = p.toString();
    return s === "" ? "default" : s;
  }

  // A link to Compare with `list` saved, on top of the link's own state.
  function withSaved(href, list) {
    const u = new URL(href, location.href);
    for (const k of SLOTS) u.searchParams.delete(k);
    list.forEach((s, i) => u.searchParams.set(SLOTS[i], s));
    return u.pathname + u.search;
  }

  function note() {
    const el = document.getElementById("saved-note");
    if (!el) return;
    const list = load();
    el.textContent = "";
    if (!list.length) return;
    const a = document.createElement("a");
    a.href = withSaved("/compare", list);
    a.textContent = "Compare the " + list.length + " saved";
    el.append(a);
  }

  // Each time the page is shown (first load, or swapped in by the script above).
  function shown() {
    const b = document.getElementById("save-scenario");
    if (b && b.hidden) {
      b.hidden = false;
      note();
    }
    const page = document.getElementById("page");
    if (page && page.dataset.page === "compare" && !page.dataset.synced) {
      page.dataset.synced = "1";
      const p = new URLSearchParams(location.search);
      const inUrl = SLOTS.map((k) => p.get(k)).filter((s) => s);
      if (inUrl.length) store(inUrl);
      note();
    }
    // (A page that arrives with a search has its hits marked by the server.)
  }
  new MutationObserver(shown).observe(document.body, { childList: true, subtree: true });
  shown();

  document.addEventListener("click", (e) => {
    const save = e.target.closest && e.target.closest("#save-scenario");
    if (save) {
      const s = scenario((save.dataset.keys || "").split(",").filter((k) => k));
      const list = load().filter((x) => x !== s);
      list.push(s);
      store(list);
      note();
      const el = document.getElementById("saved-note");
      if (el) el.prepend("Saved (" + Math.min(list.length, MAX) + " of " + MAX + ") · ");
      return;
    }
    const a = e.target.closest && e.target.closest("a[href]");
    if (!a) return;
    // A link that changes the comparison (remove, clear) changes the saved list with it.
    if (a.dataset.sync) {
      const u = new URL(a.getAttribute("href"), location.href);
      store(SLOTS.map((k) => u.searchParams.get(k)).filter((s) => s));
      return;
    }
    // The navigation's link to Compare carries the saved scenarios (before the page's own
    // handler reads the link: this listener runs in the capture phase).
    if (a.dataset.slug === "compare") {
      const list = load();
      const here = new URLSearchParams(new URL(a.getAttribute("href"), location.href).search);
      if (list.length && !SLOTS.some((k) => here.has(k))) a.setAttribute("href", withSaved(a.getAttribute("href"), list));
    }
  }, true);

  // The network graph's search: mark the operators whose name or path holds the text, open the
  // layers that hold them, say how many, and bring the first into view.
  function mark(text) {
    const graph = document.getElementById("graph");
    if (!graph) return;
    const t = text.trim().toLowerCase();
    const hits = [];
    for (const el of graph.querySelectorAll("g[data-name][data-path]")) {
      const on = t !== "" && (el.dataset.name.toLowerCase().includes(t) || el.dataset.path.toLowerCase().includes(t));
      el.classList.toggle("match", on);
      if (on) hits.push(el);
    }
    for (const d of graph.querySelectorAll("details")) {
      const inside = d.querySelector("g.match");
      if (inside) d.open = true;
    }
    const count = document.getElementById("graph-count");
    if (count) {
      count.dataset.hits = String(hits.length);
      count.textContent = t === "" ? "" : hits.length === 0 ? "Nothing matches “" + text.trim() + "”."
        : hits.length + (hits.length === 1 ? " operator matches" : " operators match") + " “" + text.trim() + "”.";
    }
    const u = new URL(location.href);
    if (t === "") u.searchParams.delete("find");
    else u.searchParams.set("find", text.trim());
    history.replaceState(null, "", u.pathname + u.search);
    // The controls keep the page's keys as hidden fields: keep this one in step.
    const hidden = document.querySelector("#controls input[type=hidden][name=find]");
    if (hidden) hidden.value = text.trim();
    if (hits.length) hits[0].scrollIntoView({ block: "center" });
  }
  document.addEventListener("input", (e) => {
    if (e.target.id === "graph-find") mark(e.target.value);
  });
  document.addEventListener("submit", (e) => {
    if (e.target.id !== "graph-search") return;
    e.preventDefault();
    const find = document.getElementById("graph-find");
    if (find) mark(find.value);
  });
})();
// ---- end of saved scenarios and the graph's search ----
