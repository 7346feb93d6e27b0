"""Erasing a source (maintainers): what it will do, a confirmation, then the erasure."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from llmwiki.access import Do, get_project_for
from llmwiki.erasure import erasure_scope, source_erase
from llmwiki.errors import Refused
from llmwiki.models import Source


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
