"""The documents of each export kind, written from a `State` and nothing else.

No database access and no clock: the same state gives the same text. Every statement a
document makes is recorded with its file and line for the evidence ledger.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict

from llmwiki.vocabulary import PAGE_TITLES
from llmwiki.wiki import GENERAL_SECTION as GENERAL
from reviews.exports.selection import ContextEpisode, Item, Question, State

DEFAULT_BUDGET = 12_000
MIN_BUDGET = 1_000

# The pages of a handoff bundle, in the order INDEX lists them.
BUNDLE_PAGES = (
    "SYSTEM_OVERVIEW",
    "AGENT_INSTRUCTIONS",
    "DECISION_LOG",
    "OPEN_QUESTIONS",
    "GOVERNANCE",
    "RUNBOOKS",
    "TRUST_MODEL",
    "GLOSSARY",
)
# Said in every bundle's AGENT_INSTRUCTIONS, before the project's own reviewed instructions.
HOUSE_RULES = (
    "Read README, INDEX and TRUST_MODEL before acting on anything here.",
    "Only the claims in these files are reviewed memory; episodic context is not.",
    "Treat OPEN_QUESTIONS as undecided: do not act on either side without asking.",
    "Stop for human approval before changing security, privacy, policy or production.",
)


# Characters a markdown renderer that passes HTML through would read as markup, and a
# backslash that would otherwise escape the backslash put before one of them.
_HTML_SIGNIFICANT = re.compile(r"\\(?=[\\<>&])|[<>&]")


def md(text: str) -> str:
    """Project text (claims, names, sections) as markdown that shows it and runs nothing.

    `<`, `>` and `&` are backslash-escaped: CommonMark renders `\\<script\\>` as the text
    `<script>`, even where raw HTML is allowed, while the rest of the text's markdown
    (emphasis, code) still renders and a reader of the raw file sees it almost unchanged.
    """
    return _HTML_SIGNIFICANT.sub(lambda m: "\\" + m.group(), text)


def claim_line(item: Item) -> str:
    return f"- {md(' '.join(item.text.split()))} ([why?]({item.provenance}))"


def withheld_claims(state: State) -> str:
    """What the audience is not shown, said up front: "" when no claim was withheld."""
    reasons = sorted(
        (key.removeprefix("claim:"), n)
        for key, n in state.withheld.items()
        if key.startswith("claim:")
    )
    withheld = sum(n for _, n in reasons)
    if not withheld:
        return ""
    why = ", ".join(f"{n} {reason}" for reason, n in reasons)
    shown = len(state.claim_ids)
    if not shown:
        return f"_All {withheld} reviewed claim(s) are withheld from this audience ({why})._"
    total = withheld + shown
    return f"_{withheld} of {total} reviewed claims are withheld from this audience ({why})._"


def _none_yet(state: State, default: str) -> str:
    """An empty section's line: "none yet" would be untrue when claims were withheld."""
    note = withheld_claims(state)
    if not note:
        return default
    return "_Nothing reviewed for this audience._" if state.claim_ids else note


# Said at the top of every startup packet. The packet stands alone: it names no file it
# does not come with.
PACKET_RULES = (
    "Only the claims in this packet are reviewed memory; each links to why it is here.",
    "Follow every rule under Governance; one this packet had no room for is named at its "
    "end and binds you as well: read it before you act.",
    "Treat open questions as undecided: do not act on either side without asking.",
    "Stop for human approval before changing security, privacy, policy or production.",
)
# Where an agent finds more, by how it reads the packet: as an exported file (the ledger
# and manifest come with it), or over the JSON API or MCP (only the memory's own tools).
PACKET_MORE = {
    "file": "EVIDENCE_LEDGER.json beside this file maps each line to its claims, evidence "
    "episodes and sources; MANIFEST.json counts what was withheld.",
    "api": "Ask the memory for the rest: memory_retrieve, memory_provenance and "
    "memory_open_questions over MCP, or GET retrieve?q=…, provenance/claim/{id}, pages/{key} "
    "and open-questions under /api/projects/{slug}/ with your token.",
}


class Ledger:
    """Statements by file and line: what each line says and what it rests on."""

    def __init__(self) -> None:
        self.statements: list[dict] = []

    def claim(self, file: str, line: int, item: Item) -> None:
        self.statements.append(
            {
                "file": file,
                "line": line,
                "kind": "claim",
                "claim_id": item.claim_id,
                "page": item.page,
                "revision_id": item.revision_id,
                "provenance": item.provenance,
                "evidence": [asdict(e) for e in item.evidence],
            }
        )

    def question(self, file: str, line: int, question: Question) -> None:
        self.statements.append(
            {
                "file": file,
                "line": line,
                "kind": "open-question",
                "conflict_id": question.conflict_id,
                "claim_ids": list(question.claim_ids),
                "evidence_episode_ids": list(question.evidence_ids),
                "provenance": question.provenance,
            }
        )

    def episode(self, file: str, line: int, episode: ContextEpisode) -> None:
        self.statements.append(
            {
                "file": file,
                "line": line,
                "kind": "episode",
                "episode_id": episode.episode_id,
                "trust": "unreviewed",
                "provenance": episode.provenance,
                "evidence": [asdict(episode.evidence)],
            }
        )


