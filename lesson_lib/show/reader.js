// The reader helper ``controls.accessible(box)`` appends to a box: what ipywidgets 8 leaves out for a screen reader
// and the keyboard, fixed in the box's DOM (again whenever ipywidgets redraws part of it):
// role=radiogroup named by the description and one shared `name` for its radios (unnamed, the browser's arrow keys
// walked into the next question's radios and ticked them; named, a group is one Tab stop), aria-pressed on toggle
// buttons, aria-live="polite" on outputs marked LIVE, a KEEP_HEIGHT output's tallest height as its min-height, and
// keys kept inside the control (data-lm-suppress-shortcuts: Lumino stops looking for a shortcut there; ArrowDown on
// a radio would select the next cell). A click on the box's primary button (a quiz's 提交) first sends what its
// text boxes show (ipywidgets holds a box's own value update while the page is busy, a click it sends at once, and
// the kernel reads its messages in order: the click checks exactly what was typed); Enter in a text box clicks it,
// so leaving a box never counts an attempt. On the static page (no kernel:
// scripts/build_static.py's note is on the page) every control is disabled.
const KEYS = new Set(["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End", "PageUp", "PageDown"]);
const STATIC_TITLE = "静态页面：在 JupyterLab 里运行笔记本后才能操作";
const PRIMARY = "button.widget-button.mod-primary";
const named = (el, name) => { if (name && el.getAttribute("aria-label") !== name) el.setAttribute("aria-label", name); };
function fix(root) {
  // a question's groups and its primary button (提交) say which question: its id (the box's class
  // lesson-quiz-<id>) and its prompt's start
  const prompt = root.querySelector(".lesson-quiz-prompt");
  const id = [...root.classList].map((c) => c.match(/^lesson-quiz-(.+)$/)).find(Boolean)?.[1] || "";
  const text = prompt ? prompt.textContent.trim() : "";
  // a prompt starts with its id (S6　…) but the interview's (面试官问…): the id is said once
  const start = `${text.slice(0, 24)}${text.length > 24 ? "…" : ""}`;
  const question = !prompt ? "" : text.startsWith(id) ? start : `${id}（${start}）`;
  for (const group of root.querySelectorAll(".widget-radio-box")) {
    group.setAttribute("role", "radiogroup");
    const label = group.parentElement && group.parentElement.querySelector(":scope > .widget-label");
    const name = [question, label ? label.textContent.trim() : ""].join(" ").trim();
    named(group, name);
    // random, not a counter: each widget view may load its own copy of this module
    group.dataset.lessonGroup ||= `lesson-radio-${Math.random().toString(36).slice(2)}`;
    for (const radio of group.querySelectorAll("input[type=radio]"))
      if (radio.name !== group.dataset.lessonGroup) radio.name = group.dataset.lessonGroup;
  }
  for (const group of root.querySelectorAll(".lesson-choices")) {  // a multiple choice's boxes
    group.setAttribute("role", "group");
    named(group, question);
  }
  const submit = prompt && root.querySelector(PRIMARY);
  if (submit) named(submit, `${submit.textContent.trim()} ${id}`);
  // an option's text names its radio or box and is hidden itself: read once, not twice
  for (const input of root.querySelectorAll(".widget-radio-box input, .widget-checkbox input")) {
    const label = input.closest("label");
    if (!label) continue;
    for (const node of [...label.childNodes])  // a radio's text is a bare text node: wrapped to be hidden
      if (node.nodeType === Node.TEXT_NODE && node.textContent.trim())
        node.replaceWith(Object.assign(document.createElement("span"), { textContent: node.textContent }));
    named(input, label.textContent.trim());
    for (const child of label.children) if (child !== input) child.setAttribute("aria-hidden", "true");
  }
  for (const group of root.querySelectorAll(".widget-toggle-buttons")) {
    const label = group.querySelector(":scope > .widget-label");
    const first = group.querySelector(".widget-toggle-button"), buttons = first && first.parentElement;
    if (buttons && label && label.textContent.trim()) {
      buttons.setAttribute("role", "group");
      buttons.setAttribute("aria-label", label.textContent.trim());
    }
  }
  for (const b of root.querySelectorAll("button.widget-toggle-button")) {
    const pressed = String(b.classList.contains("mod-active"));
    if (b.getAttribute("aria-pressed") !== pressed) b.setAttribute("aria-pressed", pressed);
  }
  for (const el of root.querySelectorAll("input[type=radio], input[type=checkbox], select, .widget-radio-box"))
    el.setAttribute("data-lm-suppress-shortcuts", "true");
  for (const el of root.querySelectorAll(".lesson-live")) {
    if (el.getAttribute("aria-live") !== "polite") el.setAttribute("aria-live", "polite");
    el.setAttribute("aria-atomic", "true");
  }
  for (const el of root.querySelectorAll(".lesson-keep-height")) {  // what a control redraws never shrinks back
    if (el.dataset.lessonKept) continue;
    el.dataset.lessonKept = "0";
    new ResizeObserver(() => {
      // at a new width (a resized window, the file browser opened) the tallest height seen is measured afresh:
      // a height kept from a narrower moment would leave a blank gap under the text for good
      const w = Math.round(el.getBoundingClientRect().width);
      if (!w) return;
      // the height the lesson reserved itself (a widget's layout.min_height) is never given up
      if (el.dataset.lessonBase === undefined) el.dataset.lessonBase = el.style.minHeight;
      if (String(w) !== el.dataset.lessonKeptWidth) {
        el.dataset.lessonKeptWidth = String(w);
        el.dataset.lessonKept = "0";
        el.style.minHeight = el.dataset.lessonBase;
      }
      const h = Math.ceil(el.getBoundingClientRect().height);
      if (h > Number(el.dataset.lessonKept)) { el.dataset.lessonKept = String(h); el.style.minHeight = `${h}px`; }
    }).observe(el);
  }
  if (document.querySelector(".lesson-static-note"))
    for (const c of root.querySelectorAll("input, textarea, select, button")) {
      if (!c.disabled) c.disabled = true;
      c.title = STATIC_TITLE;
    }
}
function render({ model, el }) {
  let root = null, tries = 0, observer = null, queued = false;
  const keep = (event) => {  // arrow keys act inside a control, never on the notebook's cells
    if (KEYS.has(event.key) && event.target.closest("input, textarea, select, [role=radiogroup]"))
      event.stopPropagation();
  };
  const send = (event) => {  // capture: before the button's own click message
    if (event.target.closest(PRIMARY))
      model.send({ texts: [...root.querySelectorAll("input[type=text], textarea")].map((t) => t.value) });
  };
  const enter = (event) => {  // capture: ipywidgets' text box stops its keys from bubbling
    // an Enter that ends an IME composition picks the characters: isComposing, or key code 229 in Safari
    if (event.key !== "Enter" || event.isComposing || event.keyCode === 229) return;
    if (!event.target.matches("input[type=text]")) return;
    const submit = root.querySelector(PRIMARY);
    if (submit) submit.click();
  };
  const apply = () => { queued = false; if (root) fix(root); };
  const attach = () => {  // the helper's view is put into its box after it renders
    root = el.closest(".lesson-reader");
    if (!root) { if (tries++ < 400) setTimeout(attach, 25); return; }
    root.addEventListener("keydown", keep);
    root.addEventListener("keydown", enter, true);
    root.addEventListener("click", send, true);
    apply();
    observer = new MutationObserver(() => { if (!queued) { queued = true; queueMicrotask(apply); } });
    observer.observe(root, { subtree: true, childList: true, attributes: true, attributeFilter: ["class"] });
  };
  attach();
  return () => {
    if (observer) observer.disconnect();
    if (root) root.removeEventListener("keydown", keep);
    if (root) root.removeEventListener("keydown", enter, true);
    if (root) root.removeEventListener("click", send, true);
  };
}
export default { render };
