// llm-ledger explorer: update the page without a full reload. The server renders every page; this
// script only fetches the next URL and swaps #page, keeping the URL (and so the back button) in
// step with what is shown. Without it, the forms and links work as they are.
(() => {
  "use strict";
  let latest = 0;

  function swap(html, url, push) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const next = doc.getElementById("page");
    if (!next) return false;
    const focused = document.activeElement && document.activeElement.id;
    document.getElementById("page").replaceWith(document.adoptNode(next));
    document.title = doc.title;
    if (push) history.pushState(null, "", url);
    if (focused) {
      const el = document.getElementById(focused);
      if (el) el.focus();
    }
    return true;
  }

  async function go(url, push, init) {
    const id = ++latest;
    document.body.classList.add("loading");
    try {
      const res = await fetch(url, Object.assign({ headers: { Accept: "text/html" } }, init));
      const html = await res.text();
      if (id !== latest) return; // a newer request has started
      // After an upload's redirect res.url is the page with the config in its URL; a failed upload stays put.
      const shown = res.redirected || !init ? res.url : location.href;
      if (!swap(html, shown, push && shown !== location.href)) location.assign(url);
    } catch (e) {
      if (!init) location.assign(url);
    } finally {
      if (id === latest) document.body.classList.remove("loading");
    }
  }

  // The form's URL without empty fields or fields at their default, so links stay short.
  function formUrl(form) {
    const params = new URLSearchParams();
    for (const el of form.elements) {
      if (!el.name || el.disabled || el.type === "submit" || el.type === "file") continue;
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

  document.addEventListener("change", (e) => {
    const form = e.target.form;
    if (!form) return;
    if (form.id === "controls") go(formUrl(form), true);
    else if (form.id === "upload" && e.target.type === "file") upload(form);
  });

  document.addEventListener("submit", (e) => {
    const form = e.target;
    if (form.id === "controls") {
      e.preventDefault();
      go(formUrl(form), true);
    } else if (form.id === "upload") {
      e.preventDefault();
      upload(form);
    }
  });

  document.addEventListener("click", (e) => {
    const a = e.target.closest && e.target.closest("a[href]");
    if (!a || a.target || a.hasAttribute("download") || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || /^\/(api|plot|assets)\//.test(url.pathname)) return;
    if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
    e.preventDefault();
    go(url.pathname + url.search, true);
  });

  window.addEventListener("popstate", () => go(location.pathname + location.search, false));
})();
