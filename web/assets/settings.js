// The settings page: the app's settings, saved in its state file.
"use strict";
(() => {
  const { api } = deltafin;
  const $ = (id) => document.getElementById(id);
  const form = $("settings");
  if (!form) return;

  function fill(s) {
    $("s-port").value = s.port;
    $("s-key").value = s.api_key || "";
    $("s-cors").value = (s.cors_origins || []).join(", ");
    $("s-queue").value = s.queue;
    $("s-warm").checked = !!s.warm_overnight;
    $("s-idle").value = s.warm_idle_minutes;
    $("s-notify").value = s.notify_after_seconds;
  }

  api("GET", "/api/settings").then(fill).catch((e) => { $("s-error").textContent = e.message; $("s-error").hidden = false; });

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    $("s-note").hidden = true;
    $("s-error").hidden = true;
    const s = {
      port: Number($("s-port").value),
      api_key: $("s-key").value.trim(),
      cors_origins: $("s-cors").value.split(",").map((x) => x.trim()).filter(Boolean),
      queue: Number($("s-queue").value),
      warm_overnight: $("s-warm").checked,
      warm_idle_minutes: Number($("s-idle").value),
      notify_after_seconds: Number($("s-notify").value),
    };
    $("s-save").disabled = true;
    try {
      const r = await api("POST", "/api/settings", s);
      fill(r.settings);
      $("s-note").textContent = r.note || "Saved.";
      $("s-note").hidden = false;
    } catch (e) {
      $("s-error").textContent = e.message;
      $("s-error").hidden = false;
    } finally {
      $("s-save").disabled = false;
    }
  });
})();
