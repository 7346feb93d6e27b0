"""Template filters for how flags and quoted evidence are marked up, decided once."""

from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from llmwiki.render import render_inline, render_markdown

register = template.Library()

# Risk and secret flags mean "do not trust or spread this"; any other flag (pii:…) is a caution.
_BAD_FLAG_PREFIXES = ("risk:", "secret:")


@register.filter
def flag_class(flag: str) -> str:
    """The badge class for a flag: `bad` for risk and secret flags, `warn` for the rest."""
    return "bad" if str(flag).startswith(_BAD_FLAG_PREFIXES) else "warn"


@register.filter
def highlight(content: str, needle: str) -> SafeString:
    """Escape `content`, marking where `needle` (or its first six words) appears."""
    content, needle = str(content), str(needle or "")
    for probe in (needle.strip(), " ".join(needle.split()[:6])):
        if probe and probe in content:
            start = content.index(probe)
            end = start + len(probe)
            return mark_safe(  # noqa: S308 - every piece is escaped
                escape(content[:start])
                + "<mark>"
                + escape(content[start:end])
                + "</mark>"
                + escape(content[end:])
            )
    return escape(content)


@register.filter
def markdown(text: str) -> SafeString:
    """A candidate's text as sanitised HTML: its Markdown rendered, anything unsafe removed."""
    return mark_safe(render_markdown(str(text)))  # noqa: S308 - nh3 sanitises the output


@register.filter
def markdown_inline(text: str) -> SafeString:
    """The same for one line shown inside a link or a table cell: inline elements only."""
    return mark_safe(render_inline(str(text)))  # noqa: S308 - nh3 sanitises the output
