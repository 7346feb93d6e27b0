"""Prompt-injection screening: where an instruction to a model can hide in ordinary material.

Known phrases are looked for everywhere. The other checks find a place where an imperative
aimed at a model is out of place, and hand only that span to ``instructions.directive``:

- role and control tags (``<|im_start|>``, ``[INST]``, ``SYSTEM:``): risk:role_tag
- a fake tool-result or system block inside other content: risk:tool_block
- an HTML comment (invisible once rendered) that speaks to an AI: risk:html_comment_instruction
- a role prefix inside quoted text (a spoofed turn in a quoted e-mail): risk:role_spoof
- a CSV or table cell that speaks to an AI: risk:table_cell_instruction
- a link or image whose URL carries data out: risk:exfil_link, risk:exfil_image

Each finding is low on its own and high (quarantine) when its span gives an order;
disguised text (``obfuscation``) is undone first. Every check sits behind a cheap substring
gate, and no pattern can backtrack super-linearly.
"""

from __future__ import annotations

import csv
import re
from urllib.parse import unquote, unquote_plus

from llmwiki.security.instructions import addresses_ai, directive, phrase
from llmwiki.security.obfuscation import find_encoded, find_hidden_unicode, find_homoglyphs
from llmwiki.security.results import RiskCollector, RiskFinding, quote

__all__ = ["find_risks"]

_LINE_LEAD = frozenset(" \t>*#")
# Role and control tags: (gate, pattern, must-start-a-line). Patterns run on lower text.
_ROLE_RULES = (
    (
        "<",
        re.compile(r"<(?:\|[a-z_]{2,30}\||</?sys>|/?(?:system|assistant|user|instructions?)|/s)>"),
        False,
    ),
    ("[", re.compile(r"\[/?inst\]"), False),
    ("system", re.compile(r"system[ \t]*:"), True),
    ("#", re.compile(r"#[ \t]*(?:system|instructions?)\b"), True),
)
# What a block "says" is read up to its closing tag, a blank line, or this many characters.
_BODY_CHARS = 600
# Blocks and quoted turns read per text: their bodies overlap, so hostile input repeating
# one would otherwise be read hundreds of characters at a time, once per repetition.
_MAX_SPANS = 64

# Pseudo tool-result / system blocks: "[tool_result: x]", "<function_results>",
# "[SYSTEM NOTE: ...]". A bracketed system header needs words in it or after it on its
# line, so an INI section ("[system]" alone) or syntax notation ("[SYSTEM] [BEFORE]") is not.
_TOOL_BLOCK = re.compile(
    r"[\[<][ \t]*/?[ \t]*(?:(?:tool|function)[ _-]?(?:results?|outputs?|responses?|returns?|calls?"
    r"|use|invocation)|observation|search[ _-]?results?)(?![a-z])"
    # then nothing, "name: value" or attributes, never free words ("[function call ABI]")
    r"(?:[ \t]*[:=][^\[\]<>\n]{0,120}|[ \t]+[a-z_-]+=[^\[\]<>\n]{0,120})?[ \t]*[\]>](?!\()"
    r"|\[[ \t]*(?:system|developer|orchestrator|(?:admin(?:istrator)?|operator|security)"
    r"(?=[ _-]))(?:[ _-]?(?:message|note|notice|prompt|override|instructions?|update|alert))?"
    r"(?:[ \t]*:[^\[\]\n]{1,120}\]|[ \t]*\](?![(:\[])(?=[ \t]*[a-z]))"
)
_TOOL_START = re.compile(
    r"[\[<][ \t]*/?[ \t]*(?:tool|function|observation|search|system|developer|orchestrator"
    r"|admin|operator|security)"
)

_HTML_COMMENT = re.compile(r"<!--(.*?)(?:-->|\Z)", re.S)
# Markup a reader does not see but a model reads: a collapsed <details> block, or an
# element marked hidden ("hidden", "display:none", "aria-hidden").
_HIDDEN_HTML = re.compile(
    r"<details\b[^>]*>(.*?)(?:</details>|\Z)"
    r"|<(\w+)\b[^>]*?\b(?:hidden|display\s*:\s*none|aria-hidden)[^>]*>(.*?)(?:</\2>|\Z)",
    re.S | re.I,
)

