"""Route a candidate to the page it belongs on, naming the rule that fired.

A contested statement or a question goes to OPEN_QUESTIONS first: it must not land on a
page as settled fact. Otherwise every text of the fact votes: the sentence the reviewer
will read, and each restatement the cluster folded into it. One restatement rarely
carries the form that says what kind of fact it is ("**Term** — …" in a notes file,
"decided:" in one log, a command in another), so reading only the chosen sentence routes
a definition told in passing as an architecture fact.

Cues come in two strengths. A *form* (a command in backticks, ``"term" = …``, "X means",
"only … may", an item of a numbered list) says the kind by its syntax and counts twice a
*word* ("rule", "then", "rather than"), which also turns up in passing. A text with no cue
at all is a plain statement about the system and votes, as a word, for SYSTEM_OVERVIEW.
The chosen sentence counts twice a restatement, because the page must fit the text shown.
So one command quoted in one of five restatements does not make a fact a procedure, and
a definition that only one restatement spells out still wins over a shown sentence that
says nothing of its kind.

Where the writer put the text votes too: the heading path it was imported under. A heading
that names a kind of page ("Glossary", "Runbook", "Policies", "Architecture") or a decision
record's title ("ADR-0004: …") says what every line under it is, so a plain statement in a
decision record is a decision. It counts between a word and a form of the text itself: a
definition written inside a decision record is still a definition.

A fact that reverses an earlier one votes for DECISION_LOG as strongly as a decision form
shown, and no more: what changed is as often a procedure, a rule or the layout of the
system as a decision, and its own forms and headings still say which.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from llmwiki.vocabulary import DECISION_RECORDS, SECTION_WORDS

from .disputes import announces_switch
from .text import (
    DATE,
    GENERIC,
    HOST,
    IDENT,
    MARK,
    NEG_CUE,
    NUM,
    STOP,
    WEAK,
    token_info,
    word_list,
)
from .worth import imperative

FORM, WORD = 2.0, 1.0
SHOWN, RESTATED = 2.0, 1.0
# A heading that names the kind counts between a word and a form of the text itself.
HEADING = 1.5
# Ties go to the page that is costlier to miss: a decision or a rule read as background
# loses its force; background is the page a misrouted fact costs least on.
PAGE_ORDER = ("DECISION_LOG", "GOVERNANCE", "RUNBOOKS", "GLOSSARY", "SYSTEM_OVERVIEW")

_QUESTION_RE = re.compile(
    r"\?\s*$|\b(?:not sure|unclear|unknown|tbd|to be decided|open question|undecided"
    r"|need to (?:decide|figure out|find out|check whether)|should we|do we|whether or not"
    r"|no idea|investigate whether|(?:wants?|needs?|awaiting|pending) (?:a )?decision)\b",
    re.I,
)

# A command is a code span of at least two words whose first is a lowercase program name:
# `sensor_table` or `path/+/up` names a thing, `tool restart node-3` tells someone what to run.
_COMMAND = r"`[a-z][\w.-]*\s+[^`,;]{1,80}`"
# The verbs a step opens with, in the imperative. After a condition any order is a step
# (``_CONDITION_RE``); as the first word of a sentence an imperative is as often a noun
# or a label ("Call with …", "Storage. …"), so only these count there.
_STEP_VERBS = (
    r"run|restart|deploy|roll ?back|check|open|set|add|remove|rotate|drain|scale|ssh|create"
    r"|delete|apply|execute|follow"
)
# A condition and what to do then: "If the feed is stale, restart …", "When X, ensure …".
_CONDITION_RE = re.compile(
    r"^(?:if|when|whenever|after|before|once)\b[^,;:]{1,100},\s*(?:then\s+)?(?P<then>.+)", re.I
)
# "Term, the thing it is, …": a name set off by an appositive that opens on an article,
# after a lead-in at most ("Word of the day: slack water, the short spell …").
_APPOSITIVE_RE = re.compile(
    r"^(?:[^:;,]{1,60}:\s+)?(?P<term>[\w-]+(?: [\w-]+){0,2}), (?:the|a|an) [^,;:.]{3,120}[,.]"
)

_CUES: dict[str, tuple[tuple[float, re.Pattern[str]], ...]] = {
    "DECISION_LOG": (
        (
            FORM,
            re.compile(
                r"\b(?:decided|decision|agreed|settled on|standardi[sz]ed on|we will use"
                r"|we'll use|going with|chose|chosen|adopted|(?:ADR|RFC)[- ]?\d+"
                # "picking A over B", "lost to B": one option weighed against another
                r"|(?:pick|picked|picking|chose|choosing|prefer|preferred) \S+ over"
                r"|lost (?:out )?to)\b",
                re.I,
            ),
        ),
        (
            WORD,
            re.compile(
                # One choice replaced by another is read once, by the sentence's form
                # (``disputes.announces_switch``, as conflicts read it): "X replaced it".
                r"\b(?:rather than|turned down|rejected|ruled (?:\w+ )?out|shortlisted)\b",
                re.I,
            ),
        ),
    ),
    "GOVERNANCE": (
        (
            FORM,
            re.compile(
                r"\b(?:must(?: not)?|mustn't|only\b.{1,60}\b(?:may|can|are allowed|is allowed)"
                r"|(?:is|are) (?:only )?allowed\b.{0,60}\bonly|not allowed|not permitted"
                r"|is forbidden|are forbidden|prohibited|required to|requires? (?:approval|review)"
                r"|policy|compliance|approval from|consent|opt-?in|opt-?out"
                # "needs four-eyes", "requires a second person's sign-off"
                r"|(?:needs?|requires?)\b.{0,30}\b(?:approv\w*|sign(?:ed)?-?off|four-eyes)"
                # "commit access is granted by lazy consensus"
                r"|(?:access|permissions?|rights?)\s+(?:is|are)\s+(?:granted|given|revoked)"
                # "handed to X on request and to nobody else"
                r"|(?:to|with) (?:nobody|no one|no-one) else|\bgo(?:es)? only to\b"
                r"|(?:without|unless)\b.{1,60}\b(?:permission|approval|agreement)"
                # "Never deploy …" instructs, a rule even as a runbook's line; "the job
                # never deletes rows" describes.
                r"|(?:^|[;.]\s+)(?:never|always))\b",
                re.I,
            ),
        ),
        (
            WORD,
            re.compile(
                r"\b(?:rules?|allowed|audit(?:ed)? log)\b",
                re.I,
            ),
        ),
    ),
    "RUNBOOKS": (
        (
            FORM,
            re.compile(
                rf"{_COMMAND}|^(?:to \w+.{{0,60}},|first\b|step \d|(?:{_STEP_VERBS})\b)"
                r"|\b(?:runbook|how to|playbook|procedure|steps?:|to recover|to restart)\b",
                re.I,
            ),
        ),
        (
            WORD,
            re.compile(
                r",\s*then\b|\bfirst\b.{1,80}\b(?:then|after)\b|\bafterwards\b",
                re.I,
            ),
        ),
    ),
    "GLOSSARY": (
        (
            FORM,
            re.compile(
                # "**Term** — what it is", "\"term\" = …", "X means …", "a Y is any Z that …",
                # "how we count X: …": a term followed by what it is, not what it does.
                # A term set off in bold, then a dash: the glossary convention itself.
                r"^\W*\*\*[^*]{1,40}\*\*\s*[—–]\s*\S"
                r"|^\W*\*\*[^*]{1,40}\*\*\s*[:-]\s*(?:a|an|the|one|any|each|every|how|what"
                r"|where|when)\s"
                r"|[\"“][^\"”]{1,40}[\"”]\s*(?:=|:|means)"
                r"|^[\w .+#/-]{1,40}?\s+(?:means|stands for|is short for|refers to"
                r"|is defined as|is an abbreviation for)\b"
                r"|^[\w.+#/-]{1,30}(?<!ed)\s*=\s*(?:a|an|the)\s+\w+"
                r"|\b(?:a|an)\s+[\w -]{1,30}\s(?:is|are)\s+(?:any|every|each)\s+\w+"
                r"|\bhow (?:we|you|they) (?:count|define|measure|calculate)\b"
                r"|\bwhat counts as\b|\bby (?:our|the|this) definition\b"
                # "a quadrat is the square frame …", "asked what a tombstone is"
                r"|(?:^|[:;]\s+)(?:a|an)\s+[\w-]{2,30}(?:\s+here)?\s+is\s+(?:the|a|an)\s"
                r"|\bwhat (?:a|an)\s+[\w-]{2,30}\s+is\b",
                re.I,
            ),
        ),
        # "defined" alone is as often where a thing is declared ("defined in config.ts").
        (WORD, re.compile(r"\b(?:aka|a\.k\.a\.|glossary|definition|term)\b", re.I)),
    ),
}


@dataclass(frozen=True, slots=True)
class Route:
    """Where a candidate goes and why."""

    page: str
    section: str
    reason: str


def _names(word: str) -> bool:
    """Whether a word can be part of a term: "Yesterday, the build failed, …" and
    "Then, a retry, …" open on an adverb, not on a name."""
    flags = token_info(word)[1]
    return not flags & (STOP | WEAK | GENERIC | DATE | NUM) and not word.lower().endswith("ly")


# A label opening the text or a sentence of it, bold or not: "**Finding:** …", "Fix: …".
_LABEL_RE = re.compile(
    r"(?:^|(?<=[.!?])\s+)\W{0,2}(?:\*\*)?[A-Z][\w-]*(?: [\w-]+){0,2}:(?:\*\*)?\s+"
)


def _lesson_then_order(text: str) -> str | None:
    """The order in a labelled pair whose first part states something and whose next part
    orders what to do about it ("**Finding:** X slows every request. **Response:** Cache X."):
    what was learned, turned into a standing instruction, is a rule."""
    heads = list(_LABEL_RE.finditer(text))
    for before, label in itertools.pairwise(heads):
        if imperative(text[label.end() :]) and not imperative(text[before.end() : label.start()]):
            return text[label.start() :].strip()
    return None


def _forms(text: str) -> dict[str, tuple[float, str]]:
    """Cues read from the sentence's structure rather than its words: an order (a step
    unless its place says otherwise), an order after its condition (a step), a term set off
    by an appositive (a definition), an order drawn from a lesson stated before it (a
    rule), one choice announced as replacing another (a decision, as weak as a word: what
    replaced what is as often a part swapped in a repair)."""
    found: dict[str, tuple[float, str]] = {}
    order = _lesson_then_order(text) if text.count(":") > 1 else None
    if order:
        found["GOVERNANCE"] = (FORM, order[:40])
    m = _CONDITION_RE.match(text)
    if m and imperative(m.group("then")[:1].upper() + m.group("then")[1:]):
        found["RUNBOOKS"] = (FORM, m.group(0)[:40])
    if announces_switch(text):
        found["DECISION_LOG"] = (WORD, "one choice replaced by another")
    m = _APPOSITIVE_RE.match(text)
    if m and all(_names(w) for w in m.group("term").split()):
        found["GLOSSARY"] = (FORM, m.group(0)[:40])
    return found


def _cues(
    text: str, role: str, counts: dict[str, dict[str, float]], why: dict[str, str], plain: bool
) -> float:
    """Count the cues of one text, ``role`` "shown" or "restated"; return the strongest it
    holds (0 for none). A text with no cue counts as plain (for SYSTEM_OVERVIEW) when
    ``plain`` says silence counts."""
    best = 0.0
    forms = _forms(text)
    for page, patterns in _CUES.items():
        hit = next(
            ((strength, m) for strength, pattern in patterns if (m := pattern.search(text))),
            None,
        )
        strength, cue = forms.get(page, (0.0, ""))
        if hit and hit[0] >= strength:
            strength, cue = hit[0], hit[1].group(0)
        if strength:
            counts[page][f"{'form' if strength >= FORM else 'word'}_{role}"] += 1
            why.setdefault(page, f"'{cue.strip()[:40]}'")
            best = max(best, strength)
    if not best and plain:
        counts["SYSTEM_OVERVIEW"][f"plain_{role}"] += 1
    return best


def _heading_re(words: Iterable[str]) -> re.Pattern[str]:
    alts = (re.escape(w[:-1]) + r"\w*" if w.endswith("*") else w for w in words)
    return re.compile(r"\b(?:" + "|".join(alts) + r")\b", re.I)


_SECTION_RES = {page: _heading_re(words) for page, words in SECTION_WORDS.items()}
# A record's title opens with its series and number: "ADR-0004: …", "DESIGN017 — …".
_RECORD_RE = re.compile(r"^\W*(?:" + "|".join(DECISION_RECORDS) + r")[- _]?\d+\b(?!\.\d)", re.I)


def section_page(path: str) -> tuple[str, str] | None:
    """The page a heading path ("Title > Section > Subsection") files its text under, and
    the heading that says so: the nearest heading naming a kind of page wins, and a
    decision record's title makes every line under it a decision."""
    heads = [h.strip() for h in path.split(" > ") if h.strip()]
    for h in heads:
        if _RECORD_RE.match(h):
            return "DECISION_LOG", h
    for h in reversed(heads):
        for page, pattern in _SECTION_RES.items():
            if pattern.search(h):
                return page, h
    return None


