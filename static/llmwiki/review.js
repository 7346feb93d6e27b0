// Keyboard shortcuts. Queue: j/k move, Enter opens, / focuses the filters.
// Candidate page: Shift+<the action's key> presses its button (a capital letter, so a
// stray keystroke never decides anything); an action that needs a reason asks for it first.
(function () {
  "use strict";
  let index = -1;
  function rows() { return Array.from(document.querySelectorAll("tr.queue-row")); }
  function select(i) {
    const all = rows();
    if (!all.length) return;
    index = Math.max(0, Math.min(i, all.length - 1));
    all.forEach(function (r, n) { r.classList.toggle("selected", n === index); });
    all[index].querySelector("a").focus();
  }
  document.addEventListener("htmx:afterSwap", function () { index = -1; });
  document.addEventListener("keydown", function (e) {
    const tag = (e.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "j") { select(index + 1); e.preventDefault(); }
    else if (e.key === "k") { select(index - 1); e.preventDefault(); }
    else if (/^[A-Z]$/.test(e.key)) {
      // Each action's key comes from the server's registry (data-key); Shift+A presses
      // whichever approve button is showing, "Approve as edited" after an edit.
      const buttons = document.querySelectorAll('#review-form button[data-key="' + e.key + '"]');
      const button = Array.from(buttons).find(function (b) { return !b.hidden; });
      if (!button) return;
      e.preventDefault();
      const note = document.getElementById("id_note");
      if (button.hasAttribute("data-needs-note") && note && !note.value.trim()) {
        note.focus();
        note.placeholder = "Reason, then press the " + button.textContent + " button";
      } else {
        button.click();
      }
    }
    else if (e.key === "/") {
      const first = document.querySelector("#queue-filters select, #queue-filters input");
      if (first) { first.focus(); e.preventDefault(); }
    }
  });
})();

// Candidate page: once the claim text differs from the proposal there is one approve
// button, "Approve as edited", and a way back. Without JavaScript the server refuses a
// plain Approve of a changed text and shows the same two choices.
(function () {
  "use strict";
  const text = document.getElementById("id_edited_text");
  if (!text) return;
  const form = text.form;
  const plain = form.querySelector('button[data-action="approve"]');
  const edited = form.querySelector('button[data-action="approve-edit"]');
  const revert = form.querySelector('[data-action="revert-edit"]');
  function sync() {
    const changed = text.value.trim() !== text.dataset.original.trim();
    plain.hidden = changed;
    edited.hidden = !changed;
    revert.hidden = !changed;
  }
  text.addEventListener("input", sync);
  revert.addEventListener("click", function (e) {
    e.preventDefault();
    text.value = text.dataset.original;
    sync();
    text.focus();
  });
  sync();
})();