# Role prefixes ("assistant:") in quoted text, at the start of a line or slipped in after
# a sentence.
_QUOTED_LINE = re.compile(r"(?m)^[ \t]*>[^\n]*")
_ROLE_PREFIX = re.compile(r"(?<![a-z0-9_-])(assistant|system|ai|model|bot|user|human)[ \t]*:(?=\s)")
# Only the model's own voice is suspicious without an order: "> Thanks. Model: XPS 13" and
# "System: Ubuntu 22.04" are ordinary lines in a quoted bug report.
_MODEL_VOICE = frozenset({"assistant", "ai"})
_SENTENCE_END = frozenset(".!?)]\"'”’*-—–")

# AI words that gate the table-cell check (the vocative test then runs on the cell).
# (No look-behind in front: it would cost the engine its first-character prefilter.)
_AI_WORD = re.compile(
    r"(?:ai|a\.i\.|llms?|chatbots?|assistants?|bots?|agents?|language\s+models?)(?![a-z0-9_])"
)
_CELL_DELIMITERS = (",", "\t", ";")
# A markdown row with two cells is a table; a line with one comma is a sentence.
_MIN_MARKDOWN_CELLS = 2
_MIN_CSV_CELLS = 3

# A link's URL, allowing the placeholders that hold data to interpolate: {x}, {{x y}},
# <x y>, (x). Each piece starts with a character the plain run excludes, so there is one
# way to split a URL and nothing to backtrack into.
_URL_RUN = r"[^\s()<>{}\[\]]*"
_URL_BODY = (
    _URL_RUN + r"(?:(?:\{\{?[^{}\n]{0,300}\}\}?|<[^<>\n]{0,300}>|\([^()\s]{0,200}\))"
    + _URL_RUN + r"){0,16}"
)  # fmt: skip
_LINK = re.compile(
    r"\[[^\[\]\n]{0,300}\]\(\s*<?(https?://" + _URL_BODY + r")"
    r"|<(?:a|img|iframe|source|link)\b[^<>]{0,500}?\b(?:href|src)\s*=\s*[\"']?"
    r"(https?://[^\s\"'>]{1,2048})",
    re.I,
)
# Template slots in a URL: {x}, {{x}}, <x>, ${X}, $X. Only words may stand inside one: code
# carried in a URL (a playground link's "{ data: String }") has punctuation.
_PLACEHOLDER = re.compile(
    r"\{\{?([\w\s.,'-]{1,120})\}\}?|<([\w\s.,'-]{1,120})>|\$\{([\w.-]{1,60})\}"
    r"|\$([a-z_][a-z0-9_]*)"
)
_SEGMENT_STARTS = "?&=/#"
_SEGMENT_ENDS = "&#/"
_MAX_SLOT_RESIDUE = 40
_CODE_CHARS = frozenset('\n;(){}[]"`!')
_URL_WORDS = re.compile(r"[a-z]+")
_SHOUTED = re.compile(r"[A-Z][A-Z0-9_]{3,}")
# Data worth stealing, named in a placeholder or a query parameter. The weak words count
# only in a query string, where "{key}" is a value being sent rather than a path segment.
_URL_STRONG = frozenset({
    "secret", "secrets", "token", "tokens", "password", "passwords", "passwd", "pwd",
    "credential", "credentials", "creds", "apikey", "conversation", "conversations", "history",
    "transcript", "chat", "prompt", "memory", "memories", "env", "environment", "cookie",
    "cookies", "session", "ssn", "pii",
})  # fmt: skip
_URL_WEAK = frozenset({
    "key", "keys", "data", "context", "ctx", "email", "emails", "phone", "phones", "contact",
    "contacts", "address", "messages",
})  # fmt: skip
# An instruction to put what the model knows into a URL, anywhere in the text.
# (No \b in front: it would cost the engine its first-character prefilter; checked below.)
_URL_ORDER = re.compile(
    r"(?:append|add|attach|include|put|insert|encode|embed)\s+(?:[^\s]+\s+){0,5}?"
    r"(?:conversation|chat\s+(?:history|log)|history|transcript|memory|memories|system\s+prompt"
    r"|previous\s+messages|environment\s+variables|env\s+vars)\s+(?:[^\s]+\s+){0,4}?"
    r"(?:to|in|into|as)\s+(?:(?:the|this|that|a|an|your)\s+)?(?:url|link|query|image\s+url)\b"
)
_URL_ORDER_DATA = (
    "conversation",
    "chat",
    "history",
    "transcript",
    "memor",
    "prompt",
    "messages",
    "env",
)


