"""Chinese-ready matplotlib figures: font registration and the attention heat map.

matplotlib's default font has no Chinese glyphs, so titles show as boxes. ``use_chinese_font()``
registers Noto Sans CJK SC, shipped by the ``mplfonts`` package (so no system font and no download
is needed). Every drawing function here calls it first. matplotlib itself is imported only inside
the functions, so ``import lesson_lib.plotting`` stays cheap.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

__all__ = ["use_chinese_font", "tile_heads", "grid_shape", "plot_heads", "figure_png", "CJK_FONT"]

CJK_FONT = "Noto Sans CJK SC"
_FONT_FILE = "NotoSansCJKsc-Regular.otf"
_registered = False


def _font_path() -> Path:
    try:
        import mplfonts
    except ImportError:
        raise RuntimeError(
            "缺少中文字体包 mplfonts：图里的中文会显示成方框。请在课程环境里运行 pip install mplfonts 后重启内核。"
        ) from None
    path = Path(mplfonts.__file__).parent / "fonts" / _FONT_FILE
    if not path.exists():
        raise RuntimeError(f"mplfonts 里找不到字体文件 {_FONT_FILE}（查找位置 {path.parent}）：请重新安装 mplfonts。")
    return path


def use_chinese_font() -> str:
    """Register Noto Sans CJK SC with matplotlib (once) and make it the default sans-serif font."""
    global _registered
    import matplotlib as mpl
    from matplotlib import font_manager

    if not _registered:
        font_manager.fontManager.addfont(str(_font_path()))
        _registered = True
    mpl.rcParams["font.family"] = "sans-serif"
    mpl.rcParams["font.sans-serif"] = [CJK_FONT, "DejaVu Sans"]
    mpl.rcParams["axes.unicode_minus"] = False  # the CJK font's minus sign renders; the Unicode one may not
    return CJK_FONT


# ---------------------------------------------------------------------------------------------
# Tiling many heads into one image: one imshow redraws far faster than 64 subplots
# ---------------------------------------------------------------------------------------------


def grid_shape(h: int, max_cols: int = 8) -> tuple[int, int]:
    """(rows, cols) for h tiles: near-square, at most ``max_cols`` wide."""
    cols = min(h, max_cols, max(1, math.ceil(math.sqrt(h))))
    if h > 4:
        cols = min(max_cols, max(cols, 4))
    return math.ceil(h / cols), cols


def tile_heads(weights, cols: int | None = None, gap: int = 1):
    """Lay (h, n, m) maps out on a grid, NaN between tiles.

    Returns ``(image, origins)``: image of shape (rows·n + (rows-1)·gap, cols·m + (cols-1)·gap)
    and the (row, col) pixel origin of each head's tile.
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim == 2:
        w = w[None]  # (1, n, m)
    if w.ndim != 3:
        raise ValueError(f"注意力权重应是 (n, n) 或 (h, n, n) 数组，收到的形状是 {w.shape}。")
    h, n, m = w.shape
    rows, cols = grid_shape(h) if cols is None else (math.ceil(h / cols), cols)
    image = np.full((rows * n + (rows - 1) * gap, cols * m + (cols - 1) * gap), np.nan)
    origins = []
    for i in range(h):
        r, c = divmod(i, cols)
        top, left = r * (n + gap), c * (m + gap)
        image[top : top + n, left : left + m] = w[i]  # (n, m) head i's map
        origins.append((top, left))
    return image, origins


