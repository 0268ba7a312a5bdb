"""The plain baseline: line-end windows behind a file header, BM25 plus MiniLM, averaged."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ragsage.adapters.providers import locate_local_model
from ragsage.cli.evaluation.backends import IndexConfig
from ragsage.cli.evaluation.baseline import (
    HEADER_COMMENT_WORDS,
    TEXT_PIECES,
    Bm25,
    PieceCutter,
    cut_windows,
    header,
    min_max,
    plain_baseline,
    tokens,
)
from ragsage.evaluation.datasets import Dataset, EvalDocument
from ragsage.query import RetrievalOptions

GO_FILE = """\
// Copyright 2018 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build go1.18

// Package semver implements comparison of semantic version strings.
// Version strings must begin with a leading "v", as in "v1.0.0".
package semver

import "strings"

// parsed holds the pieces of a version string once it has been read.
type parsed struct {
	major      string
	minor      string
	patch      string
	short      string
	prerelease string
	build      string
}

// IsValid reports whether v is a valid semantic version string.
func IsValid(v string) bool {
	_, ok := parse(v)
	return ok
}

// Canonical returns the canonical formatting of the semantic version v.
// It fills in any missing .MINOR or .PATCH and discards build metadata.
// Two semantic versions compare equal only if their canonical formattings
// are identical strings.
// The canonical invalid semantic version is the empty string.
func Canonical(v string) string {
	p, ok := parse(v)
	if !ok {
		return ""
	}
	if p.build != "" {
		return v[:len(v)-len(p.build)]
	}
	if p.short != "" {
		return v + p.short
	}
	return v
}

// Compare returns an integer comparing two versions according to
// semantic version precedence.
// The result will be 0 if v == w, -1 if v < w, or +1 if v > w.
//
// An invalid semantic version string is considered less than a valid one.
// All invalid semantic version strings compare equal to each other.
func Compare(v, w string) int {
	pv, ok1 := parse(v)
	pw, ok2 := parse(w)
	if !ok1 && !ok2 {
		return 0
	}
	if !ok1 {
		return -1
	}
	if !ok2 {
		return +1
	}
	if c := compareInt(pv.major, pw.major); c != 0 {
		return c
	}
	if c := compareInt(pv.minor, pw.minor); c != 0 {
		return c
	}
	return comparePrerelease(pv.prerelease, pw.prerelease)
}

func parseBuild(v string) (t, rest string, ok bool) {
	if v == "" || v[0] != '+' {
		return
	}
	i := strings.IndexByte(v, '-')
	return v[:i], v[i:], true
}
"""

PY_FILE = '''\
#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: MIT
"""Read retry policies from a YAML file.

A policy says how often a failed upload is tried again and how long to wait.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class RetryPolicy:
    attempts: int
    backoff_seconds: float


def load_retry_policy(path: str) -> RetryPolicy:
    """Parse the policy at path, raising ValueError on a negative backoff."""
    with open(path) as handle:
        fields = dict(line.split(":", 1) for line in handle if ":" in line)
    policy = RetryPolicy(int(fields["attempts"]), float(fields["backoff_seconds"]))
    if policy.backoff_seconds < 0:
        raise ValueError("backoff must not be negative")
    return policy
