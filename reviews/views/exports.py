"""The export list: generate, download and check exports; accept an imported bundle."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from llmwiki.access import Do, get_project_for, has_role
from llmwiki.errors import InputError, Refused
from llmwiki.models import Export, SecurityClass
from llmwiki.vocabulary import export_kinds
from reviews.exports import ExportOptions, bundle_accept, export_create, export_folder
from reviews.exports.baseline import pending_bundle_episodes
from reviews.exports.documents import DEFAULT_BUDGET, MIN_BUDGET
from reviews.exports.service import exports_for_list


class ExportForm(forms.Form):
    # A callable, so the form offers the kinds declared when it is shown.
    kind = forms.ChoiceField(choices=lambda: [(k.value, k.label) for k in export_kinds()])
    audience = forms.ChoiceField(choices=SecurityClass.choices, initial=SecurityClass.INTERNAL)
    budget = forms.IntegerField(
        min_value=MIN_BUDGET,
        initial=DEFAULT_BUDGET,
        label="Startup packet budget (characters)",
    )


def may_download(project, user, export: Export) -> bool:
    if export.audience != SecurityClass.RESTRICTED:
        return True
    return has_role(user, project, project.restricted_clearance)


@require_http_methods(["GET", "POST"])
@login_required
def export_list(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.EXPORT)
    form = ExportForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            export = export_create(
                project=project,
                options=ExportOptions(data["kind"], data["audience"], budget=data["budget"]),
                actor=request.user,
            )
        except (Refused, InputError) as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Export #{export.pk} ({export.get_kind_display()}) built.")
            return redirect("reviews:exports", slug=project.slug)
    exports = exports_for_list(project)
    used = Export.claims.through.objects.filter(export__in=[e.pk for e in exports])
    claim_ids: dict[int, list[int]] = {}
    for export_id, claim_id in used.order_by("claim_id").values_list("export_id", "claim_id"):
        claim_ids.setdefault(export_id, []).append(claim_id)
    for export in exports:
        export.claim_ids = claim_ids.get(export.pk, [])
        export.downloadable = may_download(project, request.user, export)
    pending = len(pending_bundle_episodes(project)) if project.can[Do.ACCEPT_BASELINE] else 0
    return render(
        request,
        "reviews/export_list.html",
        {
            "project": project,
            "nav": "exports",
            "exports": exports,
            "form": form,
            "pending": pending,
        },
    )


@require_http_methods(["GET"])
@login_required
def export_download(request: HttpRequest, slug: str, export_id: int, name: str) -> FileResponse:
    project = get_project_for(request.user, slug, Do.EXPORT)
    export = get_object_or_404(Export, project=project, pk=export_id)
    if not may_download(project, request.user, export):
        raise PermissionDenied(
            f"A restricted export needs the {project.restricted_clearance} role on this project."
        )
    if name not in {entry["name"] for entry in export.files}:
        raise Http404("No such file in this export")  # also: erased exports list no files
    path = export_folder(export) / name
    if not path.is_file():
        raise Http404("The file is gone from the export store")
    return FileResponse(path.open("rb"), as_attachment=True, filename=name)


@require_POST
@login_required
def accept_bundle(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.ACCEPT_BASELINE)
    try:
        result = bundle_accept(project=project, actor=request.user)
    except Refused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Accepted {len(result.claims)} claim(s) from the imported bundle as the reviewed "
            f"baseline ({len(result.revisions)} page revision(s)).",
        )
    return redirect("reviews:exports", slug=project.slug)
