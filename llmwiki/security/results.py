"""What the write-path gate reports: secret findings, risk findings and the scan result."""

from __future__ import annotations

from dataclasses import dataclass, field

SECURITY_CLASSES = ("public", "internal", "restricted")

# A flood of findings helps nobody reading a review queue and costs memory per episode.
MAX_RISKS = 25
_QUOTE_CHARS = 40


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """A secret that was redacted: its detector and a fingerprint, never the value."""

    kind: str
    fingerprint: str

    @property
    def flag(self) -> str:
        return f"secret:{self.kind}"


@dataclass(frozen=True, slots=True)
class RiskFinding:
    """A prompt-injection signal: ``risk:<name>``, a short secret-free reason, and its level.

    ``level`` is "high" when the finding on its own should quarantine the input (a known
    injection phrase, an exfiltration URL, an instruction to a model hidden in a comment,
    a cell, a quoted turn or a fake tool block) and "low" when it is only worth a flag.
    """

    flag: str
    reason: str
    level: str = "low"


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Outcome of ``scan()``: the redacted text and everything the gate noticed."""

    text: str
    secrets: tuple[SecretFinding, ...] = ()
    pii: tuple[str, ...] = ()
    risks: tuple[RiskFinding, ...] = ()
    risk_level: str = "none"
    security_class: str = "internal"

    @property
    def flags(self) -> tuple[str, ...]:
        """Return every flag (secret:, pii:, risk:) once, sorted."""
        found = {s.flag for s in self.secrets}
        found.update(self.pii)
        found.update(r.flag for r in self.risks)
        return tuple(sorted(found))

    @property
    def high_risk(self) -> bool:
        return self.risk_level == "high"


@dataclass(slots=True)
class RiskCollector:
    """Collect risk findings once each, at most ``MAX_RISKS``, never losing the first high one."""

    findings: list[RiskFinding] = field(default_factory=list)

    def add(self, flag: str, reason: str, *, high: bool = False) -> None:
        finding = RiskFinding(flag, reason, "high" if high else "low")
        if finding in self.findings:
            return
        if len(self.findings) < MAX_RISKS:
            self.findings.append(finding)
        elif high and not self.high:
            self.findings[-1] = finding  # the level decides quarantine; a low flag does not

    @property
    def high(self) -> bool:
        return any(f.level == "high" for f in self.findings)


def quote(s: str) -> str:
    """Render a matched span for a reason: one line, at most a few dozen characters."""
    s = " ".join(s.split())
    if len(s) > _QUOTE_CHARS:
        s = s[: _QUOTE_CHARS - 1] + "…"
    return repr(s)
