from __future__ import annotations

from ragsage.core.chunks import Chunk
from ragsage.core.scopes import Scope
from ragsage.core.text import identifier_words, name_words
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


def test_a_snake_case_name_is_also_one_word_run_together() -> None:
    assert identifier_words("walk me through run_CONNECTING") == "runconnecting"
    assert identifier_words("IndexMap::last_mut") == "indexmap last_mut index map lastmut"
    assert identifier_words("__init__ and _private") == ""  # one part is no compound name


async def test_the_keyword_store_finds_a_snake_case_name_before_its_parts() -> None:
    store, scope = FakeLexicalStore(), Scope("acme")
    await store.index(
        scope,
        [
            _chunk("d", "Every run keeps connecting peers, run after run, connecting again."),
            _chunk("e", "def run_connecting(peer): dial until it answers"),
        ],
    )
    (hit, *_) = await store.search(scope, "what does run_connecting do?", k=2)
    assert hit.chunk.id == "e:0"


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