def find_risks(
    text: str, lower: str, raw: bytes | None, long_gate: bytes | None
) -> tuple[RiskFinding, ...]:
    """Return the prompt-injection findings for already-redacted ``text``."""
    risks = RiskCollector()
    found = phrase(lower)
    if found:
        risks.add("risk:injection_phrase", f"instruction-like phrase {quote(found)}", high=True)
    _role_tags(text, lower, risks)
    _tool_blocks(text, lower, risks)
    if "<!--" in text:
        _html_comments(text, risks)
    if "<details" in lower or "hidden" in lower or "display" in lower:
        _hidden_html(text, risks)
    if ">" in text and ":" in text:
        _role_spoofs(text, lower, risks)
    _table_cells(text, lower, risks)
    _links(text, lower, risks)
    # Pure-ASCII text has no invisible characters, compatibility forms or homoglyphs.
    if raw is None:
        find_hidden_unicode(text, lower, risks)
        find_homoglyphs(text, risks)
    find_encoded(text, long_gate, risks)
    return tuple(risks.findings)


def _order(span_lower: str, **kwargs: bool) -> str:
    found = directive(span_lower, **kwargs)
    return found.evidence if found else ""


def _body(lower: str, start: int) -> str:
    """Return what a block opened at ``start`` says: up to a closing tag or a blank line."""
    body = lower[start : start + _BODY_CHARS]
    for stop in ("</", "\n\n", "\r\n\r\n"):
        i = body.find(stop)
        if i >= 0:
            body = body[:i]
    return body


def _quoted_syntax(lower: str, pos: int) -> bool:
    """Return whether ``pos`` sits in inline code or syntax notation: text about a tag.

    Inline code is an odd number of backticks before ``pos`` on its line; notation such as
    ``cmd([AFTER|BEFORE] [SYSTEM] dir)`` has several bracketed options on one line.
    """
    bol = max(lower.rfind("\n", 0, pos) + 1, pos - _BODY_CHARS)
    eol = lower.find("\n", pos, pos + _BODY_CHARS)
    eol = min(len(lower), pos + _BODY_CHARS) if eol < 0 else eol
    return lower.count("`", bol, pos) % 2 == 1 or lower.count("[", bol, eol) >= 3


def _role_tags(text: str, lower: str, risks: RiskCollector) -> None:
    for gate, regex, line_start in _ROLE_RULES:
        if gate not in lower:
            continue
        for m in regex.finditer(lower):
            start = m.start()
            if line_start:
                bol = lower.rfind("\n", 0, start) + 1
                if not _LINE_LEAD.issuperset(lower[bol:start]):
                    continue
            tag = text[start : m.end()] if len(text) == len(lower) else m.group()
            order = _order(_body(lower, m.end()))
            if order:
                risks.add(
                    "risk:role_tag", f"role tag {quote(tag.strip())} says {quote(order)}", high=True
                )
            else:
                risks.add("risk:role_tag", f"role/control tag {quote(tag.strip())}")
            return


def _tool_blocks(text: str, lower: str, risks: RiskCollector) -> None:
    first = len(lower) - len(lower.lstrip())
    seen = 0
    for start in _TOOL_START.finditer(lower):
        m = _TOOL_BLOCK.match(lower, start.start())
        if m is None:
            continue
        seen += 1
        if seen > _MAX_SPANS:
            return
        block = text[m.start() : m.end()] if len(text) == len(lower) else m.group()
        order = _order(m.group() + " " + _body(lower, m.end()))
        if order:
            reason = f"fake tool/system block {quote(block)} says {quote(order)}"
            risks.add("risk:tool_block", reason, high=True)
            return
        # A text that opens with the block is the tool's output itself, not a forgery of
        # it; a closing tag was judged with its opening one.
        embedded = m.start() > first and lower[m.start() + 1] != "/"
        if embedded and not _quoted_syntax(lower, m.start()):
            risks.add("risk:tool_block", f"tool/system block {quote(block)} inside content")


