"""The chunking fingerprint a re-index compares before reusing a generation's rows."""

from __future__ import annotations

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.ingestion import IngestionConfig
from ragsage.ingestion.fingerprint import chunking_fingerprint


def _print(
    config: IngestionConfig | None = None,
    chunker: object | None = None,
    contextualizer: object | None = None,
) -> str:
    return chunking_fingerprint(
        config or IngestionConfig(),
        chunker or HeuristicBackend(),
        contextualizer or HeadingWindowContextualizer(),
    )


def test_the_same_settings_give_the_same_fingerprint_in_any_process() -> None:
    assert _print() == _print()
    assert len(_print()) == 16 and int(_print(), 16) >= 0


def test_every_setting_that_changes_the_chunks_or_their_embed_text_moves_it() -> None:
    base = _print()
    changed = {
        "size": _print(IngestionConfig(chunk_size=256)),
        "overlap": _print(IngestionConfig(chunk_overlap=32)),
        "code chunking": _print(chunker=HeuristicBackend(code_chunking="lines")),
        "joined sections": _print(chunker=HeuristicBackend(join_sections=0.5)),
        "context window": _print(contextualizer=HeadingWindowContextualizer(window=0)),
        "context budget": _print(contextualizer=HeadingWindowContextualizer(max_context_tokens=64)),
        "no context": _print(IngestionConfig(contextualize=False)),
    }
    assert all(value != base for value in changed.values()), changed
    assert len(set(changed.values())) == len(changed)


def test_the_contextualizer_does_not_count_when_nothing_is_contextualized() -> None:
    off = IngestionConfig(contextualize=False)
    narrow = HeadingWindowContextualizer(window=0)
    assert _print(off) == _print(off, contextualizer=narrow)
