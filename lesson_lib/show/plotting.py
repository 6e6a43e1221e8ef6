"""Pictures with alt text: matplotlib figures (Chinese font) shown as themed SVG, and the one
heat-map renderer."""

import base64
import functools
import html as _html
import io
import math
import re
import sys
from pathlib import Path

import numpy as np

from lesson_lib.show.tables import html_table

CJK_FONT = "Noto Sans CJK SC"
# Noto Sans CJK Regular (OFL), from noto-cjk-sans-otc: one collection whose faces share every glyph
_FONT_FILE = "NotoSansCJK-Regular.ttc"
# matplotlib < 3.11 reads only a collection's first face (the Japanese one): the same glyphs, so
# figures on Python 3.10 still have every Chinese character.
_FIRST_FACE = "Noto Sans CJK JP"
MIN_FONT_PT = 8.5  # smallest text in a figure: 8.5 pt × 96/72 = 11.3 CSS px at 100 %


def font_path() -> Path:
    try:
        import noto_cjk_sans_otc
    except ImportError:
        raise RuntimeError(
            "缺少中文字体包 noto-cjk-sans-otc：图里的中文会显示成方框。"
            "请在课程环境里运行 pip install noto-cjk-sans-otc 后重启内核。"
        ) from None
    path = Path(noto_cjk_sans_otc.__file__).parent / _FONT_FILE
    if not path.is_file():
        raise RuntimeError(f"noto-cjk-sans-otc 里找不到字体文件 {_FONT_FILE}（查找位"
                           f"置 {path.parent}）：请重新安装 noto-cjk-sans-otc。")
    return path


def use_chinese_font() -> None:
    """Register Noto Sans CJK with matplotlib as the default sans-serif font."""
    import matplotlib as mpl
    from matplotlib import font_manager

    if (path := str(font_path())) not in {f.fname for f in font_manager.fontManager.ttflist}:
        font_manager.fontManager.addfont(path)
    # a 6-inch figure at 100 %: nothing under MIN_FONT_PT (11 px), ticks and legends included
    mpl.rcParams.update({"font.family": "sans-serif",
                         "font.sans-serif": [CJK_FONT, _FIRST_FACE, "DejaVu Sans"],
                         # the CJK font's minus sign renders; the Unicode one may not
                         "axes.unicode_minus": False,
                         "font.size": 10, "axes.titlesize": 10.5, "axes.labelsize": 10,
                         "xtick.labelsize": 9.5,
                         "ytick.labelsize": 9.5, "legend.fontsize": 9.5, "figure.titlesize": 11})


def _ems(text: str, latin: float = 0.55) -> float:
    return sum(1.0 if ord(ch) > 0x2E80 else latin for ch in text)


def wrap_title(title: str, width_inches: float, size: float) -> str:
    """Break a title into lines that fit ``width_inches`` at ``size`` pt, at a space or after
    Chinese punctuation where one is near, so a long title is wrapped instead of cut."""
    limit = width_inches * 72 / size
    lines = []  # ems per line
    for part in title.split("\n"):
        line = ""
        for ch in part:
            line += ch
            if _ems(line) > limit:
                cut = max(line.rfind(p) for p in " ，：；（、")
                cut = cut if cut > len(line) // 2 else len(line) - 1
                keep = line[:cut + 1] if line[cut] != "（" else line[:cut]
                lines.append(keep.rstrip())
                line = line[len(keep):].lstrip()
        lines.append(line)
    return "\n".join(lines)


def _svg_lines(text: str | None, width: int, px: float) -> list[str]:
    """``text`` wrapped to a ``width`` px SVG (4 px margins) at ``px`` px (pt = px × 0.75)."""
    return wrap_title(text, (width - 8) / 96, px * 0.75).split("\n") if text else []


@functools.cache
def colormap_lut() -> np.ndarray:  # (256, 3) uint8: viridis, the lesson's one colormap
    import matplotlib

    rgba = matplotlib.colormaps["viridis"](np.linspace(0.0, 1.0, 256))
    return np.round(rgba[:, :3] * 255).astype(np.uint8)