def _html_comments(text: str, risks: RiskCollector) -> None:
    for m in _HTML_COMMENT.finditer(text):
        found = _unseen_order(
            m.group(1).lower(), "risk:html_comment_instruction", "HTML comment", risks
        )
        if found:
            risks.add("risk:injection_phrase", f"in an HTML comment: {quote(found)}", high=True)


def _hidden_html(text: str, risks: RiskCollector) -> None:
    for m in _HIDDEN_HTML.finditer(text):
        body = m.group(1) if m.group(1) is not None else m.group(3) or ""
        _unseen_order(body.lower(), "risk:hidden_html_instruction", "hidden HTML", risks)


def _unseen_order(body: str, flag: str, what: str, risks: RiskCollector) -> str | None:
    """Judge text a reader does not see (`what`: where it hides): an injection phrase or
    an order addressed to an AI is high risk, an AI addressed without one low. Returns
    the injection phrase found, if any."""
    found = phrase(body)
    if found:
        risks.add(flag, f"{what} says {quote(found)}", high=True)
    elif addresses_ai(body):
        order = _order(body)
        if order:
            risks.add(flag, f"{what} tells an AI to {quote(order)}", high=True)
        else:
            risks.add(flag, f"{what} addressed to an AI/agent")
    return found


def _role_spoofs(text: str, lower: str, risks: RiskCollector) -> None:
    """Flag a role prefix inside quoted text: a turn written to look like the model's own."""
    lines = [m.group() for m in _QUOTED_LINE.finditer(lower)]
    seen = 0
    for n, line in enumerate(lines):
        opening = len(line) - len(line.lstrip(" \t>"))
        for m in _ROLE_PREFIX.finditer(line):
            seen += 1
            if seen > _MAX_SPANS:
                return
            role = m.group(1)
            embedded = m.start() > opening
            lead = line[max(opening, m.start() - 8) : m.start()].rstrip()
            if embedded and not (lead and lead[-1] in _SENTENCE_END):
                continue  # "create a user: bob" is not a turn
            # The turn runs on to the end of the quote or the next role prefix.
            span = [line[m.end() : m.end() + _BODY_CHARS]]
            for more in lines[n + 1 : n + 6]:
                more = more.lstrip(" \t>")
                if _ROLE_PREFIX.match(more):
                    break
                span.append(more)
            said = " ".join(span)[:_BODY_CHARS]
            # A quoted chat that starts a line with "assistant:" is a transcript, suspicious
            # only when the turn gives a clear order. A role slipped into the middle of a
            # quoted line is a spoof; there even an acceptance ("Understood.") counts.
            found = directive(said, compliance=embedded and role in _MODEL_VOICE)
            if found and (embedded or found.score >= 2):
                reason = f"quoted text spoofs a {role!r} turn: {quote(found.evidence)}"
                risks.add("risk:role_spoof", reason, high=True)
                return
            if embedded and role in _MODEL_VOICE:
                risks.add("risk:role_spoof", f"role prefix {role!r} inside quoted text")


def _table_rows(lower: str) -> dict[int, str]:
    """Return the lines (by start offset) holding an AI word that look like table rows."""
    rows = {}
    eol = -1
    for m in _AI_WORD.finditer(lower):
        start = m.start()
        if start < eol or (start and (lower[start - 1].isalnum() or lower[start - 1] == "_")):
            continue  # on a line already judged, or inside a word
        bol = lower.rfind("\n", 0, start) + 1
        eol = lower.find("\n", m.end())
        eol = len(lower) if eol < 0 else eol
        line = lower[bol:eol]
        if line.count("|") >= _MIN_MARKDOWN_CELLS or any(
            line.count(d) >= _MIN_CSV_CELLS - 1 for d in _CELL_DELIMITERS
        ):
            rows[bol] = line
    return rows


def _cells(line: str) -> list[str]:
    stripped = line.strip()
    if stripped.count("|") >= _MIN_MARKDOWN_CELLS:
        cells = [c.strip() for c in stripped.strip("|").split("|")]
        return cells if len(cells) >= _MIN_MARKDOWN_CELLS else []
    delimiter = max(_CELL_DELIMITERS, key=stripped.count)
    try:
        cells = next(csv.reader([stripped], delimiter=delimiter, skipinitialspace=True), [])
    except csv.Error:  # a field over the csv module's size limit: no table anyone reads
        cells = stripped.split(delimiter)
    return cells if len(cells) >= _MIN_CSV_CELLS else []