# What one page is owed, per kind of cue, by a fact's texts and places. The vote weighs
# each by ``RULE_WEIGHTS``.
CUES = (
    "heading_shown",  # a heading the shown text stands under names the page
    "heading_restated",  # ... a heading only the other evidence stands under
    "form_shown",  # the shown text has a form of the page's kind
    "word_shown",  # ... only a word
    "plain_shown",  # the shown text says nothing of its kind (SYSTEM_OVERVIEW)
    "form_restated",  # restatements with a form of the page's kind
    "word_restated",  # ... with only a word
    "plain_restated",  # restatements that say nothing of their kind (SYSTEM_OVERVIEW)
    "steps",  # restatements that are items of a numbered list (RUNBOOKS)
    "procedural",  # most evidence was filed as procedure at ingest (RUNBOOKS)
    "reversal",  # the fact reverses an earlier decision (DECISION_LOG)
)
RULE_WEIGHTS = {
    "heading_shown": HEADING * SHOWN,
    "heading_restated": HEADING * RESTATED,
    "form_shown": FORM * SHOWN,
    "word_shown": WORD * SHOWN,
    "plain_shown": WORD * SHOWN,
    "form_restated": FORM * RESTATED,
    "word_restated": WORD * RESTATED,
    "plain_restated": WORD * RESTATED,
    "steps": FORM * RESTATED,
    # Most of the evidence was filed as procedure at ingest: as strong as a form shown.
    "procedural": FORM * SHOWN,
    # As strong as "decided" in the text shown, and outvoted like it by the fact's own
    # forms and headings: what changed may be a step or a rule.
    "reversal": FORM * SHOWN,
}


