"""Parse throughput: HeuristicBackend.parse against raw pypdfium2 text extraction.

    python bench/parse.py [--docs N --pages M] [PDF ...]

With no paths a corpus of multi-page born-digital PDFs is drawn with reportlab
into a temporary directory.  Prints pages/s for both, the overhead ratio
(target < 1.5x), and chunks/s for the chunker over the parsed pages.
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import tempfile
import time
from pathlib import Path

import pypdfium2

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.documents import Document, RawSource

WORDS = (
    "ingestion worker queue document parser chunk token budget heading table page vision "
    "retrieval index postgres vector lexical fusion rerank citation answer tenant namespace"
).split()


def make_corpus(directory: Path, docs: int, pages: int) -> list[Path]:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen.canvas import Canvas

    rng = random.Random(7)
    paths = []
    for d in range(docs):
        buffer = io.BytesIO()
        canvas = Canvas(buffer, pagesize=A4)
        for p in range(pages):
            canvas.setFont("Helvetica-Bold", 16)
            canvas.drawString(60, 790, f"Section {d}.{p}: {rng.choice(WORDS).title()}")
            canvas.setFont("Helvetica", 10)
            for line in range(58):
                words = " ".join(rng.choice(WORDS) for _ in range(14))
                canvas.drawString(60, 770 - 12.5 * line, words.capitalize() + ".")
            canvas.showPage()
        canvas.save()
        path = directory / f"doc{d}.pdf"
        path.write_bytes(buffer.getvalue())
        paths.append(path)
    return paths


def raw_extract(blobs: list[bytes]) -> int:
    pages = 0
    for blob in blobs:
        pdf = pypdfium2.PdfDocument(blob)
        for page in pdf:
            textpage = page.get_textpage()
            textpage.get_text_bounded()
            textpage.close()
            page.close()
            pages += 1
        pdf.close()
    return pages


def best_of(runs: int, fn):  # the minimum is the least noisy estimate of the cost
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pdfs", nargs="*", type=Path)
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = args.pdfs or make_corpus(Path(tmp), args.docs, args.pages)
        blobs = [path.read_bytes() for path in paths]
    backend = HeuristicBackend()
    sources = [RawSource(blob, f"doc{i}.pdf") for i, blob in enumerate(blobs)]

    raw_time, pages = best_of(args.runs, lambda: raw_extract(blobs))
    parse_time, parsed = best_of(args.runs, lambda: [backend.parse(s) for s in sources])
    document = Document(id="bench", content_hash="0" * 64, title="bench", source="bench")
    backend.chunk(document, parsed[0].pages, size=512, overlap=64)  # load the encoding
    chunk_time, chunks = best_of(
        args.runs,
        lambda: sum(len(backend.chunk(document, p.pages, size=512, overlap=64)) for p in parsed),
    )
    print(f"corpus: {len(blobs)} PDFs, {pages} pages, {sum(map(len, blobs)) / 1e6:.1f} MB")
    print(f"raw pypdfium2 text:      {pages / raw_time:8.0f} pages/s")
    print(f"HeuristicBackend.parse:  {pages / parse_time:8.0f} pages/s")
    print(f"overhead ratio:          {parse_time / raw_time:8.2f}x (target < 1.5x)")
    print(f"chunker (512/64 tokens): {chunks / chunk_time:8.0f} chunks/s ({chunks} chunks)")


if __name__ == "__main__":
    sys.exit(main())
