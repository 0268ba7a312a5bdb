from __future__ import annotations

from ragsage.core.text import identifier_words, name_words
from ragsage.core.types import Chunk, Scope
from ragsage.testing import FakeLexicalStore


def test_dotted_names_give_their_segments_and_camel_case_words() -> None:
    assert identifier_words("concurrent.futures.ThreadPoolExecutor") == (
        "concurrent futures threadpoolexecutor thread pool executor"
    )
    assert identifier_words("call getLogger() on an HTTPServer") == "get logger http server"
    assert identifier_words("/etc/ssl/certs") == "etc ssl certs"


def test_name_words_spell_out_compound_names_once_in_order_of_first_use() -> None:
    code = (
        "def retry_failed_upload(self):\n"
        "    server = HTTPServer(MAX_RETRY_COUNT)\n"
        "    return retryFailedUpload(server, os.path.join(a, b))\n"
    )
    assert name_words(code) == ["retry", "failed", "upload", "http", "server", "max", "count"]
    assert name_words(code, limit=2) == ["retry", "failed"]
    assert name_words("A plain sentence, with x_1 and one word names.") == []


def test_plain_prose_adds_nothing() -> None:
    assert identifier_words("A plain sentence, with punctuation. And another.") == ""


async def test_the_keyword_store_finds_an_identifier_by_its_parts() -> None:
    store, scope = FakeLexicalStore(), Scope("acme")
    code = _chunk("d", "Submit work to a ThreadPoolExecutor instance.")
    prose = _chunk("e", "The pool opens at nine.")
    await store.index(scope, [code, prose])
    (hit, *_) = await store.search(scope, "thread pool executor", k=2)
    assert hit.chunk.id == "d:0"
    (first, *_) = await store.search(scope, "ThreadPoolExecutor", k=2)
    assert first.chunk.id == "d:0"


def _chunk(document_id: str, body: str) -> Chunk:
    return Chunk(
        id=f"{document_id}:0", document_id=document_id, ordinal=0, text=body, embed_text=body
    )
