from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from dreaming.models import Candidate, Conflict
from llmwiki.models import SecurityClass
from llmwiki.vocabulary import PAGE_TITLES, STANDARD_PAGES
from reviews.actions import FormState


class QueueFilterForm(forms.Form):
    SORTS = [("risk", "Riskiest first"), ("score", "Highest score"), ("age", "Oldest first")]

    page_target = forms.ChoiceField(
        required=False,
        choices=[("", "Any page"), *((k, PAGE_TITLES[k]) for k in STANDARD_PAGES)],
        label="Page",
    )
    risk = forms.CharField(required=False, max_length=40, label="Flag contains")
    security = forms.ChoiceField(
        required=False, choices=[("", "Any class"), *SecurityClass.choices], label="Security"
    )
    status = forms.ChoiceField(
        required=False,
        choices=[("", "Proposed and deferred"), ("proposed", "Proposed"), ("deferred", "Deferred")],
    )
    min_score = forms.FloatField(required=False, min_value=0, max_value=1, label="Score ≥")
    max_score = forms.FloatField(required=False, min_value=0, max_value=1, label="Score ≤")
    older_than = forms.IntegerField(required=False, min_value=0, label="Older than (days)")
    sort = forms.ChoiceField(required=False, choices=SORTS)


class ActionForm(forms.Form):
    """Every review action carries the version token of what the reviewer saw."""

    candidate_version = forms.IntegerField(widget=forms.HiddenInput)
    page_revision = forms.IntegerField(widget=forms.HiddenInput, required=False)
    note = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )
    edited_text = forms.CharField(
        required=False, max_length=4000, widget=forms.Textarea(attrs={"rows": 3})
    )
    sensitive_confirmed = forms.BooleanField(required=False, label="Sensitive content reviewed")
    claim = forms.IntegerField(required=False, label="Merge into claim #")
    section = forms.CharField(required=False, max_length=200, label="Wiki section")

    def seen(self) -> FormState:
        """The version token the form carried: what the reviewer was shown."""
        return FormState(self.cleaned_data["candidate_version"], self.cleaned_data["page_revision"])


class ConflictResolveForm(forms.Form):
    conflict = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    resolution = forms.ChoiceField(choices=Conflict.Resolution.choices)
    note = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )
    winner = forms.IntegerField(required=False, min_value=0)
    merged_text = forms.CharField(
        required=False, max_length=4000, widget=forms.Textarea(attrs={"rows": 2})
    )
    owner = forms.CharField(required=False, max_length=150, label="Owner (username)")
    sensitive_confirmed = forms.BooleanField(required=False, label="Sensitive content reviewed")
    due = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def arguments(self, post) -> dict[str, Any]:
        """The valid form as `conflict_resolve`'s keyword arguments: the owner as a user
        (None when the username names nobody), each side's scope from its `scope_N` field."""
        data = self.cleaned_data
        owner = None
        if data["owner"]:
            owner = get_user_model().objects.filter(username=data["owner"]).first()
        scopes = {
            int(m[1]): v for k, v in post.items() if (m := re.fullmatch(r"scope_([0-9]{1,4})", k))
        }
        kept = ("resolution", "note", "winner", "merged_text", "due", "sensitive_confirmed")
        return {**{k: data[k] for k in kept}, "owner": owner, "scopes": scopes}


class RollbackForm(forms.Form):
    """Which revision to publish again and why; the reason goes on the new revision."""

    revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    # 400 leaves room for "rollback to rN: " within the revision's 500-character reason.
    reason = forms.CharField(
        max_length=400,
        label="Why roll back?",
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Say why the page is rolled back."},
    )


class RetractForm(forms.Form):
    reason = forms.CharField(max_length=500)


OPEN = Candidate.OPEN_STATUSES
