"""Safe Markdown -> HTML rendering for reviewer-facing wiki pages and snippets.

Pure Python (no Django). Two layers, each safe on its own:

1. markdown-it-py (CommonMark, ``html=False``) turns Markdown into HTML. Raw HTML in the
   source is escaped, so it shows up as visible text instead of being interpreted.
2. nh3 (ammonia) re-parses that HTML and keeps only an explicit allowlist of tags,
   attributes and URL schemes, so a markdown-it bug or a later config change cannot leak
   script, event handlers or dangerous URLs into the page.

Rendering never changes the stored text (or its hash); it only decides how it is shown.
Invisible and bidi control characters are shown as visible markers so a reviewer can see
hidden instructions or reordered text, and images are never loaded (a remote ``<img>``
leaks the reader's IP and lets a URL exfiltrate data), only described as ``[image: alt]``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token

__all__ = [
    "BLOCK_TAGS",
    "CITATION_RE",
    "EVIDENCE_ID_RE",
    "HEADING_ID_PREFIX",
    "INLINE_TAGS",
    "INVISIBLE_CHARS",
    "INVISIBLE_CLASS",
    "LINK_REL",
    "URL_SCHEMES",
    "Linker",
    "link_citations",
    "render_inline",
    "render_markdown",
]

URL_SCHEMES: Final = frozenset({"http", "https", "mailto"})
LINK_REL: Final = "nofollow noopener noreferrer"
INVISIBLE_CLASS: Final = "invisible-char"
# Prefixing every generated id keeps headings from clobbering ids the host page relies on
# (a heading "Main" must not become a second ``id="main"``) and from shadowing globals via
# named-element access in the DOM.
HEADING_ID_PREFIX: Final = "section-"

INLINE_TAGS: Final = frozenset({"a", "em", "strong", "code", "del", "br", "span"})
BLOCK_TAGS: Final = INLINE_TAGS | frozenset(
    {
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "li",
        "pre",
        "blockquote",
        "hr",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
)

_HEADINGS: Final = ("h1", "h2", "h3", "h4", "h5", "h6")
_ANCHORED_HEADINGS: Final = frozenset({"h2", "h3"})
_ALIGNS: Final = frozenset({"left", "center", "right"})
_MAX_SLUG: Final = 64

# Characters that render as nothing (or silently reorder text) yet change meaning: zero-width
# and joiner chars, LRM/RLM/ALM, bidi embeddings/overrides/isolates, word joiner and invisible
# operators, deprecated format controls, BOM/ZWNBSP, soft hyphen, Mongolian vowel separator,
# Unicode tag characters (used to smuggle ASCII instructions) and supplementary variation
# selectors (used to smuggle bytes after an emoji).
INVISIBLE_CHARS: Final = (
    "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef"
)
# A single VS1-VS16 after a base character is ordinary emoji/text presentation (e.g. U+FE0F),
# so only the second and later ones in a run are marked; runs are how bytes get smuggled.
_INVISIBLE_RE: Final = re.compile(
    f"[{INVISIBLE_CHARS}]|(?<=[\ufe00-\ufe0f\U000e0100-\U000e01ef])[\ufe00-\ufe0f]"
)
# Whole runs get one marker, so a megabyte of zero-width or tag characters cannot blow up
# into ~80 bytes of markup per character.
_INVISIBLE_RUN_RE: Final = re.compile(f"(?:{_INVISIBLE_RE.pattern})+")
_TAG_OR_ONE_RE: Final = re.compile("[\U000e0000-\U000e007f]+|.", re.DOTALL)
_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")
_ID_INVALID_RE: Final = re.compile(r"[^a-z0-9-]+")
_SLUG_SEP_RE: Final = re.compile(r"[^a-z0-9]+")


def _codepoint(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def _tag_text(run: str) -> str:
    """Decode Unicode tag characters to the ASCII they smuggle (controls as ``\\xNN``)."""
    out = []
    for ch in run:
        code = ord(ch) - 0xE0000
        out.append(chr(code) if 0x20 <= code < 0x7F else f"\\x{code:02x}")
    return "".join(out)


def _run_label(run: str) -> str:
    """Code points of a run; tag-character stretches also spell out their hidden ASCII."""
    parts = []
    for m in _TAG_OR_ONE_RE.finditer(run):
        seg = m.group()
        if len(seg) > 1:
            # Tag characters hide ASCII text (prompt injection); show what they spell.
            first, last = _codepoint(seg[0]), _codepoint(seg[-1])
            parts.append(f'{first}…{last} tag text: "{_tag_text(seg)}"')
        else:
            parts.append(_codepoint(seg))
    return " ".join(parts)


def _marker_html(match: re.Match[str]) -> str:
    """Visible stand-in for a run of invisible characters inside (escaped) text content."""
    run = match.group()
    if len(run) == 1:
        # Unicode character names are ASCII letters, digits, spaces and hyphens.
        title = f"{_codepoint(run)} {unicodedata.name(run, '')}".rstrip()
    else:
        title = f"{len(run)} invisible characters"
    return f'<span class="{INVISIBLE_CLASS}" title="{title}">⟨{escapeHtml(_run_label(run))}⟩</span>'


def _marker_text(match: re.Match[str]) -> str:
    """Markup-free stand-in, for attribute values where a <span> cannot go."""
    return "⟨" + " ".join(_codepoint(ch) for ch in match.group()) + "⟩"


def _escape_marked(text: str) -> str:
    """HTML-escape text content and make its invisible characters visible."""
    return _INVISIBLE_RUN_RE.sub(_marker_html, escapeHtml(text))


# --- citations -----------------------------------------------------------------------------
# A compiled wiki page ends each claim with "(claim 12; evidence #3, #4)" ("new claim" in an
# approval preview); on screen the claim and each episode become links.

Linker = Callable[[str, int], str]  # ("claim" | "episode", id) -> URL
CITATION_RE: Final = re.compile(r"\((claim (\d+)|new claim)(?:; evidence (#\d+(?:, #\d+)*))?\)")
EVIDENCE_ID_RE: Final = re.compile(r"#(\d+)")


def link_citations(escaped: str, url: Linker) -> str:
    """Link the citations in already-escaped text content (never in markup or attributes)."""

    def anchor(kind: str, pk: str, label: str) -> str:
        return f'<a href="{escapeHtml(url(kind, int(pk)))}">{label}</a>'

    def cite(m: re.Match[str]) -> str:
        head = anchor("claim", m.group(2), m.group(1)) if m.group(2) else m.group(1)
        if not m.group(3):
            return f"({head})"
        ids = EVIDENCE_ID_RE.sub(lambda e: anchor("episode", e.group(1), e.group()), m.group(3))
        return f"({head}; evidence {ids})"

    return CITATION_RE.sub(cite, escaped)


def _valid_unicode(text: str) -> str:
    """Return ``text`` with lone surrogates replaced by U+FFFD (nh3 needs valid UTF-8).

    Pairs of surrogates are joined into the astral character they encode. Only the
    rendering sees this copy; the caller's string is untouched.
    """
    if not _SURROGATE_RE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


# --- markdown-it renderer rules -----------------------------------------------------------
# Every rule that emits text content goes through _escape_marked, so markers are inserted on
# known-text strings rather than by pattern-matching finished HTML.


def _rule_text(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    html = _escape_marked(tokens[idx].content)
    # A citation inside a link's text stays text: anchors do not nest.
    if env.get("cite") and not env.get("link_depth"):
        return link_citations(html, env["cite"])
    return html


def _rule_link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    env["link_depth"] = env.get("link_depth", 0) + 1
    return self.renderToken(tokens, idx, options, env)


def _rule_link_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    env["link_depth"] = env.get("link_depth", 0) - 1
    return self.renderToken(tokens, idx, options, env)


def _rule_code_inline(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return f"<code>{_escape_marked(tokens[idx].content)}</code>"


def _rule_code_block(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    # The fence info string (language) is dropped: class attributes are not allowlisted.
    return f"<pre><code>{_escape_marked(tokens[idx].content)}</code></pre>\n"


def _rule_image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    # Never emit <img>: no remote fetches, no data: URLs, no tracking pixels. The URL itself
    # is not shown either, so the description is plain, link-free text.
    alt = self.renderInlineAsText(tokens[idx].children, options, env).strip()
    return _escape_marked(f"[image: {alt}]" if alt else "[image]")


def _build_parser() -> MarkdownIt:
    md = MarkdownIt(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False},
    ).enable(["table", "strikethrough"])
    md.add_render_rule("text", _rule_text)
    md.add_render_rule("code_inline", _rule_code_inline)
    md.add_render_rule("code_block", _rule_code_block)
    md.add_render_rule("fence", _rule_code_block)
    md.add_render_rule("image", _rule_image)
    md.add_render_rule("link_open", _rule_link_open)
    md.add_render_rule("link_close", _rule_link_close)
    return md


_MD: Final = _build_parser()


# --- token rewriting -----------------------------------------------------------------------


def _plain_text(tokens: Iterable[Token]) -> str:
    """Visible text of inline tokens (for heading slugs)."""
    parts: list[str] = []
    for tok in tokens:
        if tok.type in ("text", "code_inline"):
            parts.append(tok.content)
        elif tok.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif tok.children:
            parts.append(_plain_text(tok.children))
    return "".join(parts)


def _slugify(text: str) -> str:
    """``[a-z0-9-]`` slug; falls back to a short hash when nothing ASCII-ish is left."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG_SEP_RE.sub("-", folded.lower()).strip("-")[:_MAX_SLUG].strip("-")
    if slug:
        return slug
    # Non-Latin headings still need a stable, linkable anchor.
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _rewrite(tokens: Sequence[Token], used_ids: set[str]) -> None:
    """Adapt markdown-it tokens to the allowlist before rendering.

    - table cell ``style="text-align:…"`` becomes ``align`` (style is never allowed);
    - ``<s>`` from strikethrough becomes ``<del>``;
    - h2/h3 get unique ``section-…`` ids;
    - invisible characters in attribute values (e.g. link titles) get text markers.
    """
    for i, tok in enumerate(tokens):
        if tok.type in ("th_open", "td_open"):
            style = str(tok.attrs.pop("style", ""))
            align = style.removeprefix("text-align:")
            if align in _ALIGNS:
                tok.attrs["align"] = align
        elif tok.tag == "s":
            tok.tag = "del"
        elif tok.type == "heading_open" and tok.tag in _ANCHORED_HEADINGS:
            inline = tokens[i + 1] if i + 1 < len(tokens) else None
            text = _plain_text(inline.children or []) if inline is not None else ""
            base = HEADING_ID_PREFIX + _slugify(text)
            anchor, n = base, 2
            while anchor in used_ids:
                anchor, n = f"{base}-{n}", n + 1
            used_ids.add(anchor)
            tok.attrs["id"] = anchor
        for name, value in list(tok.attrs.items()):
            if isinstance(value, str):
                tok.attrs[name] = _INVISIBLE_RUN_RE.sub(_marker_text, value)
        if tok.children:
            _rewrite(tok.children, used_ids)


