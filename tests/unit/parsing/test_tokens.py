import hashlib
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ragsage.adapters.parsing import make_token_counter
from ragsage.adapters.parsing.tokens import (
    SuffixCounts,
    TokenTally,
    cache_directory,
    count_within,
    cuts_apply,
    is_cut,
    load_encoding,
    supported_encodings,
    token_floor,
)
from ragsage.core.errors import ConfigurationError
from tests.unit.parsing.conftest import encoded_characters

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def test_counts_tokens_offline_and_ignores_special_token_text():
    count = make_token_counter()
    assert count("hello world") == 2
    assert count("<|endoftext|>") > 1  # user text is never read as a control token
    assert count("") == 0


def test_seeds_a_verified_rank_file_that_tiktoken_itself_can_use(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert cache_directory() == tmp_path
    encoding = load_encoding.__wrapped__("cl100k_base")
    cached = tmp_path / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == CL100K_SHA256

    import tiktoken

    # With the cache seeded, tiktoken's own loader finds the file and never downloads.
    reference = tiktoken.get_encoding("cl100k_base")
    sample = "Structure-aware chunking, naïvely: 12345 tokens?"
    assert encoding.encode_ordinary(sample) == reference.encode_ordinary(sample)


def test_a_corrupt_cached_file_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cached = tmp_path / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    cached.write_bytes(b"garbage")
    load_encoding.__wrapped__("cl100k_base")
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == CL100K_SHA256


def test_ragsage_owns_its_cache_directory_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_directory() == tmp_path / "ragsage" / "tiktoken"


def test_an_unknown_encoding_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="cl100k_base"):
        make_token_counter("gpt9_base")


# --- the structure bounded counting relies on, checked against both real encoders -----

ENCODINGS = ("cl100k_base", "o200k_base")
# Characters where the tokenizer's pre-split is delicate: spaces of several kinds,
# newlines and carriage returns, slashes (o200k's punctuation pieces take "\n/"),
# the controls str.split breaks at but the tokenizer does not, marks, CJK, emoji.
TRICKY = [
    *"ab Z9 .)/\n\r\t'-{#|",
    *"\x0b\x0c\x1c\x1f\x85\xa0\u2028\u3000\u0301é字😀",
    "  ",
    "\n/",
    "//",
    "'s",
    "-->",
    "\n\n",
    " \n ",
]
tricky_text = st.lists(st.sampled_from(TRICKY), max_size=60).map("".join)
CHECKS = settings(max_examples=150, deadline=None)


def test_str_split_breaks_at_unicode_white_space_and_four_controls_more():
    # token_floor reads words with str.split; only these extra break points are subtracted.
    white_space = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000")
    white_space |= {chr(code) for code in range(0x2000, 0x200B)}
    splits = {chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace()}
    assert splits - white_space == set("\x1c\x1d\x1e\x1f")
    assert white_space <= splits


@pytest.mark.parametrize("name", ENCODINGS)
@CHECKS
@given(text=tricky_text)
@example(text=".\n/")  # one o200k token for two words: why "\n/" is subtracted
@example(text="}\n/ x;\n//")
def test_the_word_floor_never_exceeds_the_token_count(name, text):
    assert token_floor(text) <= make_token_counter(name)(text)


@pytest.mark.parametrize("name", ENCODINGS)
@CHECKS
@given(text=tricky_text)
def test_a_text_counts_as_the_sum_of_its_two_sides_at_every_cut(name, text):
    count = make_token_counter(name)
    whole = count(text)
    for position in range(1, len(text)):
        if is_cut(text, position, len(text)):
            assert count(text[:position]) + count(text[position:]) == whole, position


@pytest.mark.parametrize("name", ENCODINGS)
@CHECKS
@given(parts=st.lists(tricky_text, max_size=12), limit=st.integers(-1, 200))
def test_bounded_counts_are_exact_within_the_limit_and_over_it_otherwise(name, parts, limit):
    count = make_token_counter(name)
    text = "".join(parts)
    exact = count(text)
    bounded = count_within(count, text, limit)
    assert bounded == exact if exact <= limit else bounded > limit
    tally, so_far = TokenTally(count), ""
    for part in parts:
        assert tally.within(part, 10**9) == count(so_far + part)
        tally.append(part)
        so_far += part
    if text:
        suffixes = SuffixCounts(count, text, 0, len(text))
        assert [suffixes(start) for start in range(len(text))] == [
            count(text[start:]) for start in range(len(text))
        ]


def test_a_long_text_over_the_limit_is_not_encoded_whole(monkeypatch):
    encoded = encoded_characters(monkeypatch)
    count = make_token_counter()
    words = " ".join(["budget"] * 50_000)
    assert count_within(count, words, 100) > 100
    assert encoded[0] == 0  # refused by its word count alone
    # Few words, many tokens: encoded a part at a time, only until over.  (A
    # single giant word has no place to cut, and is encoded whole.)
    packed = " ".join(["x/" * 500] * 40)
    assert count_within(count, packed, 100) > 100
    assert encoded[0] < 3_000 < len(packed)


def test_other_counters_get_no_shortcuts():
    def plain(text: str) -> int:
        return len(text)

    assert not cuts_apply(plain)
    assert cuts_apply(make_token_counter("o200k_base"))
    assert count_within(plain, "a b " * 1000, 10) == 4000
    assert {*supported_encodings()} <= {"cl100k_base", "o200k_base"}  # what the checks cover
