// The ask page: conversations, the prompt box, answers streamed from the
// server's background responses, and the list of answers in progress.
"use strict";
(() => {
  const { api, el, duration } = deltafin;
  const $ = (id) => document.getElementById(id);
  const turnsEl = $("turns"), stopBtn = $("stop"), errEl = $("ask-error"), emptyEl = $("empty");
  let conv = null;          // the conversation shown
  const live = new Map();   // response id → {abort, turn}
  const labels = { waiting: "waiting…", queued: "queued", in_progress: "writing…", completed: "done",
    incomplete: "cut at the token limit", cancelled: "stopped", failed: "failed", gone: "expired from the server" };
  const terminal = new Set(["response.completed", "response.incomplete", "response.cancelled", "response.failed"]);

  const tokens = (n) => n === 1 ? "1 token" : n + " tokens";

  function showError(msg) {
    errEl.textContent = msg || "";
    errEl.hidden = !msg;
  }

  // The stream's progress is kept per response in localStorage, so a
  // reload shows what had arrived and asks only for what follows
  // (starting_after); without it the server replays from the start.
  const saved = (rid) => {
    try { return JSON.parse(localStorage.getItem("deltafin:" + rid)) || null; } catch (e) { return null; }
  };
  const keep = (rid, st) => {
    try { localStorage.setItem("deltafin:" + rid, JSON.stringify(st)); } catch (e) { /* full: replay instead */ }
  };

  async function loadList() {
    const list = await api("GET", "/api/conversations");
    const ul = $("conversations");
    ul.replaceChildren(...list.map((c) => {
      const a = el("a", { href: "#" + c.ID, text: c.Title || "(untitled)", title: c.Title });
      if (conv && conv.id === c.ID) a.setAttribute("aria-current", "true");
      return el("li", {}, a);
    }));
    return list;
  }

  function turnView(t, i) {
    const rid = t.response_id;
    const status = el("span", { class: "status", text: t.status || "waiting" });
    const copyBtn = el("button", { type: "button", class: "copy", "data-copy": "#md-" + rid, text: "Copy" });
    const meta = el("div", { class: "meta" }, status, el("span", { class: "grow" }), copyBtn);
    const rtext = el("div", { class: "text" });
    const details = el("details", { class: "reasoning" }, el("summary", { text: "Reasoning" }), rtext);
    details.hidden = !t.thinking;
    const md = el("div", { class: "md", id: "md-" + rid });
    const answer = el("div", { class: "answer", "data-response": rid }, meta, details, md);
    const node = el("div", { class: "turn", "data-turn": String(i) }, el("div", { class: "you", text: t.prompt }), answer);
    const view = {
      node, rid, i,
      set(st, final) {
        rtext.textContent = st.reasoning;
        if (st.reasoning) details.hidden = false;
        md.innerHTML = markdown.render(st.answer);
        md.classList.toggle("cursor", !final);
        copyBtn.dataset.text = st.answer;
        status.textContent = labels[st.status] || st.status;
        answer.dataset.status = st.status;
      },
    };
    return view;
  }

  function render() {
    turnsEl.replaceChildren();
    if (!conv) { turnsEl.append(emptyEl); updateStop(); return; }
    conv.turns.forEach((t, i) => {
      const v = turnView(t, i);
      turnsEl.append(v.node);
      if (t.status) v.set({ reasoning: t.reasoning || "", answer: t.answer || "", status: t.status }, true);
      else follow(v);
    });
    turnsEl.lastElementChild && turnsEl.lastElementChild.scrollIntoView({ block: "end" });
    updateStop();
  }

  function updateStop() {
    stopBtn.hidden = ![...live.values()].some((l) => conv && l.conv === conv.id);
  }

  // follow reads a response's events until it ends: from where the last
  // reading stopped, again after a dropped connection or a server restart.
  async function follow(v) {
    if (live.has(v.rid)) live.get(v.rid).abort.abort();
    const abort = new AbortController();
    const me = { abort, conv: conv.id };
    live.set(v.rid, me);
    updateStop();
    const st = saved(v.rid) || { seq: -1, reasoning: "", answer: "", status: "waiting" };
    v.set(st, false);
    let done = false;
    while (!done && !abort.signal.aborted) {
      try {
        const r = await fetch("/api/responses/" + encodeURIComponent(v.rid) + "/stream?starting_after=" + st.seq,
          { signal: abort.signal, credentials: "same-origin" });
        if (r.status === 404) { st.status = "gone"; v.set(st, true); break; }
        if (!r.ok) throw new Error("HTTP " + r.status);
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        let buf = "";
        for (;;) {
          const { value, done: end } = await reader.read();
          if (end) break;
          buf += dec.decode(value, { stream: true });
          let k;
          while ((k = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, k);
            buf = buf.slice(k + 2);
            let data = "";
            for (const line of block.split("\n")) if (line.startsWith("data:")) data += line.slice(5).trim();
            if (!data) continue;
            const ev = JSON.parse(data);
            if (ev.sequence_number <= st.seq) continue;
            st.seq = ev.sequence_number;
            if (ev.type === "response.reasoning_text.delta") st.reasoning += ev.delta;
            else if (ev.type === "response.output_text.delta") st.answer += ev.delta;
            else if (ev.type === "response.in_progress") st.status = "in_progress";
            else if (ev.type === "response.queued" || ev.type === "response.created") st.status = ev.response.status;
            if (terminal.has(ev.type)) {
              st.status = ev.response.status;
              done = true;
            }
            keep(v.rid, st);
            v.set(st, done);
          }
        }
      } catch (e) {
        if (abort.signal.aborted) break;
      }
      if (!done && !abort.signal.aborted) await new Promise((ok) => setTimeout(ok, 1000));
    }
    if (live.get(v.rid) === me) live.delete(v.rid);
    updateStop();
    pollJobs();
    if (done) {
      const cid = me.conv;
      try {
        await api("POST", "/api/conversations/" + encodeURIComponent(cid) + "/turns/" + v.i + "/done",
          { ResponseID: v.rid, Status: st.status, Answer: st.answer, Reasoning: st.reasoning });
        localStorage.removeItem("deltafin:" + v.rid);
      } catch (e) { showError("could not keep the answer: " + e.message); }
    }
  }

  async function open(id) {
    for (const l of live.values()) l.abort.abort();
    live.clear();
    conv = id ? await api("GET", "/api/conversations/" + encodeURIComponent(id)) : null;
    render();
    await loadList();
  }

  $("prompt").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    showError("");
    const text = $("prompt-text").value;
    if (!text.trim()) return;
    $("send").disabled = true;
    try {
      const c = await api("POST", "/api/ask", {
        conversation_id: conv ? conv.id : "", prompt: text,
        thinking: $("thinking").checked, effort: $("effort").value,
      });
      $("prompt-text").value = "";
      if (location.hash !== "#" + c.id) history.replaceState(null, "", "#" + c.id);
      if (conv && conv.id === c.id) {
        conv = c;
        const i = c.turns.length - 1;
        const v = turnView(c.turns[i], i);
        emptyEl.remove();
        turnsEl.append(v.node);
        v.node.scrollIntoView({ block: "end" });
        follow(v);
      } else {
        await open(c.id);
      }
      await loadList();
      pollJobs();
    } catch (e) {
      showError(e.message);
    } finally {
      $("send").disabled = false;
    }
  });

  $("prompt-text").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.metaKey || ev.ctrlKey)) $("prompt").requestSubmit();
  });

  $("thinking").addEventListener("change", () => { $("effort").disabled = !$("thinking").checked; });

  stopBtn.addEventListener("click", async () => {
    for (const [rid, l] of live) {
      if (conv && l.conv === conv.id) {
        try { await api("POST", "/api/responses/" + encodeURIComponent(rid) + "/cancel"); } catch (e) { showError(e.message); }
      }
    }
  });

  $("new-chat").addEventListener("click", () => {
    history.replaceState(null, "", "/");
    open(null);
  });

  window.addEventListener("hashchange", () => open(location.hash.slice(1) || null));

  // The list of queued and running answers, with their progress.
  async function pollJobs() {
    let q;
    try { q = await api("GET", "/api/queue"); } catch (e) { return; }
    const ul = $("jobs");
    if (!q.jobs || !q.jobs.length) {
      ul.replaceChildren(el("li", { class: "dim", text: "none" }));
      return;
    }
    // The jobs come running first, then the line in order: a queued one
    // has every job before it ahead. No rate and no ETA until the server
    // has measured one over real generations.
    ul.replaceChildren(...q.jobs.map((j, i) => {
      const words = j.title || j.server_title || (j.kind === "response" ? "an API response" : "an API request");
      const name = j.conversation_id ? el("a", { href: "#" + j.conversation_id, text: words }) : el("span", { text: words });
      let state;
      if (j.state === "queued") state = "waiting, " + i + " ahead";
      else if (j.state === "prefilling") state = "reading the prompt " + j.prompt_done + "/" + j.prompt_tokens;
      else if (j.thinking) state = "thinking… " + tokens(j.thinking_tokens);
      else state = tokens(j.tokens);
      const parts = [];
      if (j.state === "generating" && q.decode_tokens_per_second) parts.push(q.decode_tokens_per_second.toFixed(2) + " tok/s");
      if (j.eta_seconds != null) parts.push("at most " + duration(j.eta_seconds) + " left");
      return el("li", { class: "job", "data-id": j.id },
        name, el("br"),
        el("span", { class: "state", text: state }),
        el("span", { text: parts.length ? " · " + parts.join(" · ") : "" }));
    }));
  }

  open(location.hash.slice(1) || null).catch((e) => showError(e.message));
  pollJobs();
  setInterval(pollJobs, 1500);
})();
