// A small Markdown renderer for answers: fenced code blocks, inline code,
// headings, lists, quotes, bold, italics and http(s) links. Safe by
// construction: every character of the text is HTML-escaped first, and only
// the markup added here is HTML; links keep to http and https.
"use strict";
const markdown = (() => {
  const esc = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");

  // inline renders one escaped line's spans; code spans first, so nothing
  // inside them is read as markup.
  function inline(s) {
    const parts = s.split(/(`[^`]+`)/);
    return parts.map((p, i) => {
      if (i % 2 === 1) return "<code>" + p.slice(1, -1) + "</code>";
      return p
        .replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g, (m, text, href) =>
          '<a href="' + href + '" rel="noopener noreferrer" target="_blank">' + text + "</a>")
        .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
        .replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, "$1<em>$2</em>")
        .replace(/(^|[^_\w])_([^_\s][^_]*)_(?!\w)/g, "$1<em>$2</em>");
    }).join("");
  }

  function codeBlock(lang, lines) {
    const cls = lang ? ' class="language-' + lang.replace(/[^\w-]/g, "") + '"' : "";
    return '<div class="codeblock"><button type="button" class="copy">Copy</button><pre><code' + cls + ">" +
      lines.join("\n") + "</code></pre></div>";
  }

  // render returns the HTML of text. An unclosed fence (an answer still
  // being written) runs to the end.
  function render(text) {
    const lines = esc(text).split("\n");
    const out = [];
    let para = [], list = null, quote = [];
    const flush = () => {
      if (para.length) { out.push("<p>" + para.map(inline).join("<br>") + "</p>"); para = []; }
      if (list) { out.push("<" + list.tag + ">" + list.items.map((x) => "<li>" + inline(x) + "</li>").join("") + "</" + list.tag + ">"); list = null; }
      if (quote.length) { out.push("<blockquote>" + quote.map(inline).join("<br>") + "</blockquote>"); quote = []; }
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/);
      if (fence) {
        flush();
        const body = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
        out.push(codeBlock(fence[2], body));
        continue;
      }
      let m;
      if (!line.trim()) { flush(); continue; }
      if ((m = line.match(/^(#{1,6})\s+(.*)$/))) {
        flush();
        const n = m[1].length;
        out.push("<h" + n + ">" + inline(m[2]) + "</h" + n + ">");
        continue;
      }
      if ((m = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/))) {
        const tag = /\d/.test(m[1]) ? "ol" : "ul";
        if (para.length || quote.length || (list && list.tag !== tag)) flush();
        if (!list) list = { tag, items: [] };
        list.items.push(m[2]);
        continue;
      }
      if ((m = line.match(/^&gt;\s?(.*)$/))) {
        if (para.length || list) flush();
        quote.push(m[1]);
        continue;
      }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); out.push("<hr>"); continue; }
      if (list && /^\s{2,}/.test(line)) { list.items[list.items.length - 1] += " " + line.trim(); continue; }
      if (list || quote.length) flush();
      para.push(line);
    }
    flush();
    return out.join("\n");
  }

  return { render, esc };
})();
