"""Embedder running a small sentence-embedding model on the CPU, fully offline."""

from __future__ import annotations

import asyncio
import gzip
import importlib
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ragsage.adapters.providers.local_int8 import int8_model
from ragsage.adapters.providers.local_model import LocalModelFiles, locate_local_model
from ragsage.core.cores import cores_per_process, shared
from ragsage.core.errors import ConfigurationError
from ragsage.core.ports import InputType

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

# Calibrated on all-MiniLM-L6-v2 (see tests/unit/providers/test_local_models.py): texts on
# unrelated topics score about -0.05 to 0.15 against a question; a passage that
# answers it scores 0.35 or more.
MINILM_SIMILARITY_FLOOR = 0.2

# What becomes of a text longer than the model reads: read whole in overlapping
# windows, or cut at the model's length as sentence-transformers does (faster,
# and much worse on prose: bench/RESULTS.md, "The local model at its compute limit").
LongTexts = Literal["windows", "truncate"]
LONG_TEXTS: tuple[LongTexts, ...] = ("windows", "truncate")
# The arithmetic of the model's matrix products (see local_int8.py).
Precision = Literal["int8", "float"]
PRECISIONS: tuple[Precision, ...] = ("int8", "float")


def long_texts_of(name: str) -> LongTexts:
    """The way of reading long texts named ``name`` (a setting's value)."""
    for way in LONG_TEXTS:
        if way == name:
            return way
    raise ConfigurationError(f"long texts are read by {' or '.join(LONG_TEXTS)}, not {name!r}")


def precision_of(name: str) -> Precision:
    """The precision named ``name`` (a setting's value)."""
    for precision in PRECISIONS:
        if precision == name:
            return precision
    raise ConfigurationError(f"the local model runs in {' or '.join(PRECISIONS)}, not {name!r}")


