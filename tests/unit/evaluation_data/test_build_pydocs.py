"""The python-docs dataset builder, on small Sphinx-like pages written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation_data import build_eval_pydocs as builder
from evaluation_data import pydocs_questions
from ragsage.core.text import words
from ragsage.evaluation.writing import split_of

LIBRARY = """<html><head><title>shutil</title></head><body>
<div class="related" role="navigation"><ul><li>index</li></ul></div>
<section id="module-shutil"><h1>shutil — file operations<a class="headerlink">¶</a></h1>
<dl class="py function">
<dt class="sig sig-object py" id="shutil.copytree"><span class="sig-prename">shutil.</span><span
 class="sig-name">copytree</span>(<em class="sig-param"><span class="n">src</span></em>, <em
 class="sig-param"><span class="n">dirs_exist_ok</span>=False</em>)<a class="headerlink"
 href="#shutil.copytree">¶</a></dt>
<dd><p class="audit-hook">Raises an auditing event shutil.copytree.</p>
<p>Recursively copy an <em>entire</em> directory tree (see <a href="#x">below</a>) to a new
place. Symbolic links are followed.</p></dd></dl>
<dl class="py class">
<dt class="sig sig-object py" id="shutil.TreeWalker"><em class="property">class </em><span
 class="sig-prename">shutil.</span><span class="sig-name">TreeWalker</span>(<em
 class="sig-param"><span class="n">root</span></em>)</dt>
<dd><p>Walks a tree of directories, e.g. a build output, yielding each file.</p>
<dl class="py method">
<dt class="sig sig-object py" id="shutil.TreeWalker.close"><span
 class="sig-name">close</span>()</dt>
