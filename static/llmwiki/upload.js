// Per-file progress for the import form. All files go in one request, as without
// JavaScript, so the upload is one import with one result table; each file's bar follows
// the bytes sent, which arrive in the order the files were chosen.
(function () {
  "use strict";
  const form = document.getElementById("upload-form");
  if (!form || !window.XMLHttpRequest) return;
  const input = form.querySelector('input[type="file"]');
  const list = document.getElementById("upload-progress");
  const token = form.querySelector('input[name="csrfmiddlewaretoken"]').value;
  // The characters the server's `filename` filter shows as code points (llmwiki.render's
  // INVISIBLE_CHARS): a right-to-left override must not make "gnp.exe" read as "exe.png".
  const INVISIBLE = /[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}]/gu;

  function shownName(name) {
    return name.replace(INVISIBLE, function (c) {
      return "\u27e8U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e9";
    });
  }

  function progressRows(files) {
    list.replaceChildren();
    let end = 0;
    return files.map(function (file) {
      const li = document.createElement("li");
      const name = document.createElement("bdi");
      const bar = document.createElement("progress");
      const label = document.createElement("span");
      name.className = "filename";
      name.textContent = shownName(file.name);
      name.title = name.textContent; // a long name wraps; the title holds it whole
      bar.max = 100;
      bar.value = 0;
      label.className = "muted";
      label.textContent = "waiting";
      li.append(name, " ", bar, label);
      list.append(li);
      const start = end;
      end += file.size;
      return { start: start, end: end, bar: bar, label: label };
    });
  }

  function show(rows, sent, total, payload) {
    // The multipart framing adds a little to the body; scale it away.
    const bytes = total ? (sent * payload) / total : 0;
    for (const row of rows) {
      const size = row.end - row.start;
      const done = size ? Math.min(1, Math.max(0, (bytes - row.start) / size)) : 1;
      row.bar.value = Math.round(100 * done);
      row.label.textContent = done >= 1 ? "sent" : done > 0 ? "uploading" : "waiting";
    }
  }

  form.addEventListener("submit", function (event) {
    if (input.files.length < 2) return; // one file or none: htmx posts it
    event.preventDefault();
    event.stopImmediatePropagation();
    const files = Array.from(input.files);
    const rows = progressRows(files);
    const payload = files.reduce(function (n, f) { return n + f.size; }, 0);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.dataset.uploadUrl);
    xhr.setRequestHeader("X-CSRFToken", token);
    xhr.setRequestHeader("HX-Request", "true");
    xhr.upload.onprogress = function (e) {
      if (e.lengthComputable) show(rows, e.loaded, e.total, payload);
    };
    xhr.onload = function () {
      const ok = xhr.status === 200;
      for (const row of rows) {
        row.bar.value = 100;
        row.label.textContent = ok ? "done" : "failed (" + xhr.status + ")";
      }
      const doc = new DOMParser().parseFromString(xhr.responseText, "text/html");
      const part = doc.getElementById("upload-results");
      const results = document.getElementById("upload-results");
      if (part) {
        results.replaceWith(part);
      } else {
        const error = document.createElement("div");
        error.className = "error";
        error.setAttribute("role", "alert");
        error.textContent = "The upload failed (HTTP " + xhr.status + ").";
        results.replaceChildren(error);
      }
    };
    xhr.onerror = function () {
      for (const row of rows) row.label.textContent = "network error";
    };
    xhr.send(new FormData(form));
  }, true);
})();
