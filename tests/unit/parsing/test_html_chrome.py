"""Site chrome out, content in: the HTML reader on pages shaped like real documentation sites."""

import re

from ragsage.adapters.parsing import HeuristicBackend, make_token_counter
from ragsage.core.documents import RawSource
from tests.unit.parsing.conftest import make_document
from tests.unit.parsing.coverage import (
    assert_nothing_lost,
    assert_spans_hold,
    assert_within_budget,
)
from tests.unit.parsing.site_pages import MENU_WORDS, layout_page, menu_table, modern_page

BACKEND = HeuristicBackend()
PARAGRAPHS = [
    "The stylesheet compiler walks every template once and records its match pattern.",
    "Extension functions are registered per namespace before the transformation starts.",
    "A transformation context holds the variables stack and the output document.",
]


def read(html: str, name: str = "page.html") -> str:
    return BACKEND.parse(RawSource(html.encode(), name)).pages[0].text


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def assert_in_order(expected: list[str], text: str) -> None:
    position = 0
    for piece in expected:
        for word in words(piece):
            found = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text[position:])
            assert found is not None, f"{word!r} of {piece!r} is missing or out of order"
            position += found.end()


def test_a_layout_table_page_loses_only_its_navigation():
    page = layout_page(
        PARAGRAPHS,
        items=["xsltApplyStylesheet runs a stylesheet", "xsltFreeStylesheet releases it"],
        code=["int main(void) {", "    return xsltRun(ctx);", "}"],
        rows=[("XSLT_MAX_DEPTH", "deepest recursion"), ("XSLT_NAMESPACE", "the core URI")],
    )
    text = read(page.html)
    assert_in_order(page.content, text)
    assert not set(words(text)) & set(MENU_WORDS), text
    # The site banner and the author line are not menus: they stay.
    assert "Sitetitle" in text and "Maintainer Name" in text
    # The in-page contents list and its title went with the menus.
    assert "Section 1" not in text and "Contents" not in text
    # Code stays code and the data table stays a table; the layout tables do not.
    assert "```\nint main(void) {\n    return xsltRun(ctx);\n}\n```" in text
    assert "| Name | Meaning |\n| --- | --- |\n| XSLT_MAX_DEPTH | deepest recursion |" in text
    assert text.count("|") == 4 * 3


def test_a_layout_page_chunks_within_budget_and_keeps_every_content_word():
    page = layout_page([p * 6 for p in PARAGRAPHS], code=[f"line_{n} = {n}" for n in range(200)])
    parsed = BACKEND.parse(RawSource(page.html.encode(), "page.html"))
    chunks = BACKEND.chunk(make_document(), parsed.pages, size=64, overlap=0)
    assert_within_budget(chunks, 64, make_token_counter())
    assert_nothing_lost(parsed.pages, chunks)
    assert_spans_hold(parsed.pages, chunks)


def test_a_modern_page_loses_its_landmarks_skip_link_and_anchor_marks():
    page = modern_page(PARAGRAPHS)
    text = read(page.html)
    assert_in_order(page.content, text)
    assert not set(words(text)) & set(MENU_WORDS), text
    assert text.startswith("# Article\n\n")


def test_an_articles_own_header_is_content():
    html = (
        "<body><nav><a href='a'>Home</a></nav><article><header><h1>Release notes</h1>"
        "<p>Published in June.</p></header><p>Body text.</p></article></body>"
    )
    assert read(html) == "# Release notes\n\nPublished in June.\n\nBody text."


def test_an_index_of_links_with_terms_is_kept():
    # An API index: terms, each with the links to where it is used; it is the page.
    entries = "".join(
        f"<dt>term{n}</dt><dd><a href='f{n}.html#x'>function{n}</a><br/>"
        f"<a href='g{n}.html#y'>other{n}</a></dd>"
        for n in range(30)
    )
    menu = menu_table("Main", list(MENU_WORDS))
    html = (
        f"<body><table><tr><td width='200'>{menu}</td>"
        f"<td><h2>Letter t:</h2><dl>{entries}</dl></td></tr></table></body>"
    )
    text = read(html)
    assert "term7" in text and "function29" in text
    assert not set(words(text)) & set(MENU_WORDS), text


def test_a_page_of_nothing_but_navigation_is_read_as_its_title():
    links = "".join(f"<li><a href='{w}.html'>{w}</a></li>" for w in MENU_WORDS)
    html = f"<html><head><title>Index of modules</title></head><body><ul>{links}</ul></body>"
    parsed = BACKEND.parse(RawSource(html.encode(), "index.html"))
    assert parsed.pages[0].text == "Index of modules"


def test_a_short_list_of_links_inside_prose_is_kept():
    html = (
        "<body><p>See the two guides:</p><ul><li><a href='a.html'>Install guide</a></li>"
        "<li><a href='b.html'>Upgrade guide</a></li></ul><p>Both are short.</p></body>"
    )
    assert read(html) == (
        "See the two guides:\n\n- Install guide\n- Upgrade guide\n\nBoth are short."
    )


def test_a_nested_data_table_is_read_once():
    inner = "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>"
    html = f"<body><table><tr><td><h3>Box</h3>{inner}</td></tr></table></body>"
    text = read(html)
    assert text == "### Box\n\n| k | v |\n| --- | --- |\n| a | 1 |"


def test_a_table_cell_keeps_inline_code_next_to_its_punctuation():
    # A Node.js API history table: a code span ends the sentence; a second cell
    # holds two paragraphs, which must stay apart.
    html = (
        "<body><table><thead><tr><th>Version</th><th>Changes</th></tr></thead><tbody>"
        "<tr><td>v20.18.0</td><td>The <code>contextObject</code> argument now accepts "
        "<code>vm.constants.DONT_CONTEXTIFY</code>.</td></tr>"
        "<tr><td>v7.4.0</td><td><p>The <code>buffer</code> parameter can be any "
        "<code>TypedArray</code>, or a <code>DataView</code>.</p><p>Second line</p></td></tr>"
        "</tbody></table></body>"
    )
    text = read(html)
    assert "| The contextObject argument now accepts vm.constants.DONT_CONTEXTIFY. |" in text
    assert "can be any TypedArray, or a DataView. Second line |" in text


def test_a_sphinx_page_keeps_its_headings_and_loses_its_bars_and_pilcrows():
    html = (
        '<body><div class="related" role="navigation"><h3>Navigation</h3><ul>'
        '<li><a href="genindex.html">index</a></li><li><a href="next.html">next</a> |</li>'
        '</ul></div><div class="body" role="main"><section id="why">'
        '<h2><a class="toc-backref" href="#id3" role="doc-backlink">Why is it so?</a>'
        '<a class="headerlink" href="#why" title="Link to this heading">\u00b6</a></h2>'
        "<p>Because it is.</p></section></div>"
        '<div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3></div></body>'
    )
    assert read(html) == "## Why is it so?\n\nBecause it is."