class Doc:
    """One markdown file being written; claim lines are recorded in the ledger as they go."""

    def __init__(self, name: str, ledger: Ledger) -> None:
        self.name, self.ledger, self.lines = name, ledger, []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def size_with(self, *lines: str) -> int:
        return len(self.text()) + sum(len(line) + 1 for line in lines)

    def claims(self, items: Iterable[Item], *, by_section: bool = True, level: str = "###") -> None:
        current = None
        for item in items:
            section = item.section or GENERAL
            if by_section and section != current:
                self.add("", f"{level} {md(section)}", "")
                current = section
            self.claim(item)

    def claim(self, item: Item) -> None:
        self.lines.append(claim_line(item))
        self.ledger.claim(self.name, len(self.lines), item)

    def questions(self, questions: list[Question], level: str = "###") -> None:
        for q in questions:
            self.add("", f"{level} {md(q.subject)}", "")
            self.lines.append(f"_Conflict {q.conflict_id} ({q.status})._ ([why?]({q.provenance}))")
            self.ledger.question(self.name, len(self.lines), q)
            self.add("", *(f"- {md(side)}" for side in q.sides))
            if q.withheld_sides:
                self.add(f"- _{q.withheld_sides} side(s) withheld from this audience_")

    def episodes(self, episodes: list[ContextEpisode]) -> None:
        if not episodes:
            return
        self.add("", "## Episodic context (not reviewed)", "")
        for e in episodes:
            self.lines.append(
                f"- {e.occurred_at[:10]} ({e.kind}, episode {e.episode_id}): {md(e.text)} "
                f"([why?]({e.provenance}))"
            )
            self.ledger.episode(self.name, len(self.lines), e)

    def text(self) -> str:
        return "\n".join(self.lines).strip("\n") + "\n"


def _header(doc: Doc, title: str, state: State) -> None:
    doc.add(
        f"# {title}: {md(state.project_name)}",
        "",
        f"_Audience: {state.audience}. Reviewed memory as of {state.as_of:%Y-%m-%d %H:%M} UTC. "
        "Every claim links to why it is here; EVIDENCE_LEDGER.json maps each line to its "
        "claims, evidence episodes and sources._",
    )
    if withheld_claims(state):
        doc.add("", withheld_claims(state))
    if state.description:
        doc.add("", md(state.description.strip()))


def _section(
    doc: Doc,
    state: State,
    title: str,
    keys: tuple[str, ...],
    empty: str = "_Nothing reviewed yet._",
) -> None:
    doc.add("", f"## {title}")
    items = state.items(*keys)
    if items:
        doc.claims(items)
    else:
        doc.add("", _none_yet(state, empty))


def _withheld(doc: Doc, state: State) -> None:
    if state.withheld:
        total = sum(state.withheld.values())
        doc.add(
            "",
            f"_{total} item(s) withheld from this audience; MANIFEST.json counts them by reason._",
        )


def system_profile(state: State, ledger: Ledger) -> dict[str, str]:
    doc = Doc("SYSTEM_PROFILE.md", ledger)
    _header(doc, "System profile", state)
    _section(doc, state, "Architecture and components", ("SYSTEM_OVERVIEW",))
    _section(doc, state, "Constraints", ("GOVERNANCE", "TRUST_MODEL"))
    _section(doc, state, "Glossary", ("GLOSSARY",), "_No terms reviewed yet._")
    doc.episodes(state.episodes)
    _withheld(doc, state)
    return {doc.name: doc.text()}


def receiver_brief(state: State, ledger: Ledger) -> dict[str, str]:
    doc = Doc("RECEIVER_BRIEF.md", ledger)
    _header(doc, "Receiver brief", state)
    _section(doc, state, "Decisions", ("DECISION_LOG",))
    doc.add("", "## Open questions")
    if state.questions:
        doc.questions(state.questions)
    else:
        doc.add("", "_No open questions._")
    _section(doc, state, "Governance", ("GOVERNANCE", "TRUST_MODEL"))
    doc.add("", "## Risks", "")
    doc.add(*_risks(state))
    doc.episodes(state.episodes)
    return {doc.name: doc.text()}


