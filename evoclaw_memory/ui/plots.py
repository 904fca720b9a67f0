"""Bar charts drawn on the server as inline SVG (no script, no image request: the page's
Content-Security-Policy allows neither). Every label goes through markupsafe.escape."""

from __future__ import annotations

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 170
LEFT, BOTTOM, TOP = 36, 22, 10


def bar_chart(series: list[tuple[str, int]], title: str, colour: str = "#4a7bb7") -> Markup:
    """A bar per (label, count), a value scale on the left, every fourth label below."""
    peak = max((n for _, n in series), default=0)
    scale = max(peak, 1)
    span = (WIDTH - LEFT - 4) / max(len(series), 1)
    plot_h = HEIGHT - BOTTOM - TOP
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
             f'height="{HEIGHT}" role="img" aria-label="{escape(title)}">',
             f"<title>{escape(title)}</title>",
             f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - 2}" y2="{TOP + plot_h}" '
             'stroke="#888" stroke-width="1"/>',
             f'<text x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end" font-size="10">{peak}</text>',
             f'<text x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end" font-size="10">0</text>']
    for i, (label, n) in enumerate(series):
        h = plot_h * n / scale
        x = LEFT + i * span
        parts.append(f'<rect x="{x + 1:.1f}" y="{TOP + plot_h - h:.1f}" width="{max(span - 2, 1):.1f}" '
                     f'height="{h:.1f}" fill="{colour}"><title>{escape(label)}: {n}</title></rect>')
        if i % 4 == 0:
            parts.append(f'<text x="{x + span / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle" '
                         f'font-size="10">{escape(label)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
