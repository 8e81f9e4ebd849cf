// The model page: install state, download and warming progress with rates
// over time, the RAM plan, the experts as a picture, recent answers.
"use strict";
(() => {
  const { api, el, bytes, duration } = deltafin;
  const $ = (id) => document.getElementById(id);
  const svgNS = "http://www.w3.org/2000/svg";

  // bar shows a transfer's share with its measured rate and the time left
  // at that rate; before the app has measured a rate over real bytes it
  // says so, and no time left shows.
  function bar(id, p, running) {
    const frac = p && p.total > 0 ? Math.min(1, p.done / p.total) : 0;
    $(id).value = frac;
    let text = "—";
    if (p && p.total > 0) {
      const parts = [Math.floor(frac * 100) + "%"];
      if (p.rate > 0) parts.push(bytes(p.rate) + "/s");
      if (p.waiting) parts.push(p.waiting);
      else if (p.rate > 0 && p.eta_seconds > 0) parts.push(duration(p.eta_seconds) + " left");
      else if (running && !(p.rate > 0)) parts.push("measuring the rate…");
      text = parts.join(" · ");
    } else if (running) {
      text = "starting…";
    }
    $(id + "-text").textContent = text;
  }

  // download shows the Download buttons while nothing is installed and no
  // download is pending, as the menu's Download entries; the app's note
  // where it cannot download.
  function download(a) {
    const offer = !!a && a.install === "none" && !a.pending;
    $("download-buttons").hidden = !offer;
    for (const b of document.querySelectorAll("[data-check]")) b.disabled = !offer || !a.CanDownload;
    if (!offer) $("dl-confirm").hidden = true;
    const note = a ? a.download_note : "";
    $("dl-note").textContent = note || "";
    $("dl-note").hidden = !note;
  }

  // graph draws the rates over time: download and warming from the app,
  // disk reads from the engine's counters between samples.
  function graph(h) {
    const svg = $("graph");
    svg.replaceChildren();
    const n = h.length;
    const series = { dl: [], wm: [], rd: [] };
    for (let i = 0; i < n; i++) {
      series.dl.push(h[i].download_rate);
      series.wm.push(h[i].warm_rate);
      const dt = i ? h[i].t - h[i - 1].t : 0;
      series.rd.push(dt > 0 ? Math.max(0, h[i].disk_bytes - h[i - 1].disk_bytes) / dt : 0);
    }
    let top = 1;
    for (const s of Object.values(series)) for (const x of s) top = Math.max(top, x);
    const t0 = n ? h[0].t : 0, span = n > 1 ? h[n - 1].t - t0 : 1;
    for (const [cls, s] of Object.entries(series)) {
      const pts = s.map((x, i) => ((n > 1 ? (h[i].t - t0) / span : 0.5) * 600).toFixed(1) + "," + (155 - x / top * 150).toFixed(1));
      const pl = document.createElementNS(svgNS, "polyline");
      pl.setAttribute("class", cls);
      pl.setAttribute("points", pts.join(" "));
      svg.append(pl);
    }
    svg.dataset.points = String(n);
    $("graph-peak").textContent = top > 1 ? "peak " + bytes(top) + "/s" : "nothing transferred yet";
  }

  function plan(v) {
    const dl = $("plan");
    dl.replaceChildren();
    const row = (k, val) => dl.append(el("dt", { text: k }), el("dd", { text: val }));
    if (v.info) {
      row("Model", v.id + " · " + v.info.Layers + " layers · " + v.experts + " experts × " + v.layers.length + " MoE layers, top " + v.info.TopK);
      row("Backend", v.info.Backend);
    }
    if (!v.plan) { row("Plan", "no engine figures"); return; }
    const p = v.plan;
    row("RAM planned for", bytes(p.ram) + " (reserve " + bytes(p.reserve) + ")");
    row("Pinned layers", p.pinned_layers + " of " + (v.info ? v.info.Layers : "?") + " · " + bytes(p.pinned_bytes) + (p.globals_pinned ? " with the globals" : ""));
    row("Streamed per token", bytes(p.disk_bytes_per_token) + " (spine " + bytes(p.streamed_spine_bytes) + ", experts " + bytes(p.expert_bytes_per_token) + ")");
    row("Expert cache", bytes(p.cache_bytes) + " · " + p.cache_experts + " experts");
    if (v.stats) {
      const s = v.stats, dem = s.CacheHits + s.PrefetchHits + s.Shared + s.Misses;
      row("Read since start", bytes(s.ExpertBytes + s.SpineBytes) + " · cache hits " + (dem ? Math.round(100 * (s.CacheHits + s.PrefetchHits + s.Shared) / dem) : 0) + "% of " + dem);
    }
  }

  const colors = {
    "0": [42, 47, 58],
    "1": [37, 99, 235],
    "2": [249, 115, 22],
  };

  // cells paints the experts: a row per MoE layer, a column per expert,
  // coloured by place and brightened by heat. K3's 896 experts get a pixel
  // each (scaled up by the browser); few experts (the demo) get squares
  // with a gap, big enough to see one by one.
  function cells(v) {
    const c = $("cells");
    const L = v.layers.length, E = v.experts;
    c.dataset.layers = String(L);
    c.dataset.experts = String(E);
    c.dataset.cells = String(v.cells.length);
    $("experts-caption").textContent = L + " MoE layers × " + E + " experts = " + (L * E) + " cells";
    if (!L || !E) return;
    const room = c.parentElement.clientWidth || 800;
    const scale = E * 6 <= room ? Math.min(24, Math.floor(room / E)) : 1;
    const gap = scale >= 6 ? 1 : 0;
    c.dataset.scale = String(scale);
    c.width = E * scale;
    c.height = L * scale;
    c.style.width = scale > 1 ? c.width + "px" : "100%";
    c.style.height = scale > 1 ? c.height + "px" : Math.max(L * 2, 60) + "px";
    const ctx = c.getContext("2d");
    ctx.clearRect(0, 0, c.width, c.height);
    for (let i = 0; i < L * E; i++) {
      const base = colors[v.cells[i]] || colors["0"];
      const heat = (v.heat.charCodeAt(i) - 48) / 9;
      const k = 0.55 + 0.45 * heat;
      const rgb = base.map((x) => Math.min(255, Math.round(x * k + 70 * heat)));
      ctx.fillStyle = "rgb(" + rgb.join(",") + ")";
      ctx.fillRect((i % E) * scale, Math.floor(i / E) * scale, scale - gap, scale - gap);
    }
  }

  function recent(v) {
    const tb = $("recent");
    const h = v.history;
    // Bytes per token over the samples during which tokens were generated.
    let db = 0, dtok = 0, busy = 0, bytesBusy = 0;
    for (let i = 1; i < h.length; i++) {
      const tok = h[i].tokens - h[i - 1].tokens, b = h[i].disk_bytes - h[i - 1].disk_bytes;
      if (tok > 0) { dtok += tok; db += b; }
      const reading = (h[i].t - h[i - 1].t) - (h[i].disk_idle - h[i - 1].disk_idle);
      if (b > 0 && reading > 0) { busy += reading; bytesBusy += b; }
    }
    const perTok = dtok ? db / dtok : null;
    tb.replaceChildren(...(v.recent || []).slice().reverse().map((g) => el("tr", {},
      el("td", { text: g.id }), el("td", { text: String(g.tokens) }),
      el("td", { text: g.tokens ? (g.decode_seconds / g.tokens).toFixed(3) : "—" }),
      el("td", { text: perTok == null ? "—" : bytes(perTok) }))));
    if (!tb.children.length) tb.append(el("tr", {}, el("td", { colspan: "4", class: "dim", text: "no answer yet" })));
    const bw = busy > 0 ? bytesBusy / busy : 0;
    $("disk-bw").textContent = "Disk bandwidth measured while reading: " + (bw ? bytes(bw) + "/s" : "no reads yet") +
      (perTok && bw ? " · bytes read per token ÷ bandwidth: " + (perTok / bw).toFixed(3) + " s/token" : "");
  }

  function buttons(a) {
    const on = (id, yes) => { $(id).disabled = !yes; };
    if (!a) { for (const b of document.querySelectorAll("[data-act], [data-check]")) b.disabled = true; return; }
    on("act-pause", a.CanPause);
    on("act-resume", a.CanResume);
    on("act-upgrade", a.CanUpgrade);
    const w = $("act-warm");
    w.disabled = !a.CanWarm;
    w.dataset.act = a.warm_enabled ? "warm-off" : "warm-on";
    w.textContent = a.warm_enabled ? "Stop warming overnight" : "Warm overnight";
  }

  async function poll() {
    let v;
    try { v = await api("GET", "/api/model"); } catch (e) { $("line").textContent = e.message; return; }
    const a = v.app;
    $("line").textContent = a ? a.line : (v.demo ? "the demo model (random weights)" : "deltafin serve: " + v.id);
    // The installed model's share from the app; the demo's (or under
    // deltafin serve, the served model's) from the engine's cells.
    const fromApp = a && a.experts_total && !v.demo;
    const onDisk = [...v.cells].filter((x) => x !== "0").length;
    const total = fromApp ? a.experts_total : v.cells.length;
    const share = fromApp ? a.experts_on_disk / a.experts_total : (total ? onDisk / total : 0);
    $("disk-share").value = share;
    $("disk-share-text").textContent = Math.floor(share * 100) + "% of " + total + " · " +
      (v.demo ? "demo" : a ? a.install : "served");
    bar("download", a && a.download, !!a && a.downloading);
    bar("warm", a && a.warm, !!a && a.warming);
    download(a);
    graph(v.history);
    plan(v);
    cells(v);
    recent(v);
    buttons(a);
  }

  function failed(e) {
    $("act-error").textContent = e.message;
    $("act-error").hidden = false;
  }

  document.addEventListener("click", async (ev) => {
    const b = ev.target.closest("[data-act]");
    if (!b) return;
    $("act-error").hidden = true;
    try {
      await api("POST", "/api/model/" + b.dataset.act);
    } catch (e) {
      failed(e);
    }
    poll();
  });

  // Download asks first, as the menu does: the disk check's figures (what
  // is fetched, the free disk left), then Download starts it.
  document.addEventListener("click", async (ev) => {
    const b = ev.target.closest("[data-check]");
    if (!b) return;
    $("act-error").hidden = true;
    const form = $("dl-confirm");
    form.hidden = false;
    form.dataset.mode = "";
    $("dl-start").disabled = true;
    $("dl-confirm-text").textContent = "Connecting to the hub…";
    try {
      const r = await api("POST", "/api/model/check/" + b.dataset.check);
      $("dl-confirm-text").textContent = r.text;
      form.dataset.mode = b.dataset.check;
      $("dl-start").disabled = false;
    } catch (e) {
      form.hidden = true;
      failed(e);
    }
  });

  $("dl-confirm").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const form = $("dl-confirm");
    if (!form.dataset.mode) return;
    $("act-error").hidden = true;
    try {
      await api("POST", "/api/model/download-" + form.dataset.mode);
      form.hidden = true;
    } catch (e) {
      failed(e);
    }
    poll();
  });

  $("dl-cancel").addEventListener("click", () => { $("dl-confirm").hidden = true; });

  poll();
  setInterval(poll, 2000);
})();
