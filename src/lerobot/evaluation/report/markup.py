"""Build well-formed HTML and SVG by composition: text is escaped unless it is already markup.

`el` returns `Markup`; any child that is not `Markup` is text and gets escaped, so user data
(task names, descriptions, paths, failure reasons) can never inject markup into a report.
Attribute values are always escaped.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any


class Markup(str):
    """A string that is already HTML: `el` inserts it as it is."""

    def join(self, parts: Iterable[Any]) -> Markup:  # type: ignore[override]
        return Markup(str.join(self, (as_markup(p) for p in parts)))


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def as_markup(value: Any) -> Markup:
    """Markup as it is; anything else as escaped text."""
    return value if isinstance(value, Markup) else Markup(esc(value))


def raw(text: str) -> Markup:
    """Trusted literal markup written in this code (never user data)."""
    return Markup(text)


def concat(*parts: Any) -> Markup:
    """Several children side by side, without an enclosing element."""
    return Markup("").join(parts)


def el(tag: str, *children: Any, **attrs: Any) -> Markup:
    """`<tag attrs>children</tag>`: text children escaped, Markup children inserted as they are.

    A trailing underscore is dropped from attribute names (`class_`), and underscores inside
    them become dashes (`text_anchor` -> `text-anchor`), so SVG attributes read naturally.
    Attributes whose value is None are left out.
    """
    rendered = "".join(
        f' {name.rstrip("_").replace("_", "-")}="{esc(value)}"'
        for name, value in attrs.items()
        if value is not None
    )
    return Markup(f"<{tag}{rendered}>{concat(*children)}</{tag}>")


def svg(*children: Any, width: float, height: float, class_: str = "chart") -> Markup:
    """An inline SVG chart of `width` x `height` user units, drawn at that size: the attributes
    every chart of the pages shares (namespace, viewBox, role for screen readers)."""
    return el(
        "svg",
        *children,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {width} {height}",
        width=str(width),
        height=str(height),
        role="img",
        class_=class_,
    )