@dataclass(frozen=True, slots=True)
class Tally:
    """The cues a fact shows for each page, counted (``CUES``), the first cue seen for
    each page in words for the reason, and how many distinct texts told the fact."""

    counts: dict[str, dict[str, float]]
    why: dict[str, str]
    told: int

    def votes(self, weights: dict[str, float]) -> dict[str, float]:
        return {
            page: sum(weights[cue] * n for cue, n in counts.items())
            for page, counts in self.counts.items()
        }


def count_cues(
    text: str,
    *,
    restatements: Iterable[str] = (),
    steps: int = 0,
    sections: Iterable[str] = (),
    restated_sections: Iterable[str] = (),
    procedural_votes: float = 0.0,
    reversal: bool = False,
) -> Tally:
    """Count the cues a fact's texts and places give each page (see ``route``)."""
    counts = {page: dict.fromkeys(CUES, 0.0) for page in PAGE_ORDER}
    why: dict[str, str] = {}
    if reversal:
        counts["DECISION_LOG"]["reversal"] = 1.0
        why["DECISION_LOG"] = "reversal of an earlier decision"
    shown_at = {hit for path in dict.fromkeys(sections) if (hit := section_page(path))}
    for page, heading in shown_at:
        counts[page]["heading_shown"] += 1
        why.setdefault(page, f"under '{heading[:40]}'")
    placed = set(shown_at)
    for path in dict.fromkeys(restated_sections):
        hit = section_page(path)
        if hit and hit not in placed:
            placed.add(hit)
            counts[hit[0]]["heading_restated"] += 1
            why.setdefault(hit[0], f"under '{hit[1][:40]}'")
    # A text whose heading says what it is is not "plain": its silence is explained.
    shown = _cues(text, "shown", counts, why, plain=not shown_at)
    told = 1
    for other in dict.fromkeys(restatements):
        # A sentence of the shown text, read again on its own, is not another telling:
        # it would count the shown text's cues (or its silence) twice.
        if other not in text:
            # A restatement that says nothing of its kind is no evidence against the
            # form of the text shown ("**Term** — …" mentioned in passing elsewhere).
            _cues(other, "restated", counts, why, plain=shown < FORM and not shown_at)
            told += 1
    if steps:
        counts["RUNBOOKS"]["steps"] += steps
        why.setdefault("RUNBOOKS", "numbered steps")
    if procedural_votes > 0.5:
        counts["RUNBOOKS"]["procedural"] = 1.0
        why.setdefault("RUNBOOKS", "procedural-candidate evidence")
    return Tally(counts, why, told)