def _image(x, y, width, height, rgb, smooth=False) -> str:
    """(H, W, 3) uint8 as an SVG <image> (a PNG data URI), unsmoothed unless ``smooth``."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG", compress_level=1)
    href = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    pixelated = "" if smooth else ' style="image-rendering:pixelated"'
    return (f'<image x="{x}" y="{y}" width="{width}" height="{height}" '
            f'preserveAspectRatio="none"{pixelated} href="{href}"/>')


# A picture is HTML (a PNG has no alt and is a white slab on a dark page): its SVG in the theme's
# colours, named by its description, numbers folded under it. A sanitized (untrusted) page drops
# <svg> and <style> but keeps an <img> with a data URI: the same SVG bytes, on white.
_PICTURE_CSS = (
    "<style>.lesson-fig .lesson-vec{display:block!important}.lesson-fig .lesson-ras{display:"
    "none!important}"
    ".lesson-fig svg{max-width:100%;height:auto}"
    'body[data-jp-theme-light="false"] .lesson-fig{--lesson-tint:22%}</style>'
)


def describe(fig, alt: str, table=None):
    """Give ``fig`` the sentence a screen reader says and its numbers' (headers, rows)."""
    if not alt or not isinstance(alt, str):
        raise ValueError("每张图都要有一句说明图里是什么的文字（alt）。")
    from matplotlib.figure import Figure

    fig.lesson_alt = alt
    fig.lesson_table = table
    # In IPython (never imported here), described figures are shown by picture_html, not a PNG
    shell = (ipython := sys.modules.get("IPython")) and ipython.get_ipython()
    if shell and not getattr(shell, "_lesson_pictures", False):
        html, png = (shell.display_formatter.formatters[kind]
                     for kind in ("text/html", "image/png"))
        html.for_type(Figure, lambda fig: picture_html(fig) if hasattr(fig, "lesson_alt") else None)
        # a PNG beside the HTML would show every figure twice
        if inline_png := png.type_printers.get(Figure):
            png.for_type(Figure, lambda fig: None if hasattr(fig, "lesson_alt")
                         else inline_png(fig))
        shell._lesson_pictures = True
    return fig


def theme_colour(hex_colour: str, role: str = "fill", text: bool = False) -> str:
    """A figure colour as CSS that reads on the learner's theme (≥ 4.5:1 for text in light, dark,
    high contrast): coloured text mixed with the theme's text, grey text and lines the theme's
    text/border colours, white the page, pale fills mixed into it; mid greys, strong fills kept."""
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    light = (max(r, g, b) + min(r, g, b)) / 510
    grey = max(r, g, b) - min(r, g, b) < 12
    line = text or role == "stroke"
    if text and not grey:
        return f"color-mix(in srgb,{hex_colour} 55%,var(--jp-content-font-color1,#000))"
    if grey and light < 0.25:
        return "var(--jp-content-font-color1,#000)"
    # grey text and lines, arrow heads and other dark marks
    if grey and light < (0.6 if line else 0.4):
        return "var(--jp-content-font-color2,#555)"
    if line and grey:
        return "var(--jp-border-color1,#bdbdbd)" if light < 0.97 else "var(--jp-layout-color0,#fff)"
    if light > 0.84 and not line:  # white and pale boxes behind text
        if grey and light > 0.99:
            return "var(--jp-layout-color0,#fff)"
        return (f"color-mix(in srgb,{hex_colour} var(--lesson-tint,100%),var(--jp-layout-color0,"
                "#fff))")
    return hex_colour


