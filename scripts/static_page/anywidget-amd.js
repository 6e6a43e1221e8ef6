// anywidget for the static page (scripts/build_static.py). The page's widget manager (@jupyter-widgets/html-manager)
// loads a widget's module with requirejs and, failing that, from a public CDN; this named module answers first, so
// the lesson's sliders render from their saved state with no request leaving the page's folder. Each widget's own
// ESM and CSS are in that saved state (anywidget keeps them there): the view imports the ESM from a blob: URL and
// calls its render({model, el}), the contract anywidget documents. Saved state only: no kernel answers.
define("anywidget", ["@jupyter-widgets/base"], function (base) {
  "use strict";
  const styled = new Set();

  class AnyModel extends base.DOMWidgetModel {}

  class AnyView extends base.DOMWidgetView {
    render() {
      const css = this.model.get("_css");
      if (css && !styled.has(css)) {
        styled.add(css);
        const style = document.createElement("style");
        style.textContent = css;
        document.head.appendChild(style);
      }
      const url = URL.createObjectURL(new Blob([this.model.get("_esm")], { type: "text/javascript" }));
      this.loaded = import(url).then((mod) => {
        URL.revokeObjectURL(url);
        const widget = mod.default || mod;
        const render = typeof widget === "function" ? widget().render : widget.render;
        return render({ model: this.model, el: this.el });
      });
    }
  }

  return { AnyModel, AnyView };
});
