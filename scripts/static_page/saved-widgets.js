/* The static page's saved widgets (scripts/build_static.py): they show the state stored with the notebook and no
 * kernel answers them, so every control in them is made inert as the widget manager renders it (a slider that
 * moved would leave its summary stale). Folds and links inside a widget's output stay usable. */
(function () {
  "use strict";
  var CONTROLS = "input, button, select, textarea, [role=slider], [contenteditable]";
  function freeze(root) {
    Array.prototype.forEach.call(root.querySelectorAll(CONTROLS), function (el) {
      if (!el.closest("summary")) el.inert = true;
    });
  }
  function watch() {
    Array.prototype.forEach.call(document.querySelectorAll(".lesson-saved-widget"), function (box) {
      freeze(box);
      new MutationObserver(function () { freeze(box); }).observe(box, {childList: true, subtree: true});
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