def plot_heads(
    weights,
    tokens=None,
    titles=None,
    ax=None,
    cmap: str = "viridis",
    vmax: float | None = 1.0,
    suptitle: str | None = None,
    col_tokens=None,
    tile_inches: float | None = None,
):
    """Draw one attention map (n, m) or many heads (h, n, m) as a single tiled image.

    ``tokens`` label the query rows (and the key columns unless ``col_tokens`` is given). Token
    labels go left of the first column and under the bottom row of tiles, and are dropped when the
    tiles get too small to read; each tile gets its title (default "头 i") above it.
    Returns the matplotlib Figure (sized so nothing is cut off without ``bbox_inches="tight"``).
    """
    import matplotlib.pyplot as plt

    use_chinese_font()
    w = np.asarray(weights, dtype=float)
    w = w[None] if w.ndim == 2 else w
    if w.ndim != 3:
        raise ValueError(f"注意力权重应是 (n, n) 或 (h, n, n) 数组，收到的形状是 {w.shape}。")
    h, n, m = w.shape
    gap = 1 if h == 1 else max(2, round(0.25 * n))  # blank cells between tiles; titles sit in them
    image, origins = tile_heads(w, gap=gap)
    row_tokens = _labels(tokens, n, "行")
    key_tokens = _labels(col_tokens if col_tokens is not None else tokens, m, "列")
    if titles is None:
        titles = [f"头 {i + 1}" for i in range(h)] if h > 1 else [None]
    if len(titles) != h:
        raise ValueError(f"titles 有 {len(titles)} 个，但有 {h} 个头：请给每个头一个标题。")

    cell = (tile_inches or _tile_inches(h, max(n, m))) / max(n, m)  # inches per matrix cell
    fontsize = _label_fontsize(cell, h)
    if ax is None:
        fig, ax, cax = _sized_figure(image.shape, gap, cell, fontsize, row_tokens, key_tokens, h, suptitle)
    else:
        fig, cax = ax.figure, None
    cm = plt.get_cmap(cmap).with_extremes(bad="white")  # NaN = the separators between tiles
    im = ax.imshow(image, cmap=cm, vmin=0.0, vmax=vmax, interpolation="nearest", aspect="equal")
    ax.set_axis_off()
    ax.set_xlim(-0.5, image.shape[1] - 0.5)
    ax.set_ylim(image.shape[0] - 0.5, -gap - 0.5)  # room above the top row for its titles
    if fontsize:
        _token_labels(ax, origins, row_tokens, key_tokens, fontsize)
    title_size = 9 if h <= 16 else 7
    for (top, left), title in zip(origins, titles):
        if title:
            ax.text(left - 0.5, top - 0.7, title, fontsize=title_size, va="bottom", ha="left")
    if h == 1 and fontsize:
        ax.set_axis_on()
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.set_xlabel("被关注的词（键）", fontsize=9, labelpad=(_label_extent(key_tokens, fontsize) + cell) * 72)
        ax.set_ylabel("发出关注的词（查询）", fontsize=9, labelpad=(_label_extent(row_tokens, fontsize) + cell) * 72)
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    if cax is not None:
        fig.colorbar(im, cax=cax, label="注意力权重")
    else:
        fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02, label="注意力权重")
    return fig


def _sized_figure(shape, gap, cell, fontsize, row_tokens, key_tokens, h, suptitle):
    """A figure whose axes hold the tiled image at ``cell`` inches per cell, margins fitted to labels."""
    import matplotlib.pyplot as plt

    grid_w, grid_h = shape[1] * cell, (shape[0] + gap) * cell
    axis_titles = 0.3 if (h == 1 and fontsize) else 0.0
    left = 0.15 + axis_titles + (_label_extent(row_tokens, fontsize) if fontsize else 0.0)
    bottom = 0.15 + axis_titles + (_label_extent(key_tokens, fontsize) if fontsize else 0.0)
    top = 0.45 if suptitle else 0.12
    right = 0.95  # colour bar and its label
    width, height = left + grid_w + right, bottom + grid_h + top
    fig = plt.figure(figsize=(width, height), dpi=100)
    ax = fig.add_axes((left / width, bottom / height, grid_w / width, grid_h / height))
    cax = fig.add_axes(((left + grid_w + 0.15) / width, bottom / height, 0.12 / width, grid_h / height))
    return fig, ax, cax


def _label_extent(tokens, fontsize):
    """Inches the longest label needs (CJK glyphs are about one em wide, Latin about half)."""
    if not fontsize:
        return 0.0
    ems = max(sum(1.0 if ord(ch) > 0x2E80 else 0.55 for ch in t) for t in tokens)
    return ems * fontsize / 72 + 0.05


def figure_png(fig, dpi: int = 80) -> bytes:
    """Render a figure to PNG bytes and close it (widgets show the bytes in an Image)."""
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _labels(tokens, count, axis_name):
    if tokens is None:
        return [str(i) for i in range(count)]
    tokens = [str(t) for t in tokens]
    if len(tokens) != count:
        raise ValueError(f"给了 {len(tokens)} 个词，但注意力图的{axis_name}数是 {count}：两者应相同。")
    return tokens


def _token_labels(ax, origins, row_tokens, key_tokens, fontsize):
    """Token names left of the first column of tiles and under the bottom row.

    Plain Text artists, not axis ticks: a tick builds lines and texts it never shows, and with
    hundreds of labels that is most of a redraw.
    """
    n = len(row_tokens)
    bottom = max(top for top, _ in origins)
    for top, left in origins:
        if left == 0:
            for j, token in enumerate(row_tokens):
                ax.text(-0.8, top + j, token, fontsize=fontsize, ha="right", va="center")
        if top == bottom:
            for j, token in enumerate(key_tokens):
                ax.text(left + j, top + n - 0.2, token, fontsize=fontsize, ha="center", va="top",
                        rotation=90)


def _tile_inches(h, n):
    """Tile side in inches: big enough for labels when few heads, small when many."""
    if h == 1:
        return min(7.0, max(2.6, 0.3 * n))
    if h <= 4:
        return min(4.0, max(2.0, 0.22 * n))
    if h <= 16:
        return min(2.6, max(1.6, 0.15 * n))
    return 0.95


def _label_fontsize(cell, h):
    """Token labels only when a matrix row is tall enough to read them (≥ 5 pt)."""
    if h > 16:
        return 0
    size = min(9.0, 0.8 * cell * 72)
    return size if size >= 5 else 0