def _risks(state: State) -> list[str]:
    items = state.items(*state.pages)
    thin = [i for i in items if len(i.evidence) < 2]
    empty = [k for k in BUNDLE_PAGES if k != "OPEN_QUESTIONS" and not state.items(k)]
    lines = [
        f"- {len(state.questions)} open question(s) are undecided.",
        f"- {len(thin)} of {len(items)} claim(s) rest on a single evidence episode.",
    ]
    if empty:
        lines.append(f"- No reviewed claims yet on: {', '.join(empty)}.")
    if state.withheld:
        lines.append(
            f"- {sum(state.withheld.values())} item(s) are withheld from this audience "
            "(counted by reason in MANIFEST.json)."
        )
    return lines


def startup_packet(
    state: State, ledger: Ledger, budget: int, reader: str = "file"
) -> tuple[dict[str, str], dict]:
    """Instructions, governance, runbooks, current state and open questions, with an
    index, cut to `budget` characters.

    Claims and open questions go in by priority until the budget would be passed; the rest
    are named at the end (every governance rule by id), with where to read them, so an
    agent knows what it did not load. `reader` is how the agent gets the packet: "file"
    (an export, with its ledger and manifest) or "api" (the JSON API or MCP), and the packet
    points only to what that reader can reach. Returns the files and what was left out.
    """
    if budget < MIN_BUDGET:
        raise ValueError(f"budget {budget} is below the minimum of {MIN_BUDGET} characters")
    doc = Doc("STARTUP_PACKET.md", ledger)
    doc.add(
        f"# Startup packet: {md(state.project_name)}",
        "",
        f"_Audience: {state.audience}. Reviewed memory as of {state.as_of:%Y-%m-%d %H:%M} UTC._",
    )
    if withheld_claims(state):
        doc.add("", withheld_claims(state))
    if state.description:
        doc.add("", md(state.description.strip()))
    more = PACKET_MORE[reader].replace("{slug}", state.project_slug)
    doc.add("", "## How to use this packet", "", *(f"- {rule}" for rule in PACKET_RULES))
    doc.add(f"- {more}")
    index = ["", "## Index", ""] + [
        f"- {key}: {len(p.items)} claim(s), revision {p.revision}"
        for key, p in sorted(state.pages.items())
    ]
    index.append(f"- Open questions: {len(state.questions)}")
    everything = {k: [i.claim_id for i in p.items] for k, p in state.pages.items() if p.items}
    # Room kept for the index and for the longest left-out note: one naming everything.
    worst = _left_out(state, budget, everything, state.questions, reader)
    reserve = sum(len(line) + 1 for line in [*index, *worst])
    left: dict[str, list[int]] = {}
    skipped: list[Question] = []
    for title, keys in (
        ("Agent instructions", ("AGENT_INSTRUCTIONS",)),
        ("Governance", ("GOVERNANCE",)),
        ("Open questions", ()),
        ("Runbooks", ("RUNBOOKS",)),
        ("Current state", ("SYSTEM_OVERVIEW", "DECISION_LOG")),
    ):
        if not keys:
            skipped = _open_questions(doc, state.questions, budget - reserve)
            continue
        items = state.items(*keys)
        if not items:
            continue
        heading = ["", f"## {title}", ""]
        if doc.size_with(*heading, claim_line(items[0])) + reserve > budget:
            for i in items:
                left.setdefault(i.page, []).append(i.claim_id)
            continue
        doc.add(*heading)
        for item in items:
            if doc.size_with(claim_line(item)) + reserve > budget:
                left.setdefault(item.page, []).append(item.claim_id)
            else:
                doc.claim(item)
    doc.add(*index)
    if left or skipped:
        doc.add(*_left_out(state, budget, left, skipped, reader))
    text = doc.text()
    if len(text) > budget:
        raise ValueError(f"budget {budget} is too small for the packet's index ({len(text)} chars)")
    left_out = {
        "budget": budget,
        "chars": len(text),
        "claims": {k: v for k, v in sorted(left.items())},
        "open_questions": [q.conflict_id for q in skipped],
    }
    return {doc.name: text}, left_out


def _left_out(
    state: State, budget: int, left: dict[str, list[int]], skipped: list[Question], reader: str
) -> list[str]:
    """What the packet did not load and where to read it; every governance rule by id."""
    lines = ["", f"## Left out (budget {budget:,} characters)", ""]
    for key, ids in sorted(left.items()):
        named = ids if key == "GOVERNANCE" else ids[:8]
        shown = ", ".join(str(i) for i in named) + (", …" if len(ids) > len(named) else "")
        also = f" or GET pages/{key}" if reader == "api" else ""
        lines.append(
            f"- {key}: {len(ids)} claim(s) not loaded (ids {shown}); "
            f"read them at {state.pages[key].link}{also}."
        )
    if skipped:
        shown = ", ".join(str(q.conflict_id) for q in skipped)
        also = " or with memory_open_questions" if reader == "api" else ""
        lines.append(
            f"- Open questions: {len(skipped)} not loaded (conflicts {shown}); "
            f"read them at {state.questions_link}{also}."
        )
    return lines


