// The lesson's one slider (ipywidgets' sliders leave their handle unnamed, ipywidgets#2650): a native range input
// with a <label for> holding the Chinese description, so a screen reader says 「头数 h，滑块，8」; Tab reaches it,
// arrow keys / Home / End move it, one change per key press or at the end of a drag. Shipped inline in the widget's
// state (no CDN), so JupyterLab and the static page run it offline.
function render({ model, el }) {
  // Unique on the page: each slider may run its own copy of this module, so no shared counter.
  const id = `lesson-slider-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  el.classList.add("lesson-slider");
  // Arrow keys belong to the slider, not to JupyterLab's notebook shortcuts (ArrowUp/Down would move between cells).
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  const label = document.createElement("label");
  const input = document.createElement("input");
  const out = document.createElement("output");
  label.htmlFor = out.htmlFor = input.id = id;
  input.type = "range"; input.min = "0"; input.step = "1";
  const text = (i) => (model.get("labels")[i] ?? "");
  const sync = () => {
    label.textContent = model.get("description");
    input.max = String(Math.max(0, model.get("labels").length - 1));
    input.value = String(model.get("index"));
    input.disabled = model.get("disabled");
    out.textContent = text(model.get("index"));
    input.setAttribute("aria-valuetext", out.textContent);
  };
  input.addEventListener("input", () => { out.textContent = text(Number(input.value)); });
  input.addEventListener("change", () => { model.set("index", Number(input.value)); model.save_changes(); });
  // The keys move the slider here: JupyterLab's output area cancels a range input's own arrow-key step (measured
  // in JupyterLab 4.6: keydown reaches the input, its value does not change).
  const steps = { ArrowRight: 1, ArrowUp: 1, PageUp: 1, ArrowLeft: -1, ArrowDown: -1, PageDown: -1 };
  input.addEventListener("keydown", (event) => {
    const last = model.get("labels").length - 1;
    let i = Number(input.value);
    if (event.key === "Home") i = 0;
    else if (event.key === "End") i = last;
    else if (event.key in steps) i = Math.min(last, Math.max(0, i + steps[event.key]));
    else return;
    event.preventDefault();
    event.stopPropagation();
    if (input.disabled || i === Number(input.value)) return;
    input.value = String(i);
    input.dispatchEvent(new Event("input"));
    input.dispatchEvent(new Event("change"));
  });
  for (const name of ["description", "labels", "index", "disabled"]) model.on(`change:${name}`, sync);
  el.append(label, input, out);
  sync();
  return () => {
    for (const name of ["description", "labels", "index", "disabled"]) model.off(`change:${name}`, sync);
  };
}
export default { render };