'''


# -- windows -------------------------------------------------------------------


def test_windows_close_at_the_first_line_end_past_a_hundred_words() -> None:
    windows = cut_windows(GO_FILE)

    assert len(windows) > 2
    for window in windows[:-1]:
        assert len(window.text.split()) >= 100
        assert len("\n".join(window.lines[:-1]).split()) < 100
    assert 0 < len(windows[-1].text.split())
    assert [w.ordinal for w in windows] == list(range(len(windows)))


def test_windows_lose_nothing_and_know_where_they_start() -> None:
    windows = cut_windows(GO_FILE)

    assert [line for w in windows for line in w.lines] == GO_FILE.split("\n")
    assert "\n".join(w.text for w in windows) == GO_FILE
    for window in windows:
        assert GO_FILE[window.start : window.start + len(window.text)] == window.text


def test_a_tail_of_blank_lines_makes_no_window() -> None:
    text = " ".join(["word"] * 100) + "\n\n  \n\t\n"

    windows = cut_windows(text)

    assert len(windows) == 1 and windows[0].text == " ".join(["word"] * 100)


def test_one_long_line_is_one_window() -> None:
    line = " ".join(f"w{i}" for i in range(250))

    assert [w.text for w in cut_windows(f"{line}\nshort tail")] == [line, "short tail"]


# -- headers -------------------------------------------------------------------


def test_go_header_is_the_package_line_and_the_doc_comment_not_the_licence() -> None:
    assert header(GO_FILE) == (
        "package semver\n"
        "Package semver implements comparison of semantic version strings. "
        'Version strings must begin with a leading "v", as in "v1.0.0".'
    )


def test_python_header_is_the_module_docstring_after_shebang_cookie_and_licence() -> None:
    assert header(PY_FILE) == (
        "Read retry policies from a YAML file. A policy says how often a failed upload "
        "is tried again and how long to wait."
    )


def test_block_comment_licence_is_skipped_and_namespace_found_after_includes() -> None:
    source = (
        "/*\n * Copyright (c) 2021 Example Corp.\n * Licensed under the Apache License.\n */\n"
        "#include <string>\n#define LIMIT 4\n\n"
        "/**\n * A ring buffer holding the last log lines.\n */\n"
        "namespace logging {\nclass Ring {};\n}\n"
    )

    assert header(source) == "namespace logging {\nA ring buffer holding the last log lines."


def test_ruby_magic_comment_is_not_the_header() -> None:
    source = (
        "# frozen_string_literal: true\n\nmodule Cache\n"
        "  # Keeps entries in memory.\n  class MemoryStore\n  end\nend\n"
    )

    assert header(source) == "module Cache\nKeeps entries in memory."


def test_header_comment_is_capped_and_prose_is_no_package_line() -> None:
    words = [f"word{i}" for i in range(200)]
    source = "package management is hard\n\n# " + " ".join(words) + "\nx = 1\n"

    assert header(source) == " ".join(words[:HEADER_COMMENT_WORDS])
    assert header("x = 1\ny = 2\n") == ""


# -- tokens and BM25 -----------------------------------------------------------


def test_tokens_split_camel_and_snake_case_and_drop_stop_words() -> None:
    found = tokens("parseVersion returns the HTTPServer for load_retry_policy, if it is")

    assert found == [
        "parseversion",
        "parse",
        "version",
        "returns",
        "httpserver",
        "http",
        "server",
        "load",
        "retry",
        "policy",
    ]
    assert tokens("getTheValue") == ["getthevalue", "get", "value"]


def test_bm25_matches_a_hand_computation() -> None:
    documents = [
        ["retry", "upload", "retry"],
        ["upload", "file"],
        ["parse", "version", "string", "file"],
    ]
    index = Bm25(documents)
    average = (3 + 2 + 4) / 3

    def expected(term_frequency: int, length: int, document_frequency: int) -> float:
        idf = math.log(1 + (3 - document_frequency + 0.5) / (document_frequency + 0.5))
        norm = 1.5 * (1 - 0.75 + 0.75 * length / average)
        return idf * term_frequency * 2.5 / (term_frequency + norm)

    scores = index.scores(["retry", "file"])

    assert scores[0] == pytest.approx(expected(2, 3, 1))
    assert scores[1] == pytest.approx(expected(1, 2, 2))
    assert scores[2] == pytest.approx(expected(1, 4, 2))
    assert index.idf[index.vocabulary["retry"]] == pytest.approx(math.log(1 + 2.5 / 1.5))
    assert list(index.scores(["absent"])) == [0.0, 0.0, 0.0]


def test_min_max_scales_to_the_unit_range_and_flattens_ties() -> None:
    assert list(min_max(np.array([2.0, 4.0, 3.0]))) == [0.0, 1.0, 0.5]
    assert list(min_max(np.array([0.0, 0.0]))) == [0.0, 0.0]


# -- the model and the whole backend --------------------------------------------


def test_long_texts_are_cut_to_the_model_length_keeping_their_start() -> None:
    cutter = PieceCutter(locate_local_model())
    long = " ".join(["tokenizationFoo naïve"] * 200)

    short, cut = cutter.cut(["a short text", long])

    assert short == "a short text"
    assert long.startswith(cut) and cutter.pieces(cut) == TEXT_PIECES


def _dataset(tmp_path: Path) -> Dataset:
    files = {
        "semver/semver.go": GO_FILE,
        "policy/retry.py": PY_FILE,
        "README.md": "# Tools\n\nSmall helpers for versions and retries.\n",
    }
    return Dataset(
        name="tiny",
        format="qa-spans",
        path=tmp_path,
        split=None,
        documents=tuple(
            EvalDocument(name, name, text.encode("utf-8")) for name, text in files.items()
        ),
        questions=(),
    )


async def test_a_query_naming_a_function_finds_its_window_first(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)

    async with plain_baseline(dataset, IndexConfig(cache_dir=tmp_path / "cache")) as corpus:
        result = await corpus.search("how is parseBuild implemented", RetrievalOptions(top_k=3))
        policy = await corpus.search("load the retry policy", RetrievalOptions(top_k=1))

    assert corpus.where == "plain baseline"
    assert corpus.embedding_model == "all-MiniLM-L6-v2"
    assert corpus.document_ids == {d.id: (d.id,) for d in dataset.documents}
    assert corpus.chunks == sum(len(cut_windows(d.content.decode())) for d in dataset.documents)
    assert (tmp_path / "cache" / "embeddings.sqlite3").is_file()

    top = result.hits[0]
    assert top.chunk.document_id == "semver/semver.go"
    assert "func parseBuild(" in top.chunk.text
    assert top.chunk.id == f"semver/semver.go:{top.chunk.ordinal}"
    assert top.chunk.embed_text.startswith("package semver\nPackage semver implements")
    assert top.keyword_score == max(hit.keyword_score or 0.0 for hit in result.hits)
    assert [hit.score for hit in result.hits] == sorted(
        (hit.score for hit in result.hits), reverse=True
    )
    assert "def load_retry_policy" in policy.hits[0].chunk.text
