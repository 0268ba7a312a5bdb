"""Composing an LLM client from a generator and a separate page transcriber.

Generation and transcription need not come from the same place: offline, the
extractive reader answers while Tesseract reads scanned pages; with a vision
model both can be OpenAI.  With neither, a scanned page cannot be read, and that
is reported rather than silently turned into an empty page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from ragsage.core.errors import RagsageError
from ragsage.core.geometry import PagePositions
from ragsage.core.pages import PageImage
from ragsage.core.ports import LLMClient


class Transcriber(Protocol):
    async def transcribe(self, image: PageImage) -> str: ...


@runtime_checkable
class PlacingTranscriber(Protocol):
    """A transcriber that also says where each line of its text is (OCR does; a model does not)."""

    async def transcribe_placed(self, image: PageImage) -> tuple[str, PagePositions | None]: ...


async def transcribe_placed(
    reader: Transcriber, image: PageImage
) -> tuple[str, PagePositions | None]:
    """``reader``'s text of ``image``, with its lines' positions when it can give them."""
    if isinstance(reader, PlacingTranscriber):
        return await reader.transcribe_placed(image)
    return await reader.transcribe(image), None


class TranscriptionUnavailable(RagsageError):
    """No vision model or OCR is configured, so a page image cannot be read."""


class NoTranscriber:
    """Refuses every page image, naming what to configure."""

    async def transcribe(self, image: PageImage) -> str:
        raise TranscriptionUnavailable(
            "no vision model or OCR is configured (install tesseract-ocr, or set "
            "RAGSAGE_TRANSCRIBER=openai with an OpenAI key)"
        )


class SplitLLMClient:
    """An LLMClient whose ``generate`` and ``transcribe`` come from different adapters."""

    def __init__(self, generator: LLMClient, transcriber: Transcriber) -> None:
        self.generator, self.transcriber = generator, transcriber

    def generate(self, prompt: str) -> AsyncIterator[str]:
        return self.generator.generate(prompt)

    async def transcribe(self, image: PageImage) -> str:
        return await self.transcriber.transcribe(image)

    async def transcribe_placed(self, image: PageImage) -> tuple[str, PagePositions | None]:
        return await transcribe_placed(self.transcriber, image)
