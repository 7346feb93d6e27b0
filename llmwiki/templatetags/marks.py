"""Template filters for how flags, codes and quoted evidence are marked up, decided once."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from llmwiki import labels
from llmwiki.render import INVISIBLE_CHARS, INVISIBLE_CLASS

register = template.Library()

# Pages show words for stored codes; `llmwiki.labels` holds the one table.
register.filter("label", labels.label)
register.filter("labels_in", labels.labels_in)

# Risk and secret flags mean "do not trust or spread this"; any other flag (pii:…) is a caution.
_BAD_FLAG_PREFIXES = ("risk:", "secret:")


@register.filter
def flag_class(flag: str) -> str:
    """The badge class for a flag: `bad` for risk and secret flags, `warn` for the rest."""
    return "bad" if str(flag).startswith(_BAD_FLAG_PREFIXES) else "warn"


@register.simple_tag
def flag_badge(flag: str) -> SafeString:
    """A flag as a badge in words; the code stays in the title, as the episode filter takes it."""
    return format_html(
        '<span class="badge {}" title="{}">{}</span>', flag_class(flag), flag, labels.label(flag)
    )


_INVISIBLE = re.compile(f"[{INVISIBLE_CHARS}]")


def _code_point(m: re.Match[str]) -> str:
    return f"⟨U+{ord(m.group()):04X}⟩"


@register.filter
def filename(name: object) -> SafeString:
    """A file name as sent, safe to show: isolated from the text around it (<bdi>), its
    bidi and invisible characters shown as code points (an RLO cannot reorder it), and the
    whole name in the title, since a long one wraps (class `filename` in app.css)."""
    name = str(name)
    shown = _INVISIBLE.sub(
        lambda m: f'<span class="{INVISIBLE_CLASS}">{_code_point(m)}</span>', escape(name)
    )
    return format_html(
        '<bdi class="filename" title="{}">{}</bdi>',
        _INVISIBLE.sub(_code_point, name),
        mark_safe(shown),  # noqa: S308 - escaped above; only the markers are markup
    )


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
