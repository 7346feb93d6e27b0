"""What the write-path gate reports: secret findings, risk findings and the scan result."""

from __future__ import annotations

from dataclasses import dataclass

SECURITY_CLASSES = ("public", "internal", "restricted")


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
    """A prompt-injection signal: ``risk:<name>`` plus a short, secret-free reason."""

    flag: str
    reason: str


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
