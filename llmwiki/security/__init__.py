"""Write-path security gate for raw text: secrets, PII and prompt-injection screening.

Pure Python (no Django). ``scan()`` runs on every episode at ingest, so it is built for
throughput: every detector sits behind a cheap substring prefilter, all regexes are
precompiled and written so that no input can make them backtrack super-linearly.

The detector families live in ``secrets``, ``pii`` and ``injection`` (which uses
``instructions`` and ``obfuscation``); this module runs them in order, secrets first so
that the others only ever see redacted text, and sets the level: "high" when any risk
finding is high (the caller quarantines), "low" when there are only low ones.
"""

from __future__ import annotations

from llmwiki.errors import InputError
from llmwiki.security.injection import find_risks
from llmwiki.security.pii import find_pii, iban_ok, luhn_ok
from llmwiki.security.results import SECURITY_CLASSES, RiskFinding, ScanResult, SecretFinding
from llmwiki.security.secrets import LONG_RUN_GATE, find_secrets, redact

__all__ = [
    "SECURITY_CLASSES",
    "RiskFinding",
    "ScanResult",
    "SecretFinding",
    "iban_ok",
    "luhn_ok",
    "scan",
]


def scan(text: str, *, base_class: str = "internal") -> ScanResult:
    """Redact secrets in ``text`` and flag PII and prompt-injection risks.

    ``base_class`` is the caller's starting security class ("public", "internal" or
    "restricted"); secrets or PII raise the suggestion to "restricted".
    """
    if base_class not in SECURITY_CLASSES:
        raise InputError("base_class", f"unknown security class {base_class!r}")
    lower = text.lower()
    # Pure-ASCII text (the common case) gets byte-level prefilters and skips Unicode checks.
    raw = text.encode("ascii") if text.isascii() else None
    long_gate = raw.translate(LONG_RUN_GATE) if raw is not None else None
    spans = find_secrets(text, lower, raw, long_gate)
    if spans:
        text, secrets = redact(text, spans)
        lower = text.lower()
        if raw is not None:
            raw = text.encode("ascii")
            long_gate = raw.translate(LONG_RUN_GATE)
    else:
        secrets = ()
    # PII and risks are read from the redacted text so a reason can never quote a secret.
    pii = find_pii(text, raw)
    risks = find_risks(text, lower, raw, long_gate)
    if any(r.level == "high" for r in risks):
        level = "high"
    elif risks:
        level = "low"
    else:
        level = "none"
    security_class = "restricted" if secrets or pii else base_class
    return ScanResult(
        text=text,
        secrets=secrets,
        pii=pii,
        risks=risks,
        risk_level=level,
        security_class=security_class,
    )
