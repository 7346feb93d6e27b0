"""The badge and highlight rules every page shares (llmwiki/templatetags/marks.py)."""

from __future__ import annotations

from django.template import Context, Template

from llmwiki.templatetags.marks import flag_class, highlight


def test_it_marks_risk_and_secret_flags_bad_and_the_rest_warn():
    assert flag_class("risk:injection") == "bad"
    assert flag_class("secret:aws_access_key") == "bad"
    assert flag_class("pii:email") == "warn"
    assert flag_class("oversize") == "warn"


def test_it_highlights_the_needle_and_escapes_everything_else():
    marked = highlight("<b>x</b> staging runs PostgreSQL 16 & more", "staging runs PostgreSQL 16")
    assert marked == "&lt;b&gt;x&lt;/b&gt; <mark>staging runs PostgreSQL 16</mark> &amp; more"


def test_it_falls_back_to_the_first_six_words_and_to_plain_escaping():
    text = "one two three four five six; and then <i>more</i>"
    assert "<mark>one two three four five six</mark>" in highlight(
        text, "one two three four five six seven eight"
    )
    assert highlight("<i>no match</i>", "elsewhere") == "&lt;i&gt;no match&lt;/i&gt;"


def test_templates_load_the_filters_by_name():
    rendered = Template(
        '{% load marks %}{% for f in flags %}<span class="badge {{ f|flag_class }}">{% endfor %}'
    ).render(Context({"flags": ["risk:x", "pii:phone"]}))
    assert rendered == '<span class="badge bad"><span class="badge warn">'
