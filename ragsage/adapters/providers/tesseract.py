"""Transcribing page images offline with Tesseract OCR (through pytesseract)."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import io
import re
import shutil
from typing import Any

from ragsage.core.errors import ConfigurationError, PermanentProviderError, RetryableProviderError
from ragsage.core.types import PageImage

_INSTALL_BINARY = "install it with `apt-get install tesseract-ocr tesseract-ocr-eng`"
_BLANK_RUNS = re.compile(r"\n{3,}")


def tesseract_available() -> bool:
    """Whether the ``tesseract`` program and the pytesseract binding are installed."""
    if shutil.which("tesseract") is None:
        return False
    return importlib.util.find_spec("pytesseract") is not None


class TesseractTranscriber:
    """Reads the text of a page image with Tesseract: the vision route with no model.

    pytesseract runs the ``tesseract`` program once per page, in a worker thread
    so the event loop is not held; a separate process also means a crash on a
    hostile image costs one page, not the worker.  Output is plain text (OCR
    sees no Markdown structure), with layout blank lines kept as paragraph
    breaks.  ``language`` takes Tesseract's codes (``eng``, ``deu+eng``...), and
    each language needs its data package installed.
    """

    def __init__(self, *, language: str = "eng", timeout_seconds: float = 120.0) -> None:
        if shutil.which("tesseract") is None:
            raise ConfigurationError(f"the tesseract program is not installed: {_INSTALL_BINARY}")
        try:
            self._tesseract: Any = importlib.import_module("pytesseract")
        except ImportError as exc:
            raise ConfigurationError(
                "Tesseract OCR needs pytesseract: pip install 'ragsage[local]'"
            ) from exc
        installed = set(self._tesseract.get_languages(config=""))
        missing = [code for code in language.split("+") if code not in installed]
        if missing:
            raise ConfigurationError(
                f"Tesseract has no data for {', '.join(missing)}; install "
                + " ".join(f"tesseract-ocr-{code}" for code in missing)
            )
        self._language = language
        self._timeout = timeout_seconds

    async def transcribe(self, image: PageImage) -> str:
        return await asyncio.to_thread(self._read, image)

    def _read(self, image: PageImage) -> str:
        from PIL import Image

        try:
            with Image.open(io.BytesIO(image.data)) as picture:
                # A copy (or conversion) outlives the ``with``, which closes the original.
                page = (
                    picture.copy() if picture.mode in ("1", "L", "RGB") else picture.convert("RGB")
                )
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise PermanentProviderError(
                f"the page image ({image.media_type}) cannot be decoded: {exc}"
            ) from exc
        try:
            text: str = self._tesseract.image_to_string(
                page, lang=self._language, timeout=self._timeout
            )
        except self._tesseract.TesseractNotFoundError as exc:
            raise PermanentProviderError(
                f"the tesseract program has gone: {_INSTALL_BINARY}"
            ) from exc
        except self._tesseract.TesseractError as exc:
            raise PermanentProviderError(f"Tesseract failed on a page image: {exc}") from exc
        except RuntimeError as exc:
            # pytesseract's other RuntimeError is its timeout; a busy machine may do better later.
            raise RetryableProviderError(
                f"Tesseract took longer than {self._timeout:g} s on a page"
            ) from exc
        return _tidy(text)


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\f", "\n").splitlines()]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()