def picture_html(fig) -> str:
    """The HTML of a ``fig`` given to ``describe``: its SVG (text as text, ``theme_colour``s, fixed
    ids) named by its alt text, the numbers folded, and an <img> copy for a sanitized page."""
    import matplotlib as mpl

    buf = io.StringIO()
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "lesson",
                         "svg.image_inline": True}):
        fig.savefig(buf, format="svg", transparent=True, metadata={"Date": None, "Creator": None})
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", buf.getvalue()[buf.getvalue().index("<svg"):],
                 flags=re.S)
    # each element's fill and stroke in the theme's colours; text told from shapes by its tag
    svg = re.sub(r'<(\w+)[^>]*?style="[^"]*"',
                 lambda tag: re.sub(r"(fill|stroke): (#[0-9a-fA-F]{6})\b",
                 lambda m: f"{m[1]}: {theme_colour(m[2], m[1], tag[1] == 'text')}", tag[0]), svg)
    # unset fills: text
    svg = svg.replace("<svg ", '<svg style="fill:var(--jp-content-font-color1,#000)" ', 1)
    return Picture(svg, fig.lesson_alt, fig.lesson_table)._repr_html_()


def folded_table(table, summary: str = "图中的数字（表格）") -> str:
    return f"<details><summary>{_html.escape(summary)}</summary>{html_table(*table)}</details>"


def sentence(text: str) -> str:
    return text if text.endswith(("。", "？", "！")) else text + "。"


def largest(row, names) -> str:
    """The two largest weights of ``row`` as 给「name」0.40，… (ties: the first name)."""
    return "，".join(f"给「{names[j]}」{row[j]:.2f}" for j in np.argsort(-row, kind="stable")[:2])


def heads_description(w, row_tokens, key_tokens, titles, title):
    """(alt, table) for a tiled heat map, from its numbers: up to 12 rows, each row's two largest
    weights, else each tile's three largest cells; the table gives each row's largest."""
    h, n, m = w.shape
    parts = []
    table = []
    for i in range(h):
        name = titles[i] or ""
        label = f"{name}：" if name else ""
        if n <= 12:
            cells = [f"「{row_tokens[r]}」{largest(w[i, r], key_tokens)}" for r in range(n)]
            parts.append(label + "；".join(cells))
        else:
            flat = np.argsort(-w[i].ravel(), kind="stable")[:3]
            cells = [f"「{row_tokens[f // m]}」给「{key_tokens[f % m]}」{w[i].ravel()[f]:.2f}"
                     for f in flat]
            parts.append(f"{label}最大的权重是 " + "，".join(cells))
        for r in range(n):
            k = int(np.argmax(w[i, r]))
            table.append([*([name] if h > 1 else []), row_tokens[r], key_tokens[k],
                          f"{w[i, r, k]:.2f}"])
    headers = [*(["头"] if h > 1 else []), "发出关注的词元（行）", "得到最多的词元（列）", "权重"]
    alt = (sentence(title)
           if title else "注意力热图（颜色越亮权重越大）。") + "。".join(parts) + "。"
    return alt, (headers, table)


class Picture(str):
    """A picture's HTML: its SVG named by ``alt`` (role="img", <title>), ``table`` folded under.
    The str is a widget's value; a notebook cell adds the SVG as an <img> a sanitized page keeps."""

    def __new__(cls, svg: str, alt: str, table=None):
        named = svg.replace("<svg ",
                            f'<svg role="img" aria-label="{_html.escape(alt, quote=True)}" ', 1)
        named = named.replace(">", f"><title>{_html.escape(alt)}</title>", 1)
        vector = (f'{_PICTURE_CSS}<div class="lesson-fig"><div class="lesson-vec" style="display:'
                  f'none">{named}</div>')
        folded = (folded_table(table) if table is not None else "") + "</div>"
        picture = super().__new__(cls, vector + folded)
        picture.svg = svg
        picture.lesson_alt = alt
        picture.lesson_table = table
        picture._parts = (vector, named, folded)
        return picture

    def _repr_html_(self) -> str:
        vector, named, folded = self._parts
        width = re.search(r'width="([\d.]+)(pt|px)?"', named)  # matplotlib's in pt, ours in px
        px = float(width[1]) * (4 / 3 if width[2] == "pt" else 1)
        data = base64.b64encode(named.encode("utf-8")).decode("ascii")
        alt = _html.escape(self.lesson_alt, quote=True)
        return (f'{vector}<img class="lesson-ras" alt="{alt}" width="{round(px)}" style="max-width:'
                f'100%;height:auto;background:#fff" src="data:image/svg+xml;base64,{data}">'
                f"{folded}")

    def __repr__(self) -> str:  # text/plain, what nbval compares: the description, not the drawing
        return f"<图：{self.lesson_alt}>"


