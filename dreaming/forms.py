from __future__ import annotations

import json

from django import forms

from dreaming.engine.policy import Policy, PolicyError
from llmwiki.importers import safejson


class PolicyForm(forms.Form):
    dreaming_enabled = forms.BooleanField(required=False, label="Dreaming enabled")
    policy = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 18, "class": "mono", "spellcheck": "false"}),
        help_text="JSON. Unknown keys, wrong types and out-of-range values are refused.",
    )

    def clean_policy(self) -> dict:
        raw = self.cleaned_data["policy"]
        try:
            data = safejson.decode(raw)
        except safejson.TooDeep as exc:
            raise forms.ValidationError(f"JSON {exc}") from None
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
            ) from None
        try:
            Policy.from_dict(data)
        except PolicyError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


class BackfillForm(forms.Form):
    since = forms.DateField(widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            raise forms.ValidationError("The backfill range starts after it ends.")
        return data