# --- sanitiser -----------------------------------------------------------------------------


def _attribute_filter(tag: str, attr: str, value: str) -> str | None:
    """Last word on attribute values nh3 lets through."""
    if attr == "id":
        # Ids must stay in [a-z0-9-] so they are safe in URLs, CSS selectors and fragments.
        cleaned = _ID_INVALID_RE.sub("-", value.lower()).strip("-")
        return cleaned or None
    if attr == "title":
        # Belt and braces: no invisible character reaches the DOM, even in a tooltip.
        return _INVISIBLE_RUN_RE.sub(_marker_text, value)
    return value


def _cleaner(tags: frozenset[str]) -> nh3.Cleaner:
    attributes: dict[str, set[str]] = {"a": {"href", "title"}, "span": {"title"}}
    for h in _HEADINGS:
        if h in tags:
            attributes[h] = {"id"}
    align = {t: {"align": set(_ALIGNS)} for t in ("th", "td") if t in tags}
    return nh3.Cleaner(
        tags=set(tags),
        # Removed together with their content, should any ever slip past markdown-it.
        clean_content_tags={"script", "style"},
        attributes=attributes,
        attribute_filter=_attribute_filter,
        strip_comments=True,
        link_rel=LINK_REL,
        url_schemes=set(URL_SCHEMES),
        tag_attribute_values=align,
        # The marker <span> is the only span we emit; no other class may appear.
        allowed_classes={"span": {INVISIBLE_CLASS}},
        id_prefix=HEADING_ID_PREFIX,
    )


_BLOCK_CLEANER: Final = _cleaner(BLOCK_TAGS)
_INLINE_CLEANER: Final = _cleaner(INLINE_TAGS)


# --- public API ----------------------------------------------------------------------------


def render_markdown(text: str, *, cite: Linker | None = None) -> str:
    """Render a Markdown document to sanitised HTML (deterministic, safe for ``|safe``).

    With `cite`, claim citations in the text become links to the URLs it gives.
    """
    src = _valid_unicode(text)
    env: dict[str, Any] = {"cite": cite}
    tokens = _MD.parse(src, env)
    _rewrite(tokens, set())
    html = _MD.renderer.render(tokens, _MD.options, env)
    return _BLOCK_CLEANER.clean(html)


def render_inline(text: str) -> str:
    """Render a one-line Markdown snippet to sanitised inline HTML (no block elements)."""
    src = _valid_unicode(text)
    env: dict[str, Any] = {}
    tokens = _MD.parseInline(src, env)
    _rewrite(tokens, set())
    html = _MD.renderer.render(tokens, _MD.options, env)
    return _INLINE_CLEANER.clean(html)
