// Deltafin's page: what every page shares. Plain JavaScript, no library.
"use strict";
const deltafin = (() => {
  const token = document.querySelector('meta[name="deltafin-token"]').content;

  // api calls the page's own endpoints: the same-origin token on every
  // state-changing request; JSON in and out.
  async function api(method, path, body) {
    const opts = { method, headers: {}, credentials: "same-origin" };
    if (method !== "GET") opts.headers["X-Deltafin-Token"] = token;
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    const text = await r.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = { error: { message: text } }; }
    if (!r.ok) {
      const msg = (data && data.error && data.error.message) || r.statusText;
      const err = new Error(msg);
      err.status = r.status;
      throw err;
    }
    return data;
  }

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }

  async function copy(text, button) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {
      // Without the clipboard API (a plain-http page in some browsers):
      // select a hidden text area and copy it.
      const ta = el("textarea", {});
      ta.value = text;
      document.body.append(ta);
      ta.select();
      document.execCommand("copy");
      ta.remove();
    }
    if (button) {
      const was = button.textContent;
      button.textContent = "Copied";
      setTimeout(() => { button.textContent = was; }, 1200);
    }
  }

  // Copy buttons: data-copy names the element whose text they copy; a
  // code block's button copies its own block.
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest("button.copy");
    if (!b) return;
    const sel = b.getAttribute("data-copy");
    const src = sel ? document.querySelector(sel) : b.parentElement.querySelector("pre, .md");
    if (src) copy(b.dataset.text || src.textContent, b);
  });

  function bytes(n) {
    if (!n) return "0 B";
    const u = ["B", "kB", "MB", "GB", "TB"];
    let i = 0;
    while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
    return (i ? n.toFixed(1) : n.toFixed(0)) + " " + u[i];
  }

  function duration(s) {
    if (s == null || !isFinite(s)) return "—";
    if (s >= 5400) return Math.round(s / 3600) + " h";
    if (s >= 90) return Math.round(s / 60) + " min";
    return Math.round(s) + " s";
  }

  return { api, el, copy, bytes, duration, token };
})();