def _open_questions(doc: Doc, questions: list[Question], room: int) -> list[Question]:
    """Each open question with its sides while it fits in `room` characters; the rest."""
    if not questions:
        return []
    skipped = []
    doc.add("", "## Open questions")
    for q in questions:
        trial = Doc(doc.name, Ledger())
        trial.questions([q])
        if doc.size_with(*trial.lines) > room:
            skipped.append(q)
        else:
            doc.questions([q])
    if len(skipped) == len(questions):
        doc.add("", "_None fit the budget; see Left out._")
    return skipped


def handoff(state: State, ledger: Ledger) -> dict[str, str]:
    """The starter-bundle files: one per page, with README, INDEX and CHANGELOG."""
    files: dict[str, str] = {}
    for key in BUNDLE_PAGES:
        doc = Doc(f"{key}.md", ledger)
        page = state.pages.get(key)
        doc.add(f"# {md(page.title) if page else PAGE_TITLES[key]}")
        if key == "OPEN_QUESTIONS":
            if state.questions:
                doc.questions(state.questions, level="##")
            else:
                doc.add("", "_No open questions._")
        else:
            if key == "AGENT_INSTRUCTIONS":
                doc.add("", "## House rules", "", *(f"- {rule}" for rule in HOUSE_RULES))
            if key == "TRUST_MODEL":
                doc.add("", "## Trust labels", "", *_trust_lines(state))
            items = state.items(key)
            if items:
                doc.claims(items, level="##")
            else:
                doc.add("", _none_yet(state, "_No reviewed claims yet._"))
        files[doc.name] = doc.text()
    if state.episodes:
        doc = Doc("EPISODIC_CONTEXT.md", ledger)
        doc.add("# Episodic context")
        doc.episodes(state.episodes)
        files[doc.name] = doc.text()
    files["CHANGELOG.md"] = _changelog(state)
    files["INDEX.md"] = _index(state, files)
    files["README.md"] = _readme(state)
    return files


def _trust_lines(state: State) -> list[str]:
    return [
        "- Every claim here was approved by a named reviewer; its link shows who, when and why.",
        "- Open questions are unresolved conflicts, not decisions.",
        f"- This bundle is for the {state.audience} audience: material above that class, and any "
        "PII- or secret-flagged material below restricted, was left out.",
    ]


def _changelog(state: State) -> str:
    public = state.audience == "public"
    lines = ["# Changelog", ""]
    for at, actor, summary in reversed(state.changelog):
        lines.append(f"- {at[:10]} {md(summary)}" + ("" if public else f" ({md(actor)})"))
    if not state.changelog:
        lines.append("_No reviewed changes yet._")
    return "\n".join(lines) + "\n"


def _index(state: State, files: dict[str, str]) -> str:
    lines = ["# Index", "", "- README.md: what this bundle is and how to check it"]
    for name in sorted(files):
        key = name.removesuffix(".md")
        if key in state.pages:
            count = len(state.pages[key].items)
            lines.append(f"- {name}: {count} claim(s), from revision {state.pages[key].revision}")
        elif key == "OPEN_QUESTIONS":
            lines.append(f"- {name}: {len(state.questions)} open question(s)")
        else:
            lines.append(f"- {name}")
    lines += [
        "- EVIDENCE_LEDGER.json: every statement's claims, evidence episodes and sources",
        "- MANIFEST.json: every file's sha256 and size, the claims and revisions used",
    ]
    return "\n".join(lines) + "\n"


def _readme(state: State) -> str:
    lines = [
        f"# {md(state.project_name)}: handoff bundle",
        "",
        f"Reviewed project memory of `{state.project_slug}` for the {state.audience} audience, "
        f"as of {state.as_of:%Y-%m-%d %H:%M} UTC.",
        "",
        "Start with INDEX.md, then TRUST_MODEL.md and AGENT_INSTRUCTIONS.md.",
        'Each claim links to its "why is this here?" page in the project\'s wiki.',
        "",
        "MANIFEST.json lists every file with its sha256 and size, the claim and revision ids",
        "used, what was withheld (as counts) and the page revisions to roll back to.",
        f"Check it with `manage.py export --project {state.project_slug} --verify DIR`.",
    ]
    if state.description:
        lines[3:3] = [md(state.description.strip()), ""]
    if withheld_claims(state):
        lines[3:3] = [withheld_claims(state), ""]
    return "\n".join(lines) + "\n"
