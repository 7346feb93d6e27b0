"""Governance pages: the audit log (reviewers and above) and erasing a source (maintainers)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from llmwiki.access import Do, get_project_for
from llmwiki.erasure import erasure_scope, source_erase
from llmwiki.errors import Refused
from llmwiki.models import AuditEvent, Project, Source
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


# --- Erasure --------------------------------------------------------------------------------


class EraseForm(forms.Form):
    note = forms.CharField(
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Why (kept in the audit log; do not quote the content)",
    )
    confirm = forms.CharField(max_length=500, label="Type the file name to confirm")

    def __init__(self, *args: Any, source: Source, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.source = source

    def clean_note(self) -> str:
        note = self.cleaned_data["note"].strip()
        if not note:
            raise forms.ValidationError("Say why the source is erased.")
        return note

    def clean_confirm(self) -> str:
        typed = self.cleaned_data["confirm"].strip()
        if typed != self.source.original_name:
            raise forms.ValidationError(
                f"That is not the file name; type {self.source.original_name} exactly."
            )
        return typed


@require_http_methods(["GET", "POST"])
@login_required
def erase_source(request: HttpRequest, slug: str, source_id: int) -> HttpResponse:
    """GET: what erasure will do and a confirmation form; POST: erase (maintainers only)."""
    project = get_project_for(request.user, slug, Do.ERASE)
    source = get_object_or_404(Source, project=project, pk=source_id)
    status = 200
    if request.method == "POST":
        form = EraseForm(request.POST, source=source)
        if form.is_valid():
            try:
                counts = source_erase(
                    source=source, actor=request.user, note=form.cleaned_data["note"]
                )
            except Refused as exc:
                form.add_error(None, str(exc))
                status = exc.status
            else:
                messages.success(
                    request,
                    f"Erased {source.path}: {counts['episodes']} episode(s) tombstoned, "
                    f"{counts['candidates']} candidate(s) and {counts['claims']} claim(s) "
                    f"scrubbed, {counts['pages_republished']} page(s) republished.",
                )
                return redirect("audit_log", slug=project.slug)
        else:
            status = 400
    else:
        form = EraseForm(source=source)
    others = Source.objects.filter(project=project, path=source.path).exclude(pk=source.pk)
    return render(
        request,
        "llmwiki/erase_source.html",
        {
            "project": project,
            "nav": "audit",
            "source": source,
            "form": form,
            "impact": erasure_scope(source).counts(),
            "other_versions": others.order_by("-retrieved_at", "-id"),
        },
        status=status,
    )
