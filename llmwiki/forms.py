from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.exceptions import TooManyFilesSent
from django.http import HttpRequest

from llmwiki.ingest import RawFile
from llmwiki.models import Episode, Project


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    widget = MultipleFileInput

    def __init__(self, **kwargs):
        # An empty file is refused by the import with its name in the result table, next
        # to the files that did import, rather than failing the whole upload here.
        super().__init__(allow_empty_file=True, **kwargs)

    def clean(self, data, initial=None):
        if not data:
            raise forms.ValidationError("Choose at least one file.", code="required")
        return [super(MultipleFileField, self).clean(d, initial) for d in data]


class UploadForm(forms.Form):
    files = MultipleFileField(help_text="Markdown, text, JSON/JSONL transcripts, or a zip bundle.")


def read_upload(request: HttpRequest) -> tuple[UploadForm, list[RawFile] | None, str | None]:
    """The posted files as the import takes them, or the reason they cannot be read.

    Shared by the import page and the wizard's import step, so both refuse alike.
    """
    try:
        form = UploadForm(request.POST, request.FILES)
    except TooManyFilesSent:
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return UploadForm(), None, f"Too many files: at most {limit} per upload."
    if not form.is_valid():
        return form, None, " ".join(form.errors.get("files", ["The upload was incomplete."]))
    return form, [RawFile(f.name, f.read()) for f in form.cleaned_data["files"]], None


class EpisodeFilterForm(forms.Form):
    kind = forms.ChoiceField(required=False, choices=[("", "Any kind"), *Episode.Kind.choices])
    memory_type = forms.ChoiceField(
        required=False, choices=[("", "Any type"), *Episode.MemoryType.choices]
    )
    status = forms.ChoiceField(
        required=False, choices=[("", "Any status"), *Episode.Status.choices]
    )
    flag = forms.CharField(required=False, max_length=60, help_text="e.g. pii:email or risk:")
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    q = forms.CharField(required=False, max_length=200, label="Text contains")


class QuarantineDecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[("release", "Release"), ("discard", "Discard")])
    note = forms.CharField(max_length=1000, widget=forms.Textarea(attrs={"rows": 2}))


class ProjectSettingsForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = [
            "name",
            "description",
            "authority",
            "dreaming_enabled",
            "dream_schedule",
            "four_eyes",
            "restricted_clearance",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}