<dd><p>Stop walking and release every open directory handle.</p></dd></dl>
</dd></dl>
<dl class="py data">
<dt class="sig sig-object py" id="shutil.COPY_BUFSIZE"><span class="sig-prename">shutil.</span
><span class="sig-name">COPY_BUFSIZE</span></dt>
<dd><p>See above.</p></dd></dl>
</section></body></html>"""

FAQ = """<html><body><section id="faq"><h1>Programming FAQ</h1>
<section id="how-do-i-copy-a-tree"><h3>How do I copy a whole tree?<a class="headerlink">¶</a></h3>
<p>Use the copytree function of the shutil module, which walks the source and creates every
directory and file it finds under the destination folder you name, then returns that folder's
path to the caller.</p></section>
<section id="tree-copying"><h3>Tree copying</h3><p>Not a question, so no query comes of it at
all even though this paragraph is plenty long enough.</p></section>
<section id="is-it-fast"><h3>Is it fast?</h3><p>Yes.</p></section>
</section></body></html>"""

GLOSSARY = """<html><body><section id="glossary"><h1>Glossary</h1>
<dl class="glossary simple">
<dt id="term-iterable">iterable<a class="headerlink">¶</a></dt>
<dt id="term-iterables">iterables</dt>
<dd><p>An object capable of returning its members one at a time, such as a list.</p></dd>
<dt id="term-IDLE">IDLE</dt>
<dd><p>An editor and interpreter environment which ships with the standard distribution.</p></dd>
</dl></section></body></html>"""


def test_api_items_read_signature_first_sentence_and_parameters() -> None:
    items = {item.anchor: item for item in builder.api_items(LIBRARY)}

    copytree = items["shutil.copytree"]
    assert copytree.kind == "function"
    assert copytree.signature == "shutil.copytree(src, dirs_exist_ok=False)"
    assert copytree.summary == "Recursively copy an entire directory tree to a new place"
    assert copytree.parameters == ("src", "dirs_exist_ok")
    assert items["shutil.TreeWalker"].signature == "class shutil.TreeWalker(root)"
    # "e.g." does not end the sentence.
    assert items["shutil.TreeWalker"].summary.endswith("e.g. a build output, yielding each file")
    assert items["shutil.TreeWalker.close"].kind == "method"


def test_summary_questions_skip_generic_descriptions_and_pad_short_signatures() -> None:
    questions = {q.id: q for q in builder.summary_questions("lib.html", builder.api_items(LIBRARY))}

    assert set(questions) == {
        "summary:lib.html#shutil.copytree",
        "summary:lib.html#shutil.TreeWalker",
        "summary:lib.html#shutil.TreeWalker.close",
    }
    assert questions["summary:lib.html#shutil.copytree"].answer == (
        "shutil.copytree(src, dirs_exist_ok=False)"
    )
    # "close()" alone is one token; the description's first words pin it down.
    close = questions["summary:lib.html#shutil.TreeWalker.close"].answer
    assert close.startswith("close() Stop walking")
    assert 3 <= len(words(close)) <= 8


def test_identifier_questions_use_names_developers_type() -> None:
    items = builder.api_items(LIBRARY)
    unique = {"TreeWalker", "dirs_exist_ok"}

    forms = {item.anchor: pydocs_questions.identifier_forms(item, unique) for item in items}
    assert forms["shutil.copytree"] == [
        ("dotted", "shutil.copytree"),
        ("parameter", "dirs_exist_ok"),
    ]
    assert ("camel", "TreeWalker") in forms["shutil.TreeWalker"]
    # A CamelCase name that is not unique in the corpus is asked only by its dotted path.
    assert pydocs_questions.identifier_forms(items[1], set()) == [("dotted", "shutil.TreeWalker")]

    questions = list(builder.identifier_questions("lib.html", items, unique))
    assert all(q.kind == "identifier" for q in questions)
    for question in questions:
        named = [name for _, name in forms[question.id.split("#")[1]]]
        assert any(name in question.question for name in named)


def test_faq_questions_come_from_question_headings_with_enough_text() -> None:
    questions = list(builder.faq_questions("faq.html", builder.question_sections(FAQ)))

    assert [(q.question, q.id) for q in questions] == [
        ("How do I copy a whole tree?", "faq:faq.html#how-do-i-copy-a-tree")
    ]
    assert len(words(questions[0].answer)) == 30
    assert questions[0].answer.startswith("Use the copytree function")


def test_glossary_terms_share_a_definition_and_read_naturally() -> None:
    terms = builder.glossary_terms(GLOSSARY)
    assert [t.title for t in terms] == ["iterable", "iterables", "IDLE"]
    assert terms[0].body == terms[1].body

    questions = {q.id: q.question for q in builder.glossary_questions("g.html", terms)}
    assert questions["glossary:g.html#term-iterable"] in (
        "what is an iterable",
        "meaning of iterable",
    )
    assert questions["glossary:g.html#term-IDLE"] in ("what is IDLE", "meaning of IDLE")


def test_answer_spans_are_checked_against_ragsage_parsed_text(tmp_path: Path) -> None:
    page = tmp_path / "lib.html"
    page.write_text(LIBRARY, encoding="utf-8")
    tokens = builder.page_tokens(builder.HeuristicBackend(), page)

    assert builder.span_in("shutil.copytree(src, dirs_exist_ok=False)", tokens)
    assert not builder.span_in("shutil.copytree(dst, src)", tokens)
    assert not builder.span_in("...", tokens)


def test_choose_caps_each_page_and_is_repeatable() -> None:
    questions = [
        builder.Question(f"faq:p{n % 3}#{n}", f"question {n}?", f"p{n % 3}", "a b c", "faq")
        for n in range(30)
    ]

    chosen = builder.choose(questions, limit=20, per_document=4, seed=1)

    assert len(chosen) == 12
    assert max(sum(q.document == d for q in chosen) for d in ("p0", "p1", "p2")) == 4
    assert chosen == builder.choose(list(reversed(questions)), limit=20, per_document=4, seed=1)


def test_split_is_fixed_by_id_and_roughly_even() -> None:
    splits = [split_of(f"summary:page.html#item{n}") for n in range(400)]

    assert splits == [split_of(f"summary:page.html#item{n}") for n in range(400)]
    assert 160 < splits.count("dev") < 240


def _tree(root: Path) -> Path:
    html = root / "html"
    (html / "library").mkdir(parents=True)
    (html / "faq").mkdir()
    (html / "glossary.html").write_text(GLOSSARY, encoding="utf-8")
    (html / "faq" / "programming.html").write_text(FAQ, encoding="utf-8")
    (html / "library" / "shutil.html").write_text(LIBRARY, encoding="utf-8")
    return html


def test_build_writes_a_repeatable_qa_span_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html = _tree(tmp_path)
    outputs = [tmp_path / "one", tmp_path / "two"]
    for out in outputs:
        assert builder.main(["--html", str(html), "--out", str(out)]) == 0

    one, two = outputs
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert [str(p) for p in files] == [
        "dataset.json",
        "documents/faq/programming.html",
        "documents/glossary.html",
        "documents/library/shutil.html",
        "questions.jsonl",
    ]
    assert all((one / p).read_bytes() == (two / p).read_bytes() for p in files)
    assert json.loads((one / "dataset.json").read_text())["format"] == "qa-spans"
    rows = [json.loads(line) for line in (one / "questions.jsonl").read_text().splitlines()]
    assert {row["kind"] for row in rows} == {"summary", "identifier", "faq", "glossary"}
    for row in rows:
        assert (one / "documents" / row["document"]).is_file()
        assert row["split"] in ("dev", "test")
        assert all(3 <= len(words(answer)) <= 40 for answer in row["answers"])
    assert "chunks at default size" in capsys.readouterr().out


def test_build_refuses_to_replace_a_folder_that_is_not_a_dataset(tmp_path: Path) -> None:
    html = _tree(tmp_path)
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")

    with pytest.raises(SystemExit, match="holds no dataset.json"):
        builder.main(["--html", str(html), "--out", str(out)])
    assert (out / "notes.txt").read_text() == "keep me"
