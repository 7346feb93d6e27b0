"""Template side of the clearance rule in `llmwiki.access`: show a text or say it is withheld."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString

from llmwiki import access
from llmwiki.models import Project

register = template.Library()


@register.simple_tag
def shown(item: Any, project: Project, text: Any) -> SafeString:
    """`text` (escaped unless already safe) when the caller may read `item`, else the note."""
    why = access.withheld(project, item)
    if why:
        return format_html('<span class="withheld" data-testid="withheld">{}</span>', why)
    return conditional_escape(text)


@register.filter
def withheld(item: Any, project: Project) -> str:
    """Why the caller may not read `item`'s text ("" when they may)."""
    return access.withheld(project, item)
