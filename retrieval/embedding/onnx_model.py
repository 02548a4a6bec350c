"""A sentence-transformers model run by ONNX Runtime: the same vectors, faster on a CPU.

The model's transformer is exported once from its local files (PyTorch's exporter, eager
attention so that ONNX Runtime's BERT optimizer fuses it) into the user's cache directory, then
run by ONNX Runtime with the model's own tokenizer (``tokenizer.json``), mean pooling and
normalization, as sentence-transformers does. Nothing is downloaded. Measured on SciFact
(docs/decisions/0008-onnx-embedder.md): cosine similarity to PyTorch's vectors 0.9999998 or
more, one query 3.8x faster, batches 1.2-1.3x faster.

``quantized``: the exported model's weights quantized to int8 once more (ONNX Runtime's dynamic
quantization, per output channel), about 1.5x faster in batches and a quarter of the file, with
vectors close to the model's (docs/decisions/0018-int8-embedder.md).

Supported: a local sentence-transformers model made of a Transformer, mean Pooling and
optionally Normalize (all-MiniLM-L6-v2 and most sentence embedders); :func:`onnx_support` says
why another is not, and the embedder then uses PyTorch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs

from retrieval.embedding.progress import embedded
from retrieval.errors import EmbeddingError

logger = logging.getLogger(__name__)

EXPORT_VERSION = "1"  # part of the cache key: a change of the export makes a new file
_SAMPLED = 1 << 20  # the bytes read from each end of a weights file for the cache key
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


@dataclass(frozen=True)
class OnnxPlan:
    """How to run a model's files by ONNX Runtime: its tokenizer, length and normalization."""

    directory: Path
    max_length: int
    normalize: bool
    model_type: str
    heads: int
    hidden: int


def onnx_support(directory: Path) -> OnnxPlan | str:
    """The plan for the model in ``directory``, or why ONNX Runtime cannot run it here."""
    try:
        modules = json.loads((directory / "modules.json").read_text("utf-8"))
        types = [module["type"] for module in modules]
        if types[:2] != [_TRANSFORMER, _POOLING] or types[2:] not in ([], [_NORMALIZE]):
            return f"its modules are {types}, not a Transformer, mean Pooling and Normalize"
        pooling_dir = directory / modules[1]["path"]
        pooling = json.loads((pooling_dir / "config.json").read_text("utf-8"))
        if not pooling.get("pooling_mode_mean_tokens") or any(
            pooling.get(mode) for mode in ("pooling_mode_cls_token", "pooling_mode_max_tokens")
        ):
            return "its pooling is not the mean of the tokens"
        if not (directory / "tokenizer.json").is_file():
            return "it has no tokenizer.json (a fast tokenizer's file)"
        settings = json.loads((directory / "sentence_bert_config.json").read_text("utf-8"))
        if settings.get("do_lower_case"):
            return "it lowercases its input outside the tokenizer"
        config = json.loads((directory / "config.json").read_text("utf-8"))
    except (OSError, ValueError, KeyError, IndexError, TypeError) as error:
        return f"its sentence-transformers files could not be read ({error})"
    return OnnxPlan(
        directory=directory,
        max_length=int(settings.get("max_seq_length") or 512),
        normalize=types[2:] == [_NORMALIZE],
        model_type=str(config.get("model_type", "")),
        heads=int(config.get("num_attention_heads", 0)),
        hidden=int(config.get("hidden_size", 0)),
    )


