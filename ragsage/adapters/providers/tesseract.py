"""Transcribing page images offline with Tesseract OCR (through pytesseract)."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import io
import re
import shutil
from collections.abc import Callable
from typing import Any

from ragsage.core.errors import ConfigurationError, PermanentProviderError, RetryableProviderError
from ragsage.core.geometry import PagePositions
from ragsage.core.pages import PageImage

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

    async def transcribe_placed(self, image: PageImage) -> tuple[str, PagePositions | None]:
        """The page's text with each line's box, from the words Tesseract found.

        The text is built from Tesseract's words (a line's words joined by
        spaces, a paragraph's lines by line breaks, paragraphs by a blank line),
        so every line's span in it is known; boxes are in the image's pixels,
        which is the page's size for a highlight drawn in proportion.
        """
        return await asyncio.to_thread(self._read_placed, image)

    def _read_placed(self, image: PageImage) -> tuple[str, PagePositions | None]:
        page = self._picture(image)
        words = self._tesseract.Output.DICT
        data = self._ocr(
            lambda: self._tesseract.image_to_data(
                page, lang=self._language, timeout=self._timeout, output_type=words
            )
        )
        return placed_text(data, page.width, page.height)

    def _read(self, image: PageImage) -> str:
        page = self._picture(image)
        text: str = self._ocr(
            lambda: self._tesseract.image_to_string(
                page, lang=self._language, timeout=self._timeout
            )
        )
        return _tidy(text)

    def _picture(self, image: PageImage) -> Any:
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
        return page

    def _ocr(self, run: Callable[[], Any]) -> Any:
        try:
            return run()
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


def placed_text(data: dict[str, list[Any]], width: int, height: int) -> tuple[str, PagePositions]:
    """Text and line boxes from Tesseract's word table (``image_to_data``)."""
    lines: dict[tuple[int, int, int], list[int]] = {}
    for index, word in enumerate(data["text"]):
        if str(word).strip():
            key = (
                int(data["block_num"][index]),
                int(data["par_num"][index]),
                int(data["line_num"][index]),
            )
            lines.setdefault(key, []).append(index)
    text_parts: list[str] = []
    flat: list[float] = []
    offset = 0
    previous: tuple[int, int] | None = None
    for (block, paragraph, _), members in lines.items():
        if previous is not None:
            gap = "\n" if previous == (block, paragraph) else "\n\n"
            text_parts.append(gap)
            offset += len(gap)
        previous = (block, paragraph)
        line = " ".join(str(data["text"][i]).strip() for i in members)
        left = min(int(data["left"][i]) for i in members)
        top = min(int(data["top"][i]) for i in members)
        right = max(int(data["left"][i]) + int(data["width"][i]) for i in members)
        bottom = max(int(data["top"][i]) + int(data["height"][i]) for i in members)
        flat += (offset, offset + len(line), left, top, right, bottom)
        text_parts.append(line)
        offset += len(line)
    text = "".join(text_parts)
    return text, PagePositions(float(width), float(height), tuple(flat), text)


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\f", "\n").splitlines()]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()