def route(
    text: str,
    *,
    contested: str | None,
    procedural_votes: float,
    subject_label: str,
    day_label: str,
    restatements: Iterable[str] = (),
    steps: int = 0,
    sections: Iterable[str] = (),
    restated_sections: Iterable[str] = (),
) -> Route:
    """Pick the page for a candidate text; ``contested`` names a conflict kind if any.

    ``restatements`` are the other texts of the fact; ``steps`` counts those that are
    items of a numbered list. ``sections`` are the heading paths the shown text is written
    under, ``restated_sections`` those of the fact's other evidence: a heading that names
    a kind of page ("Glossary", a runbook, a decision record) votes for it, more weakly
    than a form the text itself shows, so a definition quoted in a decision record still
    reads as a definition.
    """
    if contested in ("value", "negation"):
        return Route("OPEN_QUESTIONS", "Conflicts", f"conflict: contradicting {contested} evidence")
    m = _QUESTION_RE.search(text)
    if m:
        return Route("OPEN_QUESTIONS", "Questions", f"uncertainty: '{m.group(0).strip()}'")
    ev = count_cues(
        text,
        restatements=restatements,
        steps=steps,
        sections=sections,
        restated_sections=restated_sections,
        procedural_votes=procedural_votes,
        reversal=contested == "reversal",
    )
    votes = ev.votes(RULE_WEIGHTS)
    best = max(PAGE_ORDER, key=lambda page: (votes[page], -PAGE_ORDER.index(page)))
    if best == "SYSTEM_OVERVIEW" and "SYSTEM_OVERVIEW" not in ev.why:
        return Route(best, subject_label, "architecture/system fact (default rule)")
    why = ev.why[best]
    if ev.told > 1:
        why += f", {votes[best]:g} of {sum(votes.values()):g} votes over {ev.told} texts"
    if best == "SYSTEM_OVERVIEW":
        return Route(best, subject_label, f"architecture/system fact: {why}")
    if best == "DECISION_LOG":
        return Route(best, day_label, f"decision: {why}")
    if best == "GOVERNANCE":
        return Route(best, "Rules", f"policy: {why}")
    if best == "RUNBOOKS":
        return Route(best, subject_label, f"procedure: {why}")
    return Route(best, _term(text) or subject_label, f"definition: {why}")


