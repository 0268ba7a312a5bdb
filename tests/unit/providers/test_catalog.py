from __future__ import annotations

import pytest

from ragsage.adapters.providers.catalog import (
    OPENAI_MODELS,
    VOYAGE_MODELS,
    EmbeddingModelInfo,
    ResolvedEmbeddingModel,
    resolve_embedding_model,
)
from ragsage.core.errors import ConfigurationError


def resolve(
    model: str,
    dimension: int | None = None,
    catalogue: dict[str, EmbeddingModelInfo] = VOYAGE_MODELS,
) -> ResolvedEmbeddingModel:
    return resolve_embedding_model(
        catalogue, model, dimension=dimension, similarity_floor=None, provider="Test"
    )


def test_a_known_model_has_its_native_width_and_requests_none() -> None:
    resolved = resolve("voyage-3-large")
    assert (resolved.dimension, resolved.request_dimension) == (1024, None)
    assert resolve("voyage-3-large", 1024).request_dimension is None


def test_a_supported_shorter_width_is_requested() -> None:
    assert resolve("voyage-3.5", 512).request_dimension == 512
    assert resolve("text-embedding-3-large", 384, OPENAI_MODELS).request_dimension == 384


def test_an_unsupported_width_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="voyage-3 returns 1024-dimensional vectors;"):
        resolve("voyage-3", 256)
    with pytest.raises(ConfigurationError, match="any width below"):
        resolve("text-embedding-3-small", 4096, OPENAI_MODELS)


def test_an_unknown_model_needs_its_width() -> None:
    with pytest.raises(ConfigurationError, match="set its vector width"):
        resolve("nomic-embed-text", None, OPENAI_MODELS)
    resolved = resolve("nomic-embed-text", 768, OPENAI_MODELS)
    assert (resolved.dimension, resolved.request_dimension) == (768, None)


def test_floors_differ_by_model_and_can_be_overridden() -> None:
    ada = resolve("text-embedding-ada-002", None, OPENAI_MODELS).similarity_floor
    small = resolve("text-embedding-3-small", None, OPENAI_MODELS).similarity_floor
    assert ada > small
    overridden = resolve_embedding_model(
        VOYAGE_MODELS, "voyage-3", dimension=None, similarity_floor=0.42, provider="Voyage"
    )
    assert overridden.similarity_floor == 0.42
