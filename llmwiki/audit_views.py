"""The audit log page: every audited change of a project, newest first, filterable."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from llmwiki.access import Do, get_project_for
from llmwiki.models import AuditEvent, Project
from llmwiki.pagination import paginate

AUDIT_PER_PAGE = 50
# Before/after JSON longer than this is shown folded, so one big row does not swamp the page.
JSON_INLINE_CHARS = 160


class AuditFilterForm(forms.Form):
    action = forms.ChoiceField(required=False, label="Action")
    actor = forms.CharField(required=False, max_length=200, label="Actor contains")
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args: Any, prefixes: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["action"].choices = [("", "Any action"), *((p, f"{p}*") for p in prefixes)]


def action_prefixes(project: Project) -> list[str]:
    """The distinct "candidate." style prefixes present in the project's log (one query)."""
    actions = (
        AuditEvent.objects.filter(project=project)
        .order_by()  # the model's ordering would defeat DISTINCT
        .values_list("action", flat=True)
        .distinct()
    )
    return sorted({a.split(".", 1)[0] + "." for a in actions})


def compact_json(value: Any) -> str:
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


@require_GET
@vary_on_headers("HX-Request")
@login_required
def audit_log(request: HttpRequest, slug: str) -> HttpResponse:
    """Newest first, filterable; the results region re-renders alone for HTMX."""
    project = get_project_for(request.user, slug, Do.AUDIT)
    form = AuditFilterForm(request.GET, prefixes=action_prefixes(project))
    events = AuditEvent.objects.filter(project=project)
    form.is_valid()
    # Apply whichever filters are valid; a bad one is reported by the form, not fatal.
    f = getattr(form, "cleaned_data", {})
    if f.get("action"):
        events = events.filter(action__startswith=f["action"])
    if f.get("actor"):
        events = events.filter(actor__icontains=f["actor"])
    if f.get("since"):
        events = events.filter(at__date__gte=f["since"])
    if f.get("until"):
        events = events.filter(at__date__lte=f["until"])
    page, query = paginate(request, events.order_by("-at", "-id"), AUDIT_PER_PAGE)
    rows = [
        {"event": e, "before": compact_json(e.before), "after": compact_json(e.after)}
        for e in page.object_list
    ]
    filtered = any(v for k, v in request.GET.items() if k != "page")
    template = "llmwiki/audit_log.html#results" if request.htmx else "llmwiki/audit_log.html"
    return render(
        request,
        template,
        {
            "project": project,
            "nav": "audit",
            "form": form,
            "page": page,
            "rows": rows,
            "query": query,
            "filtered": filtered,
            "json_inline_chars": JSON_INLINE_CHARS,
        },
    )
