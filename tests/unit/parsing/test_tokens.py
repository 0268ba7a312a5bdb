import hashlib

import pytest

from ragsage.errors import ConfigurationError
from ragsage.parsing import make_token_counter
from ragsage.parsing.tokens import cache_directory, load_encoding

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
