// Per-file progress for the import form: send each file in its own request and show a
// progress bar per file. Without JavaScript the form posts all files at once.
(function () {
  "use strict";
  const form = document.getElementById("upload-form");
  if (!form || !window.XMLHttpRequest) return;
  const input = form.querySelector('input[type="file"]');
  const list = document.getElementById("upload-progress");
  const token = form.querySelector('input[name="csrfmiddlewaretoken"]').value;

  function sendOne(file, row) {
    return new Promise(function (resolve) {
      const xhr = new XMLHttpRequest();
      const data = new FormData();
      data.append("files", file, file.name);
      xhr.open("POST", form.dataset.perFileUrl);
      xhr.setRequestHeader("X-CSRFToken", token);
      xhr.setRequestHeader("HX-Request", "true");
      xhr.upload.onprogress = function (e) {
        if (e.lengthComputable) row.bar.value = Math.round((100 * e.loaded) / e.total);
      };
      xhr.onload = function () {
        row.bar.value = 100;
        row.label.textContent = xhr.status === 200 ? "done" : "failed (" + xhr.status + ")";
        resolve(xhr.status === 200 ? xhr.responseText : "");
      };
      xhr.onerror = function () {
        row.label.textContent = "network error";
        resolve("");
      };
      xhr.send(data);
    });
  }

  form.addEventListener("submit", async function (event) {
    if (!input.files.length || input.files.length < 2) return; // one file: let htmx post it
    event.preventDefault();
    event.stopImmediatePropagation();
    list.replaceChildren();
    const rows = Array.from(input.files).map(function (file) {
      const li = document.createElement("li");
      const name = document.createElement("span");
      const bar = document.createElement("progress");
      const label = document.createElement("span");
      name.textContent = file.name + " ";
      bar.max = 100;
      bar.value = 0;
      label.className = "muted";
      label.textContent = "waiting";
      li.append(name, bar, label);
      list.append(li);
      return { file: file, bar: bar, label: label };
    });
    const results = document.getElementById("upload-results");
    const merged = document.createElement("section");
    merged.id = "upload-results";
    for (const row of rows) {
      row.label.textContent = "uploading";
      const html = await sendOne(row.file, row);
      const doc = new DOMParser().parseFromString(html, "text/html");
      const part = doc.getElementById("upload-results");
      if (part) merged.append(...part.children);
    }
    document.getElementById("upload-results").replaceWith(merged);
  }, true);
})();
