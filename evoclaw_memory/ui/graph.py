"""The entity graph drawn on the server as inline SVG: the owner in the middle, the most
mentioned people and things on a ring around, a line for each relation between them. Each
node links to that entity's page; every name goes through markupsafe.escape and every link
is built by urllib's quote (a name is hostile text like any other)."""

from __future__ import annotations

import math
from urllib.parse import quote

from markupsafe import Markup, escape

SIZE = 560
RING = 220
OWNER = "owner"
KIND_COLOURS = {"people": "#c0504d", "projects": "#4a7bb7", "tools": "#9bbb59",
                "concepts": "#8064a2", "places": "#f79646", "other": "#7f7f7f"}


def entity_graph(entities: list, most: int = 30) -> Markup:
    """SVG of `entities` (the `most` most mentioned; models.Entity) and their relations."""
    # An entity named "owner" is the owner: drawn in the middle, not on the ring.
    shown = [e for e in entities if e.name.lower() != OWNER][:most]
    centre = SIZE / 2
    where: dict[str, tuple[float, float]] = {OWNER: (centre, centre)}
    for i, e in enumerate(shown):
        angle = 2 * math.pi * i / max(len(shown), 1) - math.pi / 2
        where[e.name.lower()] = (centre + RING * math.cos(angle), centre + RING * math.sin(angle))
    for e in shown:
        for alias in e.aliases:
            where.setdefault(alias.lower(), where[e.name.lower()])
    lines, nodes = [], []
    drawn: set[frozenset] = set()
    for e in shown:
        x1, y1 = where[e.name.lower()]
        for rel in e.relations:
            other = where.get(rel.other.lower())
            pair = frozenset((e.name.lower(), rel.other.lower()))
            if other is None or pair in drawn:      # one line per pair (A of B, B of A)
                continue
            drawn.add(pair)
            x2, y2 = other
            lines.append(f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" '
                         'stroke="#aaa" stroke-width="1.5"/>')
            lines.append(f'<text x="{(x1 + x2) / 2:.0f}" y="{(y1 + y2) / 2:.0f}" font-size="10" '
                         f'fill="#555" text-anchor="middle">{escape(rel.relation)}</text>')
    nodes.append(f'<circle cx="{centre:.0f}" cy="{centre:.0f}" r="16" fill="#333"/>'
                 f'<text x="{centre:.0f}" y="{centre + 30:.0f}" font-size="12" '
                 'text-anchor="middle">owner</text>')
    for e in shown:
        x, y = where[e.name.lower()]
        r = 6 + min(12, 2 * math.sqrt(max(e.mentions, 0)))
        colour = KIND_COLOURS.get(e.kind, KIND_COLOURS["other"])
        href = "/entities?name=" + quote(e.name, safe="")
        nodes.append(f'<a href="{escape(href)}"><circle cx="{x:.0f}" cy="{y:.0f}" r="{r:.0f}" '
                     f'fill="{colour}"><title>{escape(e.name)} ({escape(e.kind)}): '
                     f'{e.mentions} mention(s)</title></circle>'
                     f'<text x="{x:.0f}" y="{y + r + 12:.0f}" font-size="11" '
                     f'text-anchor="middle">{escape(e.name)}</text></a>')
    return Markup(f'<svg class="graph" viewBox="0 0 {SIZE} {SIZE}" width="{SIZE}" '
                  f'height="{SIZE}" role="img" aria-label="people and things">'
                  + "".join(lines) + "".join(nodes) + "</svg>")
