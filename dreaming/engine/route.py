"""Route a candidate to the page it belongs on, naming the rule that fired.

Rules are tried in order; the first match wins. Conflicts and open questions come first
because a contested statement must not land on a page as settled fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_QUESTION_RE = re.compile(
    r"\?\s*$|\b(?:not sure|unclear|unknown|tbd|to be decided|open question|undecided"
    r"|need to (?:decide|figure out|find out|check whether)|should we|do we|whether or not"
    r"|no idea|investigate whether)\b",
    re.I,
)
_DECISION_RE = re.compile(
    r"\b(?:decided|decision|agreed|we will use|we'll use|going with|chose|chosen|settled on"
    r"|standardi[sz]ed on|moved from|switched from|migrated from|replaced \S+ with"
    r"|no longer use|adopted)\b",
    re.I,
)
_POLICY_RE = re.compile(
    r"\b(?:must(?: not)?|mustn't|never|always|only\b.{1,60}\b(?:may|can|are allowed)"
    r"|not allowed|is forbidden|are forbidden|prohibited|required to|requires? (?:approval|review)"
    r"|policy|compliance|approval from)\b",
    re.I,
)
_PROCEDURE_RE = re.compile(
    r"^(?:to \w+.{0,60},|first\b|then\b|step \d|run|restart|deploy|roll ?back|check|open|"
    r"set|add|remove|rotate|drain|scale|ssh|create|delete|apply|execute|follow)\b"
    r"|^(?:if|when|whenever|after|before)\b.{1,80}?,\s*(?:then\s+)?(?:run|restart|check|drain"
    r"|roll ?back|rotate|scale|page|ping|call|open|delete|re-?run|redeploy|reboot)\b"
    r"|\b(?:runbook|how to|in order to|step \d|steps?:|procedure|playbook|to recover|to restart"
    r"|to deploy|to roll ?back|then run|and then)\b|`[^`]+`",
    re.I,
)
# A term being defined is a noun: "noticed: the relay …" is a log line, not a definition.
_DEFINITION_RE = re.compile(
    r"^(?P<term>[\w .+#/-]{1,40}?)\s+(?:means|stands for|is short for|refers to|is defined as"
    r"|is an abbreviation for)\b|^(?P<term2>[\w.+#/-]{1,30}(?<!ed))\s*(?:=|:)\s*(?:a|an|the)\s+\w+"
    r"|\b(?:aka|a\.k\.a\.|glossary)\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Route:
    """Where a candidate goes and why."""

    page: str
    section: str
    reason: str


def route(
    text: str,
    *,
    contested: str | None,
    procedural_votes: float,
    subject_label: str,
    day_label: str,
) -> Route:
    """Pick the page for a candidate text; ``contested`` names a conflict kind if any."""
    if contested in ("value", "negation"):
        return Route("OPEN_QUESTIONS", "Conflicts", f"conflict: contradicting {contested} evidence")
    m = _QUESTION_RE.search(text)
    if m:
        return Route("OPEN_QUESTIONS", "Questions", f"uncertainty: '{m.group(0).strip()}'")
    m = _DECISION_RE.search(text)
    if m or contested == "reversal":
        cue = m.group(0) if m else "reversal of an earlier decision"
        return Route("DECISION_LOG", day_label, f"decision: '{cue}'")
    m = _POLICY_RE.search(text)
    if m:
        return Route("GOVERNANCE", "Rules", f"policy: '{m.group(0).strip()}'")
    m = _PROCEDURE_RE.search(text)
    if m or procedural_votes > 0.5:
        cue = f"'{m.group(0).strip()}'" if m else "procedural-candidate evidence"
        return Route("RUNBOOKS", subject_label, f"procedure: {cue}")
    m = _DEFINITION_RE.search(text)
    if m:
        term = (m.group("term") or m.group("term2") or subject_label).strip()
        return Route("GLOSSARY", term[:60], f"definition: '{m.group(0).strip()[:40]}'")
    return Route("SYSTEM_OVERVIEW", subject_label, "architecture/system fact (default rule)")