_TERM_RE = re.compile(
    r"^\W*\*\*(?P<bold>[^*]{1,40})\*\*|[\"“](?P<quoted>[^\"”]{1,40})[\"”]\s*(?:=|:|means)"
    r"|^(?P<plain>[\w .+#/-]{1,40}?)\s+(?:means|stands for|is short for|refers to|is defined as)\b"
)


def _term(text: str) -> str | None:
    """The term a definition defines, when its form names one."""
    m = _TERM_RE.search(text)
    if not m:
        return None
    return next(g for g in m.groups() if g).strip(" .:")[:60]


# A bold lead-in names its section ("**Storage.** The table …"); a plain "X:" lead-in does
# only when it is a phrase ("Billing storage: …"), since a single capitalised word before
# a colon is as often a speaker ("Ann: …") or a form field ("Owners: …").
_LEAD_RE = re.compile(
    r"^\W{0,2}\*\*(?P<bold>[^*]{2,40}?)[.:]?\*\*[.:]?\s"
    r"|^(?P<plain>[A-Z][a-z]+ [a-z][\w -]{1,30}?):\s"
)
# Labels that say how a line is meant, not what it is about.
_NOT_A_TOPIC = frozenset(
    word_list(
        "decided decision agreed reminder note update fyi todo done closed fixed question "
        "answer summary context why how rule policy glossary term"
    )
)
_ANY_LEAD_RE = re.compile(r"^[^:.?!]{1,40}:\s+")
_WORD_RE = re.compile(r"[\w][\w.+#/-]*")
_NOT_TOPICAL = NUM | DATE | HOST | IDENT | STOP | WEAK | MARK | NEG_CUE


def _verb_like(word: str) -> bool:
    # Past forms ("raised", "written") report an event; a topic is a thing.
    low = word.lower()
    return low.endswith(("ed", "en")) and len(low) > 4


def section_name(text: str, core: Iterable[str]) -> str | None:
    """The section a reader would file this fact under, in the fact's own words.

    A lead-in label when the text opens with one; else the first run of words (at most
    three) that name the fact's subject, as written: "The staging database runs …" gives
    "Staging database", not a string of keywords. Hosts, versions and identifiers are
    left out: a section holds every fact about the thing, whichever host it is on.
    """
    m = _LEAD_RE.match(text)
    if m:
        label = (m.group("bold") or m.group("plain")).strip(" .:")
        first = label.split()[0].lower()
        if first not in _NOT_A_TOPIC and not _verb_like(first) and len(label.split()) <= 4:
            return label[:1].upper() + label[1:]
    # Whatever else a lead-in is (a speaker, a form field), the subject follows it.
    body = text[m.end() :] if m else _ANY_LEAD_RE.sub("", text, count=1)
    core = set(core)
    run: list[str] = []
    for word in _WORD_RE.findall(body):
        canon, flags = token_info(word)
        if canon in core and not flags & _NOT_TOPICAL and not _verb_like(word):
            run.append(word.strip(".,;:"))
            if len(run) == 3:
                break
        elif run:
            break
    if not run:
        return None
    name = " ".join(run)
    return name[:1].upper() + name[1:]
