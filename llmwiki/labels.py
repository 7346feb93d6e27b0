"""Words for the codes rows store: flags, gate and dreaming reasons, conflict kinds and resolutions.

Rows, the JSON API, the MCP server and the command line keep the codes (agents match on
them); pages show these words, through the `label` and `labels_in` template filters. A code
missing from the table still reads as words ("junk:bare_url" -> "Junk: bare url"), never as
the raw code. Pure Python, so any layer may use it.
"""

from __future__ import annotations

import re

# Detail words after a family prefix ("risk:", "secret:", "pii:", ...).
_RISKS = {
    "injection_phrase": "instruction-like phrase",
    "role_tag": "role or control tag",
    "role_spoof": "spoofed speaker role",
    "tool_block": "tool or system block inside the text",
    "html_comment_instruction": "instruction in an HTML comment",
    "hidden_html_instruction": "instruction in hidden HTML",
    "table_cell_instruction": "instruction in a table cell",
    "exfil_image": "image that could send data out",
    "exfil_link": "link that could send data out",
    "invisible_unicode": "invisible characters",
    "bidi_control": "text-direction control characters",
    "homoglyph": "look-alike letters from another script",
    "encoded_blob": "encoded blob",
}
_SECRETS = {
    "private_key": "private key",
    "aws_access_key": "AWS access key",
    "aws_secret_key": "AWS secret key",
    "github_pat": "GitHub token",
    "github_token": "GitHub token",
    "gitlab_token": "GitLab token",
    "anthropic_api_key": "Anthropic API key",
    "openai_api_key": "OpenAI API key",
    "stripe_key": "Stripe key",
    "google_api_key": "Google API key",
    "slack_token": "Slack token",
    "slack_webhook": "Slack webhook",
    "telegram_bot_token": "Telegram bot token",
    "huggingface_token": "Hugging Face token",
    "npm_token": "npm token",
    "jwt": "JSON web token",
    "basic_auth": "basic-auth password",
    "bearer_token": "bearer token",
    "url_credentials": "password in a URL",
    "connection_string": "database connection string",
    "generic_secret": "password or key",
    "random_token": "random-looking token",
}
_PII = {
    "email": "email address",
    "phone": "phone number",
    "card": "payment card number",
    "address": "postal address",
    "iban": "bank account number (IBAN)",
}
# Why a sentence was set aside as junk by dreaming.
_JUNK = {
    "empty": "empty",
    "heading": "a heading only",
    "tool_output": "tool output",
    "bare_url": "a bare link",
    "shell_command": "a shell command",
    "code_only": "code only",
    "table": "a table",
    "too_short": "too short",
    "no_content": "no content",
    "fragment": "a fragment",
    "fragments": "only fragments",
    "name_list": "a list of names",
    "leans_on_context": "not readable without the sentences around it",
    "points_back": "points back at what came before",
    "asks_the_listener": "a question to the person spoken to",
    "not_a_claim": "a lead-in or a field of names, not a claim",
}

# family prefix -> (how the family frames its detail, words for its details)
_FAMILIES: dict[str, tuple[str, dict[str, str]]] = {
    "risk": ("Risk: {}", _RISKS),
    "secret": ("Secret: {}", _SECRETS),
    "pii": ("Personal data: {}", _PII),
    "junk": ("Junk: {}", _JUNK),
    "lifecycle": ("Work {}", {}),  # lifecycle:done -> "Work done"
    "rehydrate": (
        "On re-reading: {}",
        {"evidence_gone": "evidence no longer live", "below_min_score": "below the minimum score"},
    ),
}

# Codes without a family.
WORDS: dict[str, str] = {
    # Why dreaming proposed nothing from some material.
    "below_min_score": "Below the minimum score",
    "too_few_evidence": "Too little evidence",
    "too_few_days": "Seen on too few days",
    "too_few_contexts": "From too few sources",
    "handoff-only": "Marked handoff-only",
    "secret_redacted": "Only redacted secrets",
    "contradicted": "Contradicted by newer material",
    "deferred_merge": "Merged into a stronger candidate",
    "dated": "News of the day it was written",
    "reinforced": "Reinforces an approved claim",
    "not_claim_worthy": "Not worded as a claim",
    # Conflict kinds and resolutions (the words of dreaming.models.Conflict's choices).
    "value": "Different value",
    "reversal": "Reversal",
    "negation": "Negation",
    "keep-existing": "Keep existing",
    "accept-new": "Accept new (supersede)",
    "both-valid": "Both valid in different scopes",
    "merge": "Merge",
    "escalate": "Escalate as open question",
}

_SEPARATORS = re.compile(r"[\s_:\-]+")
# What a code looks like inside a sentence: a family prefix, or a word joined by _ or -.
_FAMILY_PREFIX = "|".join(_FAMILIES)
_CODE_IN_TEXT = re.compile(rf"\b(?:(?:{_FAMILY_PREFIX}):[a-z0-9_]+|[a-z0-9]+(?:[_-][a-z0-9]+)+)\b")


def readable(code: str) -> str:
    """A code with its separators as spaces, capitalised: the fallback for unknown codes."""
    words = _SEPARATORS.sub(" ", code).strip()
    return words[:1].upper() + words[1:]


def label(code: object) -> str:
    """The words for a code; an unknown one reads as words rather than as the code."""
    code = str(code).strip()
    if code in WORDS:
        return WORDS[code]
    family, sep, detail = code.partition(":")
    if sep and family in _FAMILIES and detail:
        frame, details = _FAMILIES[family]
        return frame.format(details.get(detail) or readable(detail).lower())
    return readable(code)


def labels_in(text: object) -> str:
    """A sentence with every known code in it put in words ("… flag risk:role_tag …").

    Only codes in the table or under a known family are replaced: a user's own hyphenated
    word in a reason stays as written.
    """

    def word(m: re.Match[str]) -> str:
        code = m.group()
        if code not in WORDS and code.partition(":")[0] not in _FAMILIES:
            return code
        words = label(code)
        return words[:1].lower() + words[1:]

    return _CODE_IN_TEXT.sub(word, str(text))