class LocalEmbedder:
    """Embedder over an ONNX sentence-embedding model (all-MiniLM-L6-v2 by default).

    Tokens are mean-pooled under the attention mask and L2-normalised, as the
    model was trained.  The model reads at most ``max_tokens`` word-pieces, so a
    longer text is embedded as overlapping windows whose vectors are averaged
    (weighted by length) and normalised again — its end is never silently cut
    off, unless ``long_texts="truncate"`` asks for speed over it.  By default
    the weight products run in int8 (:mod:`local_int8`); ``precision="float"``
    runs the packaged file as it is.  Inference runs in a worker thread, one
    batch at a time, with as many threads as this process's share of the cores
    (:mod:`ragsage.core.cores`), so the event loop stays responsive while the
    CPU works.  MiniLM is symmetric: ``input_type`` changes nothing.
    """

    def __init__(
        self,
        files: LocalModelFiles | None = None,
        *,
        max_tokens: int = 256,
        window_overlap: int = 32,
        batch_size: int = 8,
        threads: int = 0,
        similarity_floor: float = MINILM_SIMILARITY_FLOOR,
        long_texts: LongTexts = "windows",
        precision: Precision = "int8",
        model_cache: Path | None = None,
    ) -> None:
        if max_tokens < 8 or not 0 <= window_overlap < (max_tokens - 2) // 2:
            raise ConfigurationError(
                "the local embedder needs max_tokens >= 8 and a window overlap below half of it"
            )
        self._long_texts = long_texts_of(long_texts)
        self._precision = precision_of(precision)
        self._files = files or locate_local_model()
        self._window = max_tokens - 2  # room for [CLS] and [SEP]
        self._stride = self._window - window_overlap
        # In int8 a batch shares one activation scale, so a text's vector would
        # depend on its neighbours in the batch: each window runs alone, which
        # these cores do as fast as in batches of 8 (no padding either).
        self._batch_size = 1 if self._precision == "int8" else max(1, batch_size)
        threads = threads or cores_per_process()
        # A lone window is too small a product to split across cores: every
        # operator would end in a barrier, and one core interrupted stalls the
        # other.  So int8 runs as many windows at once as the process has cores,
        # each on one thread; a float batch is big enough to split.
        self._parallel = threads if self._precision == "int8" else 1
        self._floor = similarity_floor
        self._tokenizer = _load_tokenizer(self._files)
        self._cls, self._sep = _special_ids(self._tokenizer)
        model = self._files.model
        if self._precision == "int8":
            model = int8_model(model, self._files.name, model_cache)
        self._session = _load_session(model, threads // self._parallel)
        self._input_names = {node.name for node in self._session.get_inputs()}
        # At most ``_parallel`` inferences at once, however many callers embed
        # concurrently: more would only fight for the cores.  A semaphore (not
        # an asyncio one) works from any event loop and any thread.
        self._slots = threading.BoundedSemaphore(self._parallel)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_owner = 0
        self._pool_lock = threading.Lock()
        self._dimension = self._probe_dimension()

    @property
    def model(self) -> str:
        return self._files.name

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def similarity_floor(self) -> float:
        return self._floor

    @property
    def precision(self) -> Precision:
        """The arithmetic the model's matrix products run in."""
        return self._precision

    @property
    def long_texts(self) -> LongTexts:
        """How a text longer than the model reads is embedded."""
        return self._long_texts

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        if not texts:
            return []
        return await asyncio.to_thread(self.embed_sync, list(texts))

    def embed_sync(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """:meth:`embed` without the thread hop, for callers that are not async."""
        import numpy as np

        windows: list[list[int]] = []
        owners: list[int] = []
        for owner, ids in enumerate(self.word_pieces(texts)):
            for window in self._windows(ids):
                windows.append([self._cls, *window, self._sep])
                owners.append(owner)
        pooled = self._run(windows)
        weights = np.array([len(window) for window in windows], dtype=np.float32)
        summed = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
        np.add.at(summed, np.array(owners), pooled * weights[:, None])
        return [tuple(row) for row in _normalised(summed).tolist()]

    def word_pieces(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, without the special tokens a window adds."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [encoding.ids for encoding in encodings]

    def window_lengths(self, length: int) -> list[int]:
        """The lengths (with [CLS] and [SEP]) of the passes a text of ``length`` pieces costs."""
        return [len(window) + 2 for window in self._windows(range(length))]

    def _windows(self, ids: Sequence[int]) -> list[Sequence[int]]:
        if len(ids) <= self._window:
            return [ids]
        if self._long_texts == "truncate":
            return [ids[: self._window]]
        # As few windows as cover the text with the overlap, all of one length:
        # fixed full windows would read most of a text just over the limit twice.
        overlap = self._window - self._stride
        count = -(-(len(ids) - overlap) // self._stride)
        length = -(-(len(ids) + (count - 1) * overlap) // count)
        step = (len(ids) - length) / (count - 1)
        return [ids[round(i * step) : round(i * step) + length] for i in range(count)]

    def _run(self, windows: list[list[int]]) -> NDArray[np.float32]:
        """Mean-pooled, normalised vectors of ``windows``, in their given order."""
        import numpy as np

        # Similar lengths share a batch, so little of each batch is padding.
        order = sorted(range(len(windows)), key=lambda index: len(windows[index]))
        batches = [
            order[first : first + self._batch_size]
            for first in range(0, len(order), self._batch_size)
        ]
        if self._parallel > 1 and len(batches) > 1:
            results = list(self._threads().map(lambda batch: self._pooled(windows, batch), batches))
        else:
            results = [self._pooled(windows, batch) for batch in batches]
        out = np.empty((len(windows), results[0].shape[1]), dtype=np.float32)
        for batch, vectors in zip(batches, results, strict=True):
            out[batch] = vectors
        return out

    def _pooled(self, windows: list[list[int]], batch: list[int]) -> NDArray[np.float32]:
        import numpy as np

        width = max(len(windows[index]) for index in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, index in enumerate(batch):
            ids[row, : len(windows[index])] = windows[index]
            mask[row, : len(windows[index])] = 1
        hidden = self._infer(ids, mask)
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        return _normalised(summed / mask.sum(axis=1, keepdims=True))

    def _threads(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            # A forked child inherits the pool object but none of its threads.
            if self._pool is None or self._pool_owner != os.getpid():
                self._pool = ThreadPoolExecutor(self._parallel, thread_name_prefix="local-model")
                self._pool_owner = os.getpid()
            return self._pool

    def _infer(self, ids: NDArray[np.int64], mask: NDArray[np.int64]) -> NDArray[np.float32]:
        import numpy as np

        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._slots:
            (hidden, *_) = self._session.run(None, feeds)
        return np.asarray(hidden, dtype=np.float32)

    def _probe_dimension(self) -> int:
        width = self._session.get_outputs()[0].shape[-1]
        if isinstance(width, int):
            return width
        # An export with a symbolic hidden size: ask the model once.
        return len(self.embed_sync(["probe"])[0])


def _normalised(rows: NDArray[np.float32]) -> NDArray[np.float32]:
    import numpy as np

    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.asarray(rows / np.maximum(norms, 1e-12), dtype=np.float32)


def _load_tokenizer(files: LocalModelFiles) -> Tokenizer:
    from tokenizers import Tokenizer

    try:
        raw = files.tokenizer.read_bytes()
        if files.tokenizer.suffix == ".gz":
            raw = gzip.decompress(raw)
        tokenizer = Tokenizer.from_str(raw.decode("utf-8"))
    except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
        raise ConfigurationError(f"cannot load the tokenizer {files.tokenizer}: {exc}") from exc
    # Windowing, not the tokenizer, decides what fits the model.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _special_ids(tokenizer: Tokenizer) -> tuple[int, int]:
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    if cls is None or sep is None:
        raise ConfigurationError("the local model's tokenizer has no [CLS]/[SEP] tokens")
    return cls, sep


def _load_session(model: Path, threads: int) -> Any:
    # onnxruntime ships no type information; it is loaded by name, and only here,
    # so importing ragsage.adapters.providers never pays for it.
    ort = importlib.import_module("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if shared():
        # Waiting threads spin by default: on cores another worker process needs,
        # that is CPU taken from its job for nothing.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only; its warnings are not ours to show
    # onnxruntime's memory arena keeps the peak of every batch it has seen, and
    # a batch's activations grow with its size times its length squared: at 32
    # windows of 256 pieces a process held 1.5 GB and ingestion jobs ran past a
    # worker's 1 GiB limit.  Batches of 8 (the default) grown only as asked hold
    # 570 MB and embed as fast (bench figures in docs/configuration.md).
    provider = ("CPUExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"})
    try:
        return ort.InferenceSession(str(model), sess_options=options, providers=[provider])
    except Exception as exc:
        raise ConfigurationError(f"cannot load the local model {model}: {exc}") from exc
