"""The local model with its matrix products in int8, derived once and kept on disk.

The packaged all-MiniLM-L6-v2 file stores its weights as int8 but runs every
matrix product in float32: onnxruntime turns the weights back into floats when
it loads them.  Quantizing the products themselves (dynamic quantization:
int8 weights per output channel, activations scaled per batch) lets
onnxruntime use the CPU's int8 dot-product instructions (bench/RESULTS.md,
"The local model at its compute limit", has the figures).

The derived file depends only on the source model and the tool versions, so it
is built once per machine into a cache folder and found there afterwards.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import logging
import os
import tempfile
from pathlib import Path

from ragsage.core.errors import ConfigurationError

# Bump when the steps below change, so a cached file of the old recipe is not reused.
_RECIPE = "dynamic-int8-per-channel-3"


def cache_folder(explicit: str = "") -> Path:
    """Where derived models are kept: ``explicit`` (the setting), else the user's cache.

    The container image derives the packaged model's int8 file at build time
    into the folder its ``RAGSAGE_MODEL_CACHE_DIR`` names, so no container has
    to write it.
    """
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "ragsage" / "models"


def prepare_model(model_dir: str = "", folder: str = "") -> Path:
    """Derive the int8 file of the model in ``model_dir`` (empty: the packaged one) into ``folder``.

    The image build and a worker's main process call it, so no later process has to.
    """
    from ragsage.adapters.providers.local_model import locate_local_model

    files = locate_local_model(model_dir or None)
    return int8_model(files.model, files.name, cache_folder(folder))


def int8_model(source: Path, name: str, folder: Path | None = None) -> Path:
    """The int8 version of the ONNX model at ``source``, built into ``folder`` if missing.

    A folder that cannot be written (a read-only home in a container) gets a
    private temporary one instead: the model is then rebuilt by each process,
    a few seconds at its start.
    """
    _require_quantizer()
    key = _key(source)
    folder = folder or cache_folder()
    target = folder / f"{name}-{key}.onnx"
    if target.is_file():
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _build(source, target)
    except OSError:
        private = Path(tempfile.mkdtemp(prefix="ragsage-model-"))
        target = private / target.name
        _build(source, target)
    return target


def _require_quantizer() -> None:
    try:
        importlib.import_module("onnx")
    except ImportError:
        raise ConfigurationError(
            "the local model's int8 path needs the onnx package: install "
            "`ragsage[local]` again, or set RAGSAGE_LOCAL_MODEL_PRECISION=float"
        ) from None


def _key(source: Path) -> str:
    digest = hashlib.sha256()
    digest.update(source.read_bytes())
    for tool in ("onnxruntime", "onnx"):
        digest.update(f"\0{tool}={importlib.metadata.version(tool)}".encode())
    digest.update(f"\0{_RECIPE}".encode())
    return digest.hexdigest()[:16]


def _build(source: Path, target: Path) -> None:
    ort = importlib.import_module("onnxruntime")
    quantization = importlib.import_module("onnxruntime.quantization")
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        # First the graph onnxruntime itself runs: weights folded back to
        # float32, so the quantizer sees plain matrix products.
        folded = Path(work) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        try:
            ort.InferenceSession(
                str(source), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's own error types are not importable
            raise ConfigurationError(f"cannot load the local model {source}: {exc}") from exc
        _drop_nan_guards(folded)
        kept_float = _output_projections(folded)
        built = Path(work) / "int8.onnx"
        advice = _DropAdvice()
        logging.getLogger().addFilter(advice)
        try:
            quantization.quantize_dynamic(
                str(folded),
                str(built),
                weight_type=quantization.QuantType.QInt8,
                op_types_to_quantize=["MatMul"],
                per_channel=True,
                reduce_range=False,
                nodes_to_exclude=kept_float,
            )
        except Exception as exc:  # the quantizer raises whatever its graph walk meets
            raise ConfigurationError(f"cannot derive the int8 model from {source}: {exc}") from exc
        finally:
            logging.getLogger().removeFilter(advice)
        # Readers never see a half-written file, and racing builders agree.
        os.replace(built, target)


def _output_projections(path: Path) -> list[str]:
    """The feed-forward layers' second products (wide to narrow), which stay float32.

    Their input is the GELU's output, whose long tail one int8 scale per window
    spreads too thin: quantized, they gave most of the int8 model's error (its
    vectors' cosine to float's rose from 0.996 to 0.999 without them), and the
    code dev set's dense nDCG@10 fell 0.018 with them.
    """
    onnx = importlib.import_module("onnx")
    graph = onnx.load(str(path)).graph
    shapes = {tensor.name: tuple(tensor.dims) for tensor in graph.initializer}

    def narrowing(name: str) -> bool:
        shape = shapes.get(name, ())
        return len(shape) == 2 and shape[0] > shape[1]

    return [
        node.name
        for node in graph.node
        if node.op_type == "MatMul" and any(narrowing(name) for name in node.input)
    ]


def _drop_nan_guards(path: Path) -> int:
    """Take out ``where(isnan(p), 0, p)`` after each attention softmax; how many went.

    The export guards against a softmax over keys that are all masked, which
    gives NaN.  Every window the embedder builds keeps its [CLS] and [SEP]
    unmasked, so no row is ever all masked and the guard returns its input
    unchanged; yet it reads and writes every attention weight twice, about a
    fifth of an int8 pass.
    """
    onnx = importlib.import_module("onnx")
    numpy_helper = importlib.import_module("onnx.numpy_helper")
    model = onnx.load(str(path))
    graph = model.graph
    producers = {output: node for node in graph.node for output in node.output}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    zeros = set()
    for tensor in graph.initializer:
        value = numpy_helper.to_array(tensor)
        if value.size == 1 and float(value.reshape(-1)[0]) == 0.0:
            zeros.add(tensor.name)
    outputs = {output.name for output in graph.output}
    bypass: dict[str, str] = {}
    dropped = []
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3 or node.output[0] in outputs:
            continue
        condition, then, otherwise = node.input
        guard, weights = producers.get(condition), producers.get(otherwise)
        if (
            guard is not None
            and guard.op_type == "IsNaN"
            and list(guard.input) == [otherwise]
            and readers.get(condition) == 1
            and then in zeros
            and weights is not None
            and weights.op_type == "Softmax"
        ):
            bypass[node.output[0]] = otherwise
            dropped.extend([node, guard])
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name in bypass:
                node.input[index] = bypass[name]
    for node in dropped:
        graph.node.remove(node)
    onnx.save(model, str(path))
    return len(dropped) // 2


class _DropAdvice(logging.Filter):
    """Hides the quantizer's advice to pre-process the graph, which this model does not need."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Please consider to run pre-processing")
