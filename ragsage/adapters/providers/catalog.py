"""What ragsage knows about hosted embedding models without asking them.

The width of a model's vectors sizes the store's vector column, so it must be
known when the process starts, not after the first call.  Models missing here
(anything an OpenAI-compatible server hosts, say) need their width configured.

Similarity floors are the cosine below which a match is noise.  They are
per-model because models spread cosines very differently (``ada-002`` puts
unrelated texts near 0.7, ``text-embedding-3`` near 0.1); the values are
conservative estimates, and ``ProviderConfig.similarity_floor`` overrides them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragsage.core.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class EmbeddingModelInfo:
    """A hosted embedding model's native width, other widths, limits and floor."""

    dimension: int
    other_dimensions: tuple[int, ...] = ()
    similarity_floor: float = 0.25
    max_batch_tokens: int = 120_000
    any_smaller: bool = False

    def accepts(self, width: int) -> bool:
        """Whether the model can be asked for vectors ``width`` wide."""
        if self.any_smaller:
            return 1 <= width <= self.dimension
        return width == self.dimension or width in self.other_dimensions

    def describe(self) -> str:
        if self.any_smaller:
            return f"{self.dimension}-dimensional vectors (or any width below)"
        widths = "".join(f", {width}" for width in self.other_dimensions)
        return f"{self.dimension}-dimensional vectors" + (f" (or {widths[2:]})" if widths else "")


_MATRYOSHKA = (256, 512, 2048)
VOYAGE_MODELS: dict[str, EmbeddingModelInfo] = {
    "voyage-3-large": EmbeddingModelInfo(1024, _MATRYOSHKA, 0.3, 120_000),
    "voyage-3.5": EmbeddingModelInfo(1024, _MATRYOSHKA, 0.3, 320_000),
    "voyage-3.5-lite": EmbeddingModelInfo(1024, _MATRYOSHKA, 0.3, 1_000_000),
    "voyage-code-3": EmbeddingModelInfo(1024, _MATRYOSHKA, 0.3, 120_000),
    "voyage-3": EmbeddingModelInfo(1024, (), 0.3, 320_000),
    "voyage-3-lite": EmbeddingModelInfo(512, (), 0.3, 1_000_000),
    "voyage-finance-2": EmbeddingModelInfo(1024, (), 0.3, 120_000),
    "voyage-law-2": EmbeddingModelInfo(1024, (), 0.3, 120_000),
    "voyage-multilingual-2": EmbeddingModelInfo(1024, (), 0.3, 120_000),
    "voyage-code-2": EmbeddingModelInfo(1536, (), 0.3, 120_000),
    "voyage-large-2": EmbeddingModelInfo(1536, (), 0.3, 120_000),
    "voyage-2": EmbeddingModelInfo(1024, (), 0.3, 320_000),
}
OPENAI_MODELS: dict[str, EmbeddingModelInfo] = {
    # text-embedding-3 shortens its vectors to any requested width.
    "text-embedding-3-small": EmbeddingModelInfo(1536, (), 0.2, 300_000, any_smaller=True),
    "text-embedding-3-large": EmbeddingModelInfo(3072, (), 0.2, 300_000, any_smaller=True),
    "text-embedding-ada-002": EmbeddingModelInfo(1536, (), 0.75, 300_000),
}
# An unknown model behind an OpenAI-compatible server: no width is sent, the
# configured one is checked against each reply, and the budget stays modest.
_UNKNOWN_FLOOR = 0.25
_UNKNOWN_BATCH_TOKENS = 100_000


@dataclass(frozen=True, slots=True)
class ResolvedEmbeddingModel:
    """The width to expect, whether to ask for it, the floor and the token budget."""

    name: str
    dimension: int
    request_dimension: int | None
    similarity_floor: float
    max_batch_tokens: int


def resolve_embedding_model(
    catalogue: dict[str, EmbeddingModelInfo],
    model: str,
    *,
    dimension: int | None,
    similarity_floor: float | None,
    provider: str,
) -> ResolvedEmbeddingModel:
    """Decide ``model``'s width without a network call, or say what to configure."""
    if not model:
        raise ConfigurationError(f"no {provider} embedding model is configured")
    info = catalogue.get(model)
    if info is None:
        if dimension is None:
            raise ConfigurationError(
                f"the {provider} embedding model {model!r} is not one ragsage knows; "
                "set its vector width (RAGSAGE_EMBEDDING_DIM)"
            )
        floor = _UNKNOWN_FLOOR if similarity_floor is None else similarity_floor
        return ResolvedEmbeddingModel(model, dimension, None, floor, _UNKNOWN_BATCH_TOKENS)
    floor = info.similarity_floor if similarity_floor is None else similarity_floor
    if dimension is None or dimension == info.dimension:
        return ResolvedEmbeddingModel(model, info.dimension, None, floor, info.max_batch_tokens)
    if not info.accepts(dimension):
        raise ConfigurationError(
            f"{model} returns {info.describe()}; {dimension} was configured (RAGSAGE_EMBEDDING_DIM)"
        )
    return ResolvedEmbeddingModel(model, dimension, dimension, floor, info.max_batch_tokens)


def catalog_widths(limit: int = 2000) -> tuple[int, ...]:
    """Every width a catalog model offers that an index of ``limit`` dimensions takes.

    These are the widths indexed by default.  Models that shorten their
    vectors to any width (OpenAI's text-embedding-3) count with their native
    width only; a wider native width (3,072) is served by asking for a
    narrower one, which the operator adds to the configured set.
    """
    widths: set[int] = set()
    for info in (*VOYAGE_MODELS.values(), *OPENAI_MODELS.values()):
        widths.update(w for w in (info.dimension, *info.other_dimensions) if w <= limit)
    return tuple(sorted(widths))
