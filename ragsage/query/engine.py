"""The query engine: from a question to ranked passages and a cited, streamed answer.

Retrieval (rewrite, dense and lexical search, fusion, rerank, the relevance
floor, context expansion) is :mod:`ragsage.query.retrieval`; this module turns
its passages into a grounded prompt, streams the tokens and keeps the
citations the answer used.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace

from ragsage.core.chunks import Chunk
from ragsage.core.conversations import Turn
from ragsage.core.filters import SearchFilters
from ragsage.core.ports import (
    DocumentStore,
    Embedder,
    LexicalStore,
    LLMClient,
    PagePositionsReader,
    QueryRewriter,
    Reranker,
    Tracer,
    VectorStore,
)
from ragsage.core.prompts import (
    PromptSource,
    attributed_text,
    cited_numbers,
    grounded_prompt,
    small_talk_prompt,
)
from ragsage.core.scopes import Scope
from ragsage.core.text import clean
from ragsage.core.tracing import NullTracer, elapsed_ms, timed_stage
from ragsage.query.citing import locate
from ragsage.query.options import QueryConfig, RetrievalOptions
from ragsage.query.passages import cited_lines
from ragsage.query.results import (
    Answer,
    AnswerEvent,
    ChunkContext,
    Citation,
    CitationsEvent,
    DoneEvent,
    PageBox,
    RetrievalResult,
    SearchHit,
    TokenEvent,
)
from ragsage.query.retrieval import Retriever
from ragsage.query.smalltalk import is_small_talk


class QueryEngine:
    """Answers questions over one namespace at a time, always citing its sources."""

    def __init__(
        self,
        *,
        embedder: Embedder,
        vector_store: VectorStore,
        lexical_store: LexicalStore,
        document_store: DocumentStore,
        llm: LLMClient,
        reranker: Reranker | None = None,
        rewriter: QueryRewriter | None = None,
        tracer: Tracer | None = None,
        config: QueryConfig | None = None,
    ) -> None:
        self.embedder, self.vector_store = embedder, vector_store
        self.lexical_store, self.document_store = lexical_store, document_store
        self.llm, self.reranker, self.rewriter = llm, reranker, rewriter
        self.tracer: Tracer = tracer or NullTracer()
        self.config = config or QueryConfig()
        self._retriever = Retriever(
            embedder=embedder,
            vector_store=vector_store,
            lexical_store=lexical_store,
            document_store=document_store,
            reranker=reranker,
            rewriter=rewriter,
            config=self.config,
        )

    # ------------------------------------------------------------------ retrieval

    async def search(
        self,
        scope: Scope,
        query: str,
        options: RetrievalOptions | None = None,
        *,
        history: Sequence[Turn] = (),
    ) -> RetrievalResult:
        """Ranked passages for ``query`` that pass the relevance floor (maybe none)."""
        with self.tracer.span("search", tenant=scope.namespace) as root:
            return await self._retriever.retrieve(
                root, scope, query, options or RetrievalOptions(), history, answering=False
            )

    # ------------------------------------------------------------------ answering

    async def stream_answer(
        self,
        scope: Scope,
        question: str,
        *,
        history: Sequence[Turn] = (),
        options: RetrievalOptions | None = None,
    ) -> AsyncGenerator[AnswerEvent, None]:
        """Stream an answer: tokens as they come, then the citations, then done."""
        started = time.perf_counter()
        question = clean(question)
        with self.tracer.span("answer", tenant=scope.namespace) as root:
            if is_small_talk(question):
                root.set(small_talk=True)
                text = ""
                with root.child("generate", small_talk=True):
                    async for token in self.llm.generate(small_talk_prompt(question)):
                        text += token
                        yield TokenEvent(token)
                yield CitationsEvent(())
                yield DoneEvent(
                    text.strip(), False, True, question, {"total_ms": elapsed_ms(started)}
                )
                return

            result = await self._retriever.retrieve(
                root, scope, question, self._answer_options(options), history, answering=True
            )
            timing = dict(result.timing_ms)
            if result.not_found:
                root.set(not_found=True)
                message = self.config.not_found_message
                yield TokenEvent(message)
                yield CitationsEvent(())
                timing["total_ms"] = elapsed_ms(started)
                yield DoneEvent(message, True, False, result.query, timing)
                return

            sources = self._sources(result.hits)
            text = ""
            with timed_stage(root, timing, "generate_ms", "generate", sources=len(sources)) as span:
                async for token in self.llm.generate(grounded_prompt(result.query, sources)):
                    text += token
                    yield TokenEvent(token)
                citations = self._citations(text, result.hits)
                span.set(cited=len(citations))
            citations = await self._drawn(scope, citations)
            yield CitationsEvent(citations)
            timing["total_ms"] = elapsed_ms(started)
            yield DoneEvent(text.strip(), False, False, result.query, timing)

    async def answer(
        self,
        scope: Scope,
        question: str,
        *,
        history: Sequence[Turn] = (),
        options: RetrievalOptions | None = None,
    ) -> Answer:
        """The whole answer at once; :meth:`stream_answer` collected."""
        citations: tuple[Citation, ...] = ()
        async for event in self.stream_answer(scope, question, history=history, options=options):
            if isinstance(event, CitationsEvent):
                citations = event.citations
            elif isinstance(event, DoneEvent):
                return Answer(
                    text=event.answer,
                    citations=citations,
                    not_found=event.not_found,
                    small_talk=event.small_talk,
                    query=event.query,
                    timing_ms=event.timing_ms,
                )
        raise RuntimeError("answer stream ended without a done event")

    def _answer_options(self, options: RetrievalOptions | None) -> RetrievalOptions:
        """The request's options, filled to the configured context budget if it set none."""
        options = options or RetrievalOptions()
        words = self.config.context_words
        if words and options.budget_tokens is None:
            return replace(options, budget_tokens=words)
        return options

    def _sources(self, hits: Sequence[SearchHit]) -> list[PromptSource]:
        # Under a budget the passages were cut to it already; otherwise each is capped.
        limit = None if self.config.context_words else self.config.max_source_chars
        return [
            PromptSource(
                number=number,
                title=_title(hit.chunk, hit.chunk.heading_path),
                text=hit.context_text[:limit],
            )
            for number, hit in enumerate(hits, start=1)
        ]

    @staticmethod
    def _citations(answer: str, hits: Sequence[SearchHit]) -> tuple[Citation, ...]:
        cited = []
        claims = attributed_text(answer)
        for number in cited_numbers(answer):
            if not 1 <= number <= len(hits):
                continue  # a model inventing [7] of five sources cites nothing
            chunk = hits[number - 1].chunk
            where = locate(chunk, claims.get(number, ""))
            path = where.section.heading_path
            cited.append(
                Citation(
                    number=number,
                    chunk_id=chunk.id,
                    document_id=chunk.document_id,
                    source=chunk.source,
                    title=_title(chunk, path),
                    heading_path=path,
                    page_numbers=(where.section.page,) if chunk.sections else chunk.page_numbers,
                    text=chunk.text,
                    quote=where.quote,
                    start=where.start,
                    end=where.end,
                    page_start=where.page_start,
                    page_end=where.page_end,
                    located=where.located,
                    lines=cited_lines(chunk, where.start, where.end),
                )
            )
        return tuple(cited)

    async def _drawn(self, scope: Scope, citations: tuple[Citation, ...]) -> tuple[Citation, ...]:
        """The citations with the boxes of their quoted words, where their pages were placed.

        One read for all of them, and only from a store that kept positions
        (:class:`PagePositionsReader`); a citation that aligned with nothing
        gets none.
        """
        store = self.document_store

        def page_of(citation: Citation) -> tuple[str, int] | None:
            if not (citation.quote and citation.page_numbers):
                return None
            return citation.document_id, citation.page_numbers[0]

        wanted = sorted({page for page in map(page_of, citations) if page is not None})
        if not wanted or not isinstance(store, PagePositionsReader):
            return citations
        placed = await store.page_positions(scope, wanted)
        drawn = []
        for citation in citations:
            page = page_of(citation)
            where = placed.get(page) if page is not None else None
            if page is None or where is None:
                drawn.append(citation)
                continue
            boxes = where.boxes(citation.page_start, citation.page_end)
            on_page = tuple(PageBox.on(page[1], box, where) for box in boxes)
            drawn.append(replace(citation, boxes=on_page))
        return tuple(drawn)

    # ------------------------------------------------------------------ browsing

    async def fetch_chunk(
        self,
        scope: Scope,
        chunk_id: str,
        *,
        chunks_above: int = 0,
        chunks_below: int = 0,
        filters: SearchFilters | None = None,
    ) -> ChunkContext | None:
        """A chunk by id with up to the given number of neighbours each side.

        With ``filters``, a chunk they do not pass is absent, as are such neighbours.
        """
        chunk = await self.document_store.get_chunk(scope, chunk_id)
        if chunk is None or (filters is not None and not filters.matches(chunk)):
            return None
        if not (chunks_above or chunks_below):
            return ChunkContext(chunk=chunk)
        return await self._retriever.neighbours(scope, chunk, chunks_above, chunks_below, filters)

    async def list_sources(self, scope: Scope, filters: SearchFilters | None = None) -> list[str]:
        """The distinct sources of the namespace's documents (those ``filters`` pass), sorted."""
        return sorted(
            {
                document.source
                for document in await self.document_store.list(scope)
                if filters is None or filters.matches_document(document)
            }
        )

    async def count(self, scope: Scope) -> int:
        """How many chunks the namespace holds."""
        return await self.document_store.count_chunks(scope)


def _title(chunk: Chunk, heading_path: tuple[str, ...]) -> str:
    title = str(chunk.metadata.get("title") or chunk.source)
    path = list(heading_path)
    if path and path[0] == title:
        path.pop(0)  # a Markdown file's first heading is usually its title too
    return " > ".join((title, *path))
