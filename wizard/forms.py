from __future__ import annotations

from django import forms

from llmwiki.models import Episode, Project, SecurityClass
from reviews.exports.documents import DEFAULT_BUDGET, MIN_BUDGET
from wizard.models import Authority


class ProjectStepForm(forms.Form):
    """Step 1: an existing project, or the name and slug of a new one; and the boundary."""

    project = forms.ModelChoiceField(
        queryset=Project.objects.none(),
        required=False,
        to_field_name="slug",
        empty_label="— create a new project —",
    )
    new_name = forms.CharField(required=False, max_length=200, label="New project name")
    new_slug = forms.SlugField(required=False, max_length=64, label="New project slug")
    boundary = forms.ChoiceField(
        choices=Authority.choices,
        widget=forms.RadioSelect,
        label="Authority boundary",
        help_text=(
            "Reviewed memory: approved items become the project's reviewed wiki. "
            "Experimental: import and dream, but nothing is committed. "
            "Handoff/export only: nothing is written; exports of the reviewed layer."
        ),
    )

    def __init__(self, *args, projects=None, can_create: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.can_create = can_create
        self.fields["project"].queryset = (
            projects if projects is not None else Project.objects.none()
        )
        if not can_create:
            self.fields["project"].required = True
            self.fields["project"].empty_label = None
            del self.fields["new_name"], self.fields["new_slug"]

    def clean(self):
        data = super().clean()
        if data.get("project") is None and self.can_create:
            if not data.get("new_name") or not data.get("new_slug"):
                raise forms.ValidationError(
                    "Choose a project, or give the new project a name and a slug."
                )
            if Project.objects.filter(slug=data["new_slug"]).exists():
                self.add_error("new_slug", f"A project with the slug {data['new_slug']!r} exists.")
        return data


class RelabelForm(forms.Form):
    episodes = forms.TypedMultipleChoiceField(coerce=int, choices=(), label="Episodes")
    memory_type = forms.ChoiceField(choices=Episode.MemoryType.choices, label="New label")

    def __init__(self, *args, episode_ids=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["episodes"].choices = [(pk, str(pk)) for pk in episode_ids]
        self.fields["episodes"].error_messages["required"] = "Tick at least one episode."
        self.fields["episodes"].error_messages["invalid_choice"] = (
            "Episode %(value)s is not this run's material."
        )


class ExportStepForm(forms.Form):
    audience = forms.ChoiceField(
        choices=SecurityClass.choices,
        initial=SecurityClass.INTERNAL,
        help_text="Restricted and PII-flagged material never goes below its class.",
    )
    budget = forms.IntegerField(
        min_value=MIN_BUDGET, initial=DEFAULT_BUDGET, label="Startup packet budget (characters)"
    )
    with_episodes = forms.BooleanField(
        required=False, label="Scope in this run's episodes as episodic context"
    )
