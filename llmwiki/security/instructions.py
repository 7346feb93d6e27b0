"""What reads as an instruction aimed at a model: known phrases, addressing an AI, directives.

Pure functions over lower-cased text. ``phrase()`` runs on whole texts. ``addresses_ai()``
and ``directive()`` are meant for the short spans that the container checks in
``injection`` hand them (a comment, a table cell, a quoted line, a pseudo-block's body),
where an imperative aimed at a model is out of place; on ordinary prose they would be too
eager ("the assistant should never send credentials" is a fine sentence in a design note).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Directive", "addresses_ai", "directive", "phrase"]

_ARTICLE = r"(?:(?:the|your|my|these|those|any|all)\s+)?"
_IGNORE_REST = (
    r"\s+(?:(?:all|any)\s+)?(?:(?:of\s+)?(?:the|your|my|these|those)\s+)?"
    r"(?:previous|prior|above|preceding|earlier|former|foregoing|system|original|safety)\s+"
    r"(?:instructions?|prompts?|directions|directives|rules|guidelines|guardrails|messages"
    r"|context|constraints|polic(?:y|ies))\b"
    r"|\s+(?:all|any)\s+(?:instructions?|prompts?|rules|guidelines)\b"
    r"|\s+(?:everything|all)\s+(?:above|before|prior|you\s+(?:were|have\s+been)\s+told)\b"
)
_DONT_TELL_REST = (
    r"\s+(?:tell|inform|alert|notify|warn|mention\s+this\s+to)\s+(?:(?:the|your|any)\s+)?"
    r"(?:reviewers?|users?|humans?|maintainers?|admins?|administrators?|operators?"
    r"|moderators?)\b"
)
_BYPASS_REST = (
    r"\s+(?:the\s+)?(?:human\s+)?(?:review|reviewers?|approval|moderation|safety\s+checks?)\b"
)


def _phrase_rule(gates: tuple[str, ...], pattern: str) -> tuple[tuple[str, ...], re.Pattern[str]]:
    return gates, re.compile(pattern)


# Matched against lower-cased text. Each rule runs only when one of its gate words occurs,
# and each pattern opens with a literal word followed by literal words joined by \s+, so
# there is nothing ambiguous to backtrack into.
_PHRASE_RULES = (
    *(_phrase_rule((w,), f"{w}(?:{_IGNORE_REST})") for w in ("ignore", "disregard", "forget")),
    _phrase_rule(("override",), r"override\s+" + _ARTICLE + r"(?:previous\s+|prior\s+|system\s+)?"
                 r"(?:instructions?|rules|guidelines|guardrails|safety|polic(?:y|ies))\b"),
    _phrase_rule(("now",), r"you\s+are\s+now\s+(?:a|an|the|my|in|no\s+longer|free|unrestricted"
                 r"|jailbroken|dan)\b"),
    *(
        _phrase_rule((w,), rf"{w}\s+(?:this|the|these|all|my)\s+"
                     r"(?:memory|memories|candidates?|claims?|submissions?)\b")
        for w in ("approve", "accept", "promote")
    ),
    _phrase_rule(("mark",), r"mark\s+(?:(?:this|it|these|them|me|the\s+\w+)\s+)?as\s+"
                 r"(?:trusted|approved|verified|reviewed)\b"),
    _phrase_rule(("approved", "verified", "trusted"), r"(?:this|the)\s+(?:memory|candidate|claim)"
                 r"\s+(?:is|has\s+been)\s+(?:pre-?)?(?:approved|verified|trusted)\b"),
    _phrase_rule(("prompt",), r"(?:reveal|print|show|output|repeat|leak|dump|display|ignore"
                 r"|override|disregard|replace|change)\s+(?:me\s+)?(?:(?:your|the|my)\s+)?"
                 r"(?:(?:full|entire|original|hidden|secret|initial)\s+)?system\s+prompt\b"
                 r"|new\s+system\s+prompt\b"),
    *(_phrase_rule((gate,), neg + _DONT_TELL_REST)
      for gate, neg in (("not", r"do\s+not"), ("don", r"don['’]?t"), ("never", "never"))),
    _phrase_rule(("instruction",), r"(?:new|updated|real|actual|hidden)\s+instructions?\s*:"),
    *(_phrase_rule((w,), w + _BYPASS_REST) for w in ("bypass", "circumvent", "evade")),
)  # fmt: skip


def _word_start(text: str, pos: int) -> bool:
    return pos == 0 or not text[pos - 1].isalnum()


def phrase(text_lower: str) -> str | None:
    """Return the first injection phrase in already lower-cased text."""
    for gates, regex in _PHRASE_RULES:
        for gate in gates:
            if gate in text_lower:
                for m in regex.finditer(text_lower):
                    if _word_start(text_lower, m.start()):
                        return m.group()
                break
    return None


# --------------------------------------------------------------------------- addressing

_AI = r"(?:ai|a\.i\.|llms?|chatbots?|assistants?|bots?|agents?|(?:language|ai)\s+models?)"
# Vocative forms only: a text that merely mentions an assistant is not talking to one.
_VOCATIVE = re.compile(
    # "AI:", "assistant, ..." (not "ai://" or a time such as "agent:10")
    rf"(?<![a-z0-9_-])(?P<direct>{_AI})[ \t]*[:,](?![/0-9])"
    # "note to AI", "attention wiki assistant", "message for any LLM"
    rf"|(?<![a-z0-9_-])(?:note|notes|message|memo|instructions?|attention|hey|hi|hello|dear"
    rf"|reminder|warning|notice)\s+(?:(?:to|for)\s+)?(?:(?:the|any|all|every)\s+)?"
    rf"(?:[a-z-]+\s+)?{_AI}(?![a-z0-9_])"
    # "AI note:", "LLM instructions:"
    rf"|(?<![a-z0-9_-]){_AI}\s+(?:note|notice|instructions?|message|memo|only)[ \t]*:"
    # "AI agents processing this file", "any assistant reading this"
    rf"|(?<![a-z0-9_-]){_AI}\s+(?:[a-z-]+\s+)?(?:processing|reading|importing|ingesting|parsing"
    rf"|indexing|summari[sz]ing|crawling|scanning|consuming|handling|seeing)\b"
    rf"|\bif\s+you\s+are\s+(?:an?\s+)?(?:[a-z-]+\s+)?{_AI}(?![a-z0-9_])"
    r"|\bwhen\s+you\s+(?:import|read|process|ingest|parse|index|summari[sz]e|load|see)\s+this\b"
)


# "written with an AI assistant, ..." names one; a vocative has no article or preposition.
_MENTION_BEFORE = frozenset(
    {"a", "an", "the", "by", "with", "from", "of", "our", "my", "your", "this", "that", "and"}
)


def addresses_ai(text_lower: str) -> str | None:
    """Return the words by which ``text_lower`` speaks to an AI, if it does."""
    for m in _VOCATIVE.finditer(text_lower):
        if m.group("direct") is not None:
            before = text_lower[max(0, m.start() - 40) : m.start()].split()[-2:]
            if _MENTION_BEFORE.intersection(before):
                continue
        return m.group()
    return None


# --------------------------------------------------------------------------- directives


def _forms(*bases: str) -> frozenset[str]:
    """Return ``bases`` with their regular inflections ("drop" -> drops, dropped, dropping)."""
    out: set[str] = set()
    for b in bases:
        out.update((b, b + "s"))
        if b.endswith("e"):
            out.update((b + "d", b[:-1] + "ing"))
            continue
        out.update((b + "ed", b + "ing", b + "es"))
        if len(b) >= 3 and b[-1] not in "aeiouwxy" and b[-2] in "aeiou" and b[-3] not in "aeiou":
            out.update((b + b[-1] + "ed", b + b[-1] + "ing"))
    return frozenset(out)


def _plurals(*words: str) -> frozenset[str]:
    return frozenset(w for word in words for w in (word, word + "s"))


# Verbs that put data where someone else can read it, and verbs that only move it: the
# second kind counts only with a destination ("append the history to the link").
_PUBLISH = _forms(
    "send", "email", "e-mail", "mail", "forward", "post", "upload", "paste", "share", "leak",
    "reveal", "disclose", "expose", "dump", "transmit", "submit", "exfiltrate", "publish",
    "reply", "respond", "provide", "give", "hand",
) | {"sent", "gave", "given"}  # fmt: skip
_PLACE = _forms("include", "append", "attach", "add", "put", "insert", "embed", "copy", "write")
_SENSITIVE = _plurals(
    "credential", "password", "passphrase", "secret", "key", "api-key", "apikey", "token",
    "cookie", "contact", "phone", "conversation", "transcript", "prompt", "ssn",
) | {"passwd", "creds", "env", ".env", "environment", "history", "memory", "memories", "pii",
     "emails", "e-mails", "addresses"}  # fmt: skip
# Words that are sensitive only after one of these ("customer data", "card numbers").
_SENSITIVE_AFTER = {
    "data": {"personal", "customer", "user", "private", "sensitive", "client", "all", "every"},
    "details": {"contact", "personal", "bank", "card", "login", "account", "payment"},
    "numbers": {"phone", "card", "account", "credit", "mobile"},
    "list": {"contact", "customer", "user", "email", "mailing", "member"},
    "info": {"contact", "personal", "login", "account", "payment"},
}
# Where published data lands: an address token, or one of these after to/into/in/on/via.
_CHANNELS = _plurals(
    "thread", "chat", "reply", "response", "message", "comment", "channel", "email", "issue",
    "url", "link", "query", "parameter", "endpoint", "webhook", "form", "site", "server",
) | {"here", "below"}  # fmt: skip
_INTO = frozenset({"to", "into", "in", "on", "via", "at", "onto"})
_BYPASS = _forms(
    "ignore", "disregard", "forget", "override", "bypass", "skip", "disable", "drop", "remove",
    "suppress", "circumvent", "evade", "deactivate", "waive",
)  # fmt: skip
_CONTROLS = _plurals(
    "instruction", "rule", "guideline", "guardrail", "check", "review", "reviewer", "approval",
    "verification", "validation", "filter", "restriction", "procedure", "ticket", "limit",
    "warning", "safeguard", "protection", "confirmation",
) | {"policy", "policies", "consent", "safety", "moderation", "audit", "sign-off", "oversight",
     "authentication", "2fa", "mfa"}  # fmt: skip
_DESTROY = _forms("delete", "erase", "purge", "wipe", "destroy", "remove", "overwrite", "truncate")
_APPROVE = _forms("approve", "accept", "publish", "promote", "merge", "whitelist", "allowlist")
_RECORDS = _plurals(
    "memory", "candidate", "claim", "page", "runbook", "wiki", "record", "document", "doc",
    "file", "note", "table", "repository", "repo", "backup", "log", "account", "user", "contact",
    "section", "row", "item", "request", "change", "submission", "entry",
) | {"memories", "entries", "everything", "all", "data", "database", "history", "this", "it",
     "them", "these"}  # fmt: skip
_MARK = _forms("mark", "set", "flag", "label", "treat", "classify", "tag", "record", "list")
_STATES = frozenset({
    "approved", "trusted", "verified", "safe", "reviewed", "opted", "unsubscribed", "inactive",
    "deleted", "resolved", "legitimate", "authorized", "authorised", "exempt", "whitelisted",
    "allowlisted", "passed", "benign", "clean", "harmless", "compliant", "pre-approved",
    # and a standing a sender claims for itself
    "staff", "admin", "administrator", "owner", "operator", "employee", "insider", "privileged",
})  # fmt: skip
_CONCEAL = _forms(
    "mention", "tell", "inform", "notify", "alert", "report", "log", "disclose", "flag", "warn",
    "escalate",
)  # fmt: skip
_TELL = _forms("tell", "instruct", "advise", "ask", "direct", "remind")
_AUDIENCE = _plurals(
    "reader", "user", "reviewer", "human", "operator", "customer", "maintainer", "admin",
    "visitor", "caller",
) | {"people", "staff", "everyone", "them", "team"}  # fmt: skip
_REVIEW = _plurals(
    "review", "reviewer", "approval", "check", "confirmation", "verification", "sign-off"
) | {"oversight", "moderation", "signoff"}  # fmt: skip
_PRE_APPROVED = frozenset({
    "pre-approved", "preapproved", "pre-authorized", "pre-authorised", "pre-verified",
    "auto-approved", "pre-cleared",
})  # fmt: skip
_NEGATORS = frozenset({
    "not", "never", "don't", "dont", "can't", "cannot", "won't", "shouldn't", "mustn't", "no",
    "nor", "isn't", "aren't", "doesn't", "didn't", "wouldn't", "couldn't", "refuse", "refused",
})  # fmt: skip
_COMPLIANCE = frozenset({"understood", "certainly", "sure", "acknowledged", "i'll", "i've"})
_NEEDED = frozenset({"needed", "required", "necessary"})
_HIDDEN = frozenset({"secret", "hidden", "quiet", "confidential"})
_AS = frozenset({"as", "to"})

_DEST = "\x00"  # stands for an e-mail address or URL in the token list
_TOKENS = re.compile(
    r"https?://\S+|(?<![\w.%+-])[\w.%+-]+@[\w-]+(?:\.[\w-]+)+|[a-z0-9.]+(?:['-][a-z0-9]+)*"
)
_MAX_SPAN = 2000
_WINDOW = 8


@dataclass(frozen=True, slots=True)
class Directive:
    """How strongly a span reads as an instruction (1 = an imperative, 2+ = a clear one)."""

    score: int
    evidence: str


def _tokens(text_lower: str) -> list[str]:
    out = []
    for m in _TOKENS.finditer(text_lower[:_MAX_SPAN].replace("’", "'")):
        tok = m.group()
        if "@" in tok or "://" in tok:
            out.append(_DEST)
        else:
            tok = tok.strip(".")
            if tok:
                out.append(tok)
    return out


def _sensitive_at(toks: list[str], j: int) -> bool:
    tok = toks[j]
    if tok in _SENSITIVE:
        return True
    after = _SENSITIVE_AFTER.get(tok)
    return after is not None and j > 0 and toks[j - 1] in after


def _destination(toks: list[str], start: int, end: int) -> bool:
    for j in range(start, min(end, len(toks))):
        if toks[j] == _DEST or (toks[j] in ("here", "below") and j > start):
            return True
        if toks[j] in _INTO and any(t in _CHANNELS or t == _DEST for t in toks[j + 1 : j + 4]):
            return True
    return False


def _negated(toks: list[str], i: int) -> bool:
    return any(t in _NEGATORS for t in toks[max(0, i - 3) : i])


def _first_sensitive(toks: list[str], start: int, end: int) -> int:
    for j in range(start, min(end, len(toks))):
        if _sensitive_at(toks, j):
            return j
    return -1


def _first(toks: list[str], start: int, end: int, words: frozenset[str]) -> int:
    for j in range(start, min(end, len(toks))):
        if toks[j] in words:
            return j
    return -1


def _evidence(toks: list[str], i: int, j: int) -> str:
    return " ".join("<address>" if t == _DEST else t for t in toks[i : j + 1])


def directive(text_lower: str, *, compliance: bool = False) -> Directive | None:
    """Judge how strongly a short lower-cased span tells a model to do something harmful.

    Scores the strongest of: a known injection phrase, publishing sensitive data to a
    destination (2) or at all (1), hiding an action from people (2), claiming a review has
    already happened or is not needed (2), switching off a control, destroying or approving
    records, marking something as trusted, or telling readers what to do (1 each). With
    ``compliance``, an assistant-style acceptance ("understood", "I will") counts 1: it is how
    a spoofed assistant turn makes a model believe it already agreed.
    """
    found = phrase(text_lower)
    if found:
        return Directive(2, found)
    toks = _tokens(text_lower)
    best: Directive | None = None

    def hit(score: int, i: int, j: int) -> None:
        nonlocal best
        if best is None or score > best.score:
            best = Directive(score, _evidence(toks, i, j))

    for i, tok in enumerate(toks):
        if best is not None and best.score >= 2:
            break  # nothing scores higher
        if tok in _PUBLISH or tok in _PLACE:
            j = _first_sensitive(toks, i + 1, i + 1 + _WINDOW)
            if j >= 0 and not _negated(toks, i):
                if _destination(toks, j + 1, j + 1 + _WINDOW):
                    hit(2, i, j)
                elif tok in _PUBLISH:
                    hit(1, i, j)
        if tok in _NEGATORS and tok != "no":
            j = _first(toks, i + 1, i + 3, _CONCEAL)
            if j >= 0:
                hit(2, i, j)
        if tok == "without":
            j = _first(toks, i + 1, i + 4, _CONCEAL | _REVIEW)
            if j >= 0 and not _negated(toks, i):
                hit(2, i, j)
        if tok in _PRE_APPROVED:
            hit(2, i, i)
        if tok == "no":
            j = _first(toks, i + 1, i + 3, _REVIEW)
            if j >= 0 and _first(toks, j + 1, j + 4, _NEEDED) >= 0:
                hit(2, i, j + 1)
        if tok in ("keep", "keeping") and _first(toks, i + 1, i + 4, _HIDDEN) >= 0:
            hit(2, i, i + 2)
        if _negated(toks, i):
            continue
        if tok in _BYPASS:
            j = _first(toks, i + 1, i + 1 + _WINDOW, _CONTROLS)
            if j >= 0:
                hit(1, i, j)
        if tok in _DESTROY or tok in _APPROVE:
            j = _first(toks, i + 1, i + 6, _RECORDS)
            if j >= 0:
                hit(1, i, j)
        if tok in _MARK:
            j = _first(toks, i + 1, i + 1 + _WINDOW, _AS)
            state = toks[j + 1 : j + 3] if j >= 0 else []
            if state[:1] in (["a"], ["an"]):
                state = state[1:]  # "treat the sender as an admin"
            if state and state[0] in _STATES:
                hit(1, i, j + 1)
        if tok in _TELL:
            j = _first(toks, i + 1, i + 4, _AUDIENCE)
            if j >= 0 and j + 1 < len(toks) and toks[j + 1] in ("to", "that"):
                hit(1, i, j + 1)
        if compliance and (
            tok in _COMPLIANCE or (tok == "i" and toks[i + 1 : i + 2] in (["will"], ["have"]))
        ):
            hit(1, i, min(i + 1, len(toks) - 1))
    return best