def heat_map(weights, tokens=None, titles=None, suptitle: str | None = None, *, col_tokens=None,
             cols: int | None = None, cell_px: int | None = None, highlight_row: int | None = None,
             alt: str | None = None, table=None, height: int | None = None,
             box: tuple[int, int] | None = None,
             highlight_head: int | None = None, note: str | None = None) -> Picture:
    """The lesson's one heat map: (n, m) or (h, n, m) weights as themed SVG, for a notebook cell or
    a widget. Alt text and table from ``heads_description`` unless given (``table=False``: none);
    ``highlight_row`` (0-based), ``highlight_head`` (1-based) framed in red; ``box=(width,
    height)``: every head small, in exactly that size."""
    w = np.asarray(weights, dtype=float)
    w = w[None] if w.ndim == 2 else w  # (h, n, m)
    if w.ndim != 3:
        raise ValueError(f"注意力权重应是 (n, n) 或 (h, n, n) 数组，收到的形状是 {w.shape}。")
    h, n, m = w.shape
    keys = col_tokens if col_tokens is not None else tokens
    row_tokens = [str(t) for t in (tokens if tokens is not None else range(n))]
    key_tokens = [str(t) for t in (keys if keys is not None else range(m))]
    for given, count, axis in ((row_tokens, n, "行"), (key_tokens, m, "列")):
        if len(given) != count:
            raise ValueError(f"给了 {len(given)} 个词，但注意力图的{axis}数是 {count}："
                             "两者应相同。")
    if titles is not None and len(titles := list(titles)) != h:
        raise ValueError(f"titles 有 {len(titles)} 个，但有 {h} 个头：请给每个头一个标题。")
    small = box is not None
    numbered = h <= 16  # more heads: too small for token labels or numbers
    esc = _html.escape
    labels = []
    left = 3 if numbered else 25
    # Tiles near-square (in a box: as many columns as rows), at most 8 wide
    if small:
        cols = math.ceil(math.sqrt(h))
    elif not cols:
        cols = min(8, max(math.ceil(math.sqrt(h)), 4 if h > 4 else 1))
    rows = math.ceil(h / cols)
    # tiles numbered above (over 16: each row's first, at its left), cells as large as fits
    if small:
        (width, height) = box
        title_px = 13
        titles = [str(i + 1) if numbered else None for i in range(h)]
        caption = 15 if numbered else 0
        hgap = 6
        vgap = 6 + caption
        lines = _svg_lines(suptitle, width, title_px)
        top = 8 + (title_px + 5) * len(lines) + caption
        cell_px = max(1, min((width - left - (cols - 1) * hgap) // (cols * m),
                             (height - top - (rows - 1) * vgap) // (rows * n)))
    else:
        titles = titles or ([f"头 {i + 1}" for i in range(h)] if h > 1 else [None])
        title_px = 15
        if numbered:
            labels = row_tokens
            left = round(max(_ems(t, 0.6) * 13 for t in labels)) + 10
        down = round(max(_ems(t, 0.6) * 13 for t in key_tokens)) + 10 if labels else 6
        # a quarter of a map between maps: their titles sit in the gap
        gap = max(2, round(0.25 * n))
        if cell_px is None:  # as large as a 576 px picture allows, at most 28 px
            cell_px = int(max(2, min(28, (576 - left - 70) // (cols * m + (cols - 1) * gap))))
        if cell_px < 12:  # labels would be unreadably small: the alt text and table name them
            labels = []
            left = 8
            down = 6
        width = left + (cols * m + (cols - 1) * gap) * cell_px + 70
        lines = _svg_lines(suptitle, width, title_px)
        top = 8 + (title_px + 5) * len(lines) + (18 if h > 1 else 0)
        hgap = vgap = gap * cell_px
        if cols == 1 and h > 1:  # stacked: key labels under every map
            vgap = max(vgap, down + 24)
        grid_h = rows * n * cell_px + (rows - 1) * vgap
        height = max(top + grid_h + down, height or 0)
    frame = ('<rect x="{}" y="{}" width="{}" height="{}" style="fill:none;stroke:#d62728;'
             'stroke-width:2"/>')
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 '
           f'0 {width} {height}" style="fill:var(--jp-content-font-color1,#000);'
           'font-family:var(--jp-ui-font-family,sans-serif);font-size:13px">']
    out += [f'<text x="4" y="{title_px + 7 + (title_px + 5) * i}" style="font-size:'
            f'{title_px}px">{esc(line)}</text>'
            for i, line in enumerate(lines)]
    if small and h == 1:  # one head, no tiles: the note says what more heads would show
        out += [f'<text x="3" y="{top + 16 + 20 * i}">{esc(line)}</text>'
                for i, line in enumerate(_svg_lines(note, width, 13))]
    tile_w = m * cell_px
    tile_h = n * cell_px
    for i, title in enumerate(titles if not (small and h == 1) else []):
        r, c = divmod(i, cols)
        x0 = left + c * (tile_w + hgap)
        y0 = top + r * (tile_h + vgap)
        cells = colormap_lut()[np.clip(w[i] * 255 + 0.5, 0, 255).astype(np.intp)]
        out.append(_image(x0, y0, tile_w, tile_h, cells))
        if title:
            out.append(f'<text x="{x0}" y="{y0 - 4}" style="font-size:12px">{esc(title)}</text>')
        # too many heads to number each: the first of each row is named at the left
        elif small and c == 0:
            out.append(f'<text x="{x0 - 4}" y="{y0 + tile_h / 2}" text-anchor="end" '
                       f'dominant-baseline="central" style="font-size:11px">{i + 1}</text>')
        if labels and c == 0:
            out += [f'<text x="{x0 - 5}" y="{y0 + (j + 0.5) * cell_px}" text-anchor="end" '
                    f'dominant-baseline="central">{esc(t)}</text>' for j, t in enumerate(labels)]
        # under a map with no map below: one line each, never split, Chinese upright, Latin turned
        for j, t in enumerate(key_tokens if labels and (cols == 1 or i + cols >= h) else []):
            x = x0 + (j + 0.5) * cell_px
            y = y0 + tile_h + 4
            place = f'transform="translate({x},{y}) rotate(-90)" text-anchor="end"'
            if any(ord(ch) > 0x2E80 for ch in t):
                place = f'x="{x}" y="{y}" style="writing-mode:vertical-rl;text-orientation:upright"'
            out.append(f'<text {place} dominant-baseline="central">{esc(t)}</text>')
        if i + 1 == highlight_head:
            out.append(frame.format(x0 - 2, y0 - 2, tile_w + 4, tile_h + 4))
        if i == 0 and highlight_row is not None:
            row_y = y0 + highlight_row * cell_px
            out.append(frame.format(x0 - 1, row_y - 1, tile_w + 2, cell_px + 2))
    if small:
        return Picture("".join(out) + "</svg>", alt or "")
    bx = width - 56
    out.append(_image(bx, top, 12, grid_h, colormap_lut()[::-1][:, None, :], smooth=True))
    out += [f'<text x="{bx + 16}" y="{y}" style="font-size:12px">{t}</text>'
            for y, t in ((top + 10, "1"), (top + grid_h, "0"), (top + grid_h / 2, "权重"))]
    described, table_described = heads_description(w, row_tokens, key_tokens, titles, suptitle)
    table = table_described if table is None else table
    return Picture("".join(out) + "</svg>", alt or described, table or None)