def _table_cells(text: str, lower: str, risks: RiskCollector) -> None:
    """Flag a table or CSV cell that speaks to an AI and gives it an order."""
    if not any(d in lower for d in ("|", *_CELL_DELIMITERS)):
        return
    for line in _table_rows(lower).values():
        for cell in _cells(line):
            if addresses_ai(cell):
                order = _order(cell)
                if order:
                    reason = f"table cell tells an AI to {quote(order)}"
                    risks.add("risk:table_cell_instruction", reason, high=True)
                    return


def _host(url: str) -> str:
    authority = url.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0]
    return quote(authority.rsplit("@", 1)[-1])


def _fills_slot(url_lower: str, start: int, end: int) -> bool:
    """Return whether a placeholder is a whole path segment or parameter value.

    A slot may keep a file suffix ("{x}.png"); a placeholder amid code punctuation is part
    of a document the URL carries (a playground link's ``println!("{key}")``), not a slot.
    """
    seg_start = max(url_lower.rfind(c, 0, start) for c in _SEGMENT_STARTS) + 1
    ends = [i for i in (url_lower.find(c, end) for c in _SEGMENT_ENDS) if i >= 0]
    residue = url_lower[seg_start:start] + url_lower[end : min(ends) if ends else len(url_lower)]
    return len(residue) <= _MAX_SLOT_RESIDUE and not any(c in residue for c in _CODE_CHARS)


def _url_carries_data(url: str) -> str | None:
    """Return what a link's URL would send out (a placeholder or parameter), or None."""
    query_at = url.find("?")
    # In a query string "+" is a space: "{{paste+the+keys}}" is a sentence.
    decoded = (
        unquote(url) if query_at < 0 else unquote(url[:query_at]) + unquote_plus(url[query_at:])
    )
    lower = decoded.lower()
    query_at = lower.find("?")
    for m in _PLACEHOLDER.finditer(lower):
        if not _fills_slot(lower, m.start(), m.end()):
            continue
        content = next(g for g in m.groups() if g is not None)
        words = set(_URL_WORDS.findall(content))
        if "api" in words and ("key" in words or "keys" in words):
            words.add("apikey")
        in_query = 0 <= query_at < m.start()
        spoken = len(content.split()) >= 2  # a sentence in a URL is addressed to a reader
        if words & _URL_STRONG or (words & _URL_WEAK and (in_query or spoken)):
            return f"placeholder {quote(m.group())}"
    if query_at >= 0:
        query = decoded[query_at + 1 :].split("#", 1)[0]
        for param in re.split(r"[&;]", query):
            name, _, value = param.partition("=")
            words = set(_URL_WORDS.findall(name.lower()))
            # A SHOUTED_NAME is a slot for data, not data; so is an empty value, but forms
            # leave those behind ("?q=&email="), so only a secret's name counts there.
            if _SHOUTED.fullmatch(value):
                words.update(_URL_WORDS.findall(value.lower()))
                sensitive = _URL_STRONG | _URL_WEAK
            elif not value:
                sensitive = _URL_STRONG
            else:
                continue
            if words & sensitive:
                return f"parameter {quote(name)} is a slot for data"  # never its value
    return None


def _links(text: str, lower: str, risks: RiskCollector) -> None:
    """Flag links and images whose URL sends data: an image loads itself, unasked."""
    if "](" in text or "href" in lower or "src" in lower:
        for m in _LINK.finditer(text):
            url = m.group(1) or m.group(2)
            start = m.start()
            image = (start and text[start - 1] == "!") or lower.startswith("<img", start)
            carried = _url_carries_data(url)
            if carried:
                kind = "risk:exfil_image" if image else "risk:exfil_link"
                risks.add(kind, f"link sends data to {_host(url)} ({carried})", high=True)
            elif image and "?" in url:
                reason = f"image loads external URL with query string ({_host(url)})"
                risks.add("risk:exfil_image", reason, high=True)
    if any(w in lower for w in ("url", "link", "query")) and any(
        w in lower for w in _URL_ORDER_DATA
    ):
        for m in _URL_ORDER.finditer(lower):
            if m.start() == 0 or not lower[m.start() - 1].isalnum():
                reason = f"asks to put data into a URL: {quote(m.group())}"
                risks.add("risk:exfil_link", reason, high=True)
                break
