"""Project settings → API tokens: maintainers create and revoke the tokens agents use."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from api import services
from api.models import ApiToken
from llmwiki.access import Do, get_project_for
from llmwiki.errors import InputError


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="The agent or tool that will use it.")
    scopes = forms.MultipleChoiceField(
        choices=ApiToken.Scope.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=[ApiToken.Scope.READ],
    )


@require_http_methods(["GET", "POST"])
@login_required
def tokens(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.SETTINGS)
    created = None
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            token, text = services.token_create(
                project=project,
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                actor=request.user,
            )
        except InputError as exc:
            form.add_error(exc.name if exc.name in form.fields else None, exc.reason)
        else:
            # Rendered, not redirected: this response is the only place the token appears.
            created = (token, text)
            form = TokenForm()
    return render(
        request,
        "api/tokens.html",
        {
            "project": project,
            "nav": "settings",
            "form": form,
            "created": created,
            "tokens": ApiToken.objects.filter(project=project).select_related(
                "created_by", "revoked_by"
            ),
        },
        status=200,
    )


@require_POST
@login_required
def token_revoke(request: HttpRequest, slug: str, token_id: int) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.SETTINGS)
    token = get_object_or_404(ApiToken, project=project, pk=token_id)
    services.token_revoke(token=token, actor=request.user)
    messages.success(request, f"Revoked API token {token.name} ({token.prefix}…).")
    return redirect("api_tokens:list", slug=project.slug)