class OnnxSentenceModel:
    """The model of an :class:`OnnxPlan`, exported on first use and run by ONNX Runtime."""

    def __init__(
        self, plan: OnnxPlan, *, quantized: bool = False, cache_dir: Path | None = None
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.plan = plan
        self.quantized = quantized
        path = exported_model(plan, cache_dir or default_cache_dir())
        if quantized:
            path = quantized_model(path)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # warnings of the optimized graph are not the user's
        self._session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {item.name for item in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(plan.directory / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=plan.max_length)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text
        self._pad_id = self._tokenizer.token_to_id(_pad_token(plan.directory)) or 0
        self.dim = plan.hidden

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        """Unit-length (or, without Normalize, raw) mean-pooled vectors of ``texts``, in order,
        in batches of similar lengths (:func:`length_batches`)."""
        encodings = self._tokenizer.encode_batch(texts)
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        for chosen in length_batches([len(e.ids) for e in encodings], batch_size):
            vectors[chosen] = self._batch([encodings[i] for i in chosen])
            embedded(len(chosen))
        return vectors

    def _batch(self, encodings: list[Any]) -> np.ndarray[Any, np.dtype[np.float32]]:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            size = len(encoding.ids)
            ids[row, :size], mask[row, :size] = encoding.ids, encoding.attention_mask
            types[row, :size] = encoding.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = types
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        if self.plan.normalize:
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        result: np.ndarray[Any, np.dtype[np.float32]] = pooled.astype(np.float32)
        return result


def length_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """The indexes of texts of ``lengths`` (in tokens) in batches, longest first: each holds at
    most ``batch_size`` texts, and none shorter than half its longest, so that padding to the
    longest never more than doubles a text (one batch of 64 that mixed a few texts of 256
    tokens with short ones padded them all to 256; benchmarks/writing/mixed_lengths.py)."""
    batches: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        batch = batches[-1] if batches else None
        if batch is None or len(batch) == batch_size or 2 * lengths[index] < lengths[batch[0]]:
            batches.append([index])
        else:
            batch.append(index)
    return batches


def default_cache_dir() -> Path:
    """Where exported models live: the user's cache directory."""
    return Path(platformdirs.user_cache_dir("retrieval"))


def exported_model(plan: OnnxPlan, cache_dir: Path) -> Path:
    """The ONNX file of ``plan``'s model, exported (once, under a file lock) when missing.

    The file is named by the model's content (its configuration, and each weights file's size
    and first and last mebibytes), not by where it is installed: every virtual environment
    with the same model (and ONNX Runtime version) shares one file."""
    target = cache_dir / "onnx" / f"{model_digest(plan.directory)}.onnx"
    said = f"exporting {plan.directory} to ONNX once (seconds), into {target}"
    return _made_once(target, said, lambda: _export(plan, target))


def model_digest(directory: Path) -> str:
    """What names a model's exported file: its content, read in a few mebibytes."""
    import onnxruntime

    digest = hashlib.sha256(f"{EXPORT_VERSION}:{onnxruntime.__version__}".encode())
    digest.update((directory / "config.json").read_bytes())
    weights = sorted(directory.glob("*.safetensors")) or sorted(directory.glob("*.bin"))
    for item in weights:
        size = item.stat().st_size
        digest.update(f"{item.name}:{size}".encode())
        with item.open("rb") as handle:
            digest.update(handle.read(_SAMPLED))
            handle.seek(max(size - _SAMPLED, 0))
            digest.update(handle.read(_SAMPLED))
    return digest.hexdigest()[:20]


def quantized_model(exported: Path) -> Path:
    """The int8 model of the ``exported`` file, beside it (quantized once, under a file lock)."""
    target = exported.with_suffix(".int8.onnx")
    said = f"quantizing {exported} to int8 once (seconds), into {target}"
    return _made_once(target, said, lambda: _quantize(exported, target))


def _made_once(target: Path, said: str, make: Callable[[], None]) -> Path:
    """``target``, made by ``make`` (announced by ``said``) unless it exists: once across
    processes, under a file lock beside it."""
    import fasteners

    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with fasteners.InterProcessLock(str(target) + ".lock"):
        if not target.is_file():
            logger.warning(said)
            make()
    return target


def _quantize(exported: Path, target: Path) -> None:
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            final = Path(scratch) / "int8.onnx"
            with _without_advice():
                quantize_dynamic(
                    str(exported),
                    str(final),
                    weight_type=QuantType.QInt8,
                    per_channel=True,  # a scale per output channel: cosine 0.99 to the model
                    # The optimizer's fused operators have no inferred type: they are float.
                    extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
                )
            os.replace(final, target)
    except (ImportError, OSError, RuntimeError, ValueError) as error:
        raise EmbeddingError(
            f"the ONNX model {exported} could not be quantized to int8 ({error}): set "
            "RETRIEVAL_EMBEDDER_BACKEND=onnx to run it unquantized"
        ) from error


class _QuantizationAdvice(logging.Filter):
    # ONNX Runtime's quantizer advises, on the root logger, a pre-processing meant for
    # calibrated static quantization; a dynamic one of an optimized model needs none.
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


@contextmanager
def _without_advice() -> Iterator[None]:
    # A handler on the root logger meanwhile, so that the quantizer's logging.warning does not
    # configure the application's logging (basicConfig) on its way.
    root = logging.getLogger()
    handler, advice = logging.NullHandler(), _QuantizationAdvice()
    root.addHandler(handler)
    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)
        root.removeHandler(handler)


def _export(plan: OnnxPlan, target: Path) -> None:
    try:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as transformers_logging

        # The export is announced in one line: no loader's progress bar in the middle of it.
        shown = transformers_logging.is_progress_bar_enabled()
        transformers_logging.disable_progress_bar()
        try:
            model = AutoModel.from_pretrained(
                str(plan.directory), attn_implementation="eager", local_files_only=True
            )
        finally:
            if shown:
                transformers_logging.enable_progress_bar()
        model.eval()

        class LastHiddenState(torch.nn.Module):  # type: ignore[misc]  # torch is Any to mypy
            # The token vectors from positional inputs: what the exporter traces.
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                return self.model(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=token_type_ids,
                ).last_hidden_state

        wrapped = LastHiddenState()
        sample = {name: torch.ones((2, 8), dtype=torch.int64) for name in _INPUTS}
        sample["token_type_ids"] = torch.zeros((2, 8), dtype=torch.int64)
        axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")}
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            raw = Path(scratch) / "raw.onnx"
            with torch.no_grad(), warnings.catch_warnings():
                # The TorchScript exporter warns of its deprecation and of traced branches that
                # do not apply to a BERT; the test of both backends' vectors is the check.
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    wrapped,
                    tuple(sample[name] for name in _INPUTS),
                    str(raw),
                    input_names=list(_INPUTS),
                    output_names=["last_hidden_state"],
                    dynamic_axes=axes,
                    opset_version=17,
                    dynamo=False,
                )
            final = Path(scratch) / "final.onnx"
            _optimized(plan, raw, final)
            os.replace(final, target)
    except (ImportError, OSError, RuntimeError, ValueError) as error:
        raise EmbeddingError(
            f"the model in {plan.directory} could not be exported to ONNX ({error}): set "
            "RETRIEVAL_EMBEDDER_BACKEND=torch to run it with PyTorch"
        ) from error


def _optimized(plan: OnnxPlan, raw: Path, final: Path) -> None:
    # ONNX Runtime's transformer optimizer fuses a BERT's attention, layer norms and GELUs;
    # another architecture keeps the plain export.
    if plan.model_type == "bert" and plan.heads and plan.hidden:
        from onnxruntime.transformers import optimizer

        model = optimizer.optimize_model(
            str(raw), model_type="bert", num_heads=plan.heads, hidden_size=plan.hidden
        )
        model.save_model_to_file(str(final))
    else:
        os.replace(raw, final)


def _pad_token(directory: Path) -> str:
    try:
        config = json.loads((directory / "tokenizer_config.json").read_text("utf-8"))
    except (OSError, ValueError):
        return "[PAD]"
    token = config.get("pad_token", "[PAD]")
    return str(token.get("content", "[PAD]") if isinstance(token, dict) else token)
