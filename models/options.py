"""Options a user may set on a model they bring: one schema, checked once, for the CLI, the TOML file and the app.

    ModelOptions.from_mapping({"pooling": "first", "layers": [0, 6, 12]}, where="embprobe.toml [models.bert]")

Which options apply depends on the kind of model (``APPLIES_TO``): a static vector file has no pooling,
an ELMo has no dtype switch here. An option that does not apply is an error rather than silently
ignored, so a user never believes they probed something they did not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from corpora.errors import RequestError
from models.errors import ModelLoadError

POOLINGS = ("first", "mean", "last")
#: A transformer's default ``max_tokens`` (padded pieces a batch; ``cluster.resources`` sizes a task by it). On CPU
#: bigger batches outgrow the cache (MiniLM forward on 2,000 SemCor sentences: 5.5 s at 2,048, 7.4 s at 8,192).
CPU_TOKENS, GPU_TOKENS = 2048, 8192
DTYPES = ("auto", "fp32", "fp16", "bf16")

# Reference kinds (models.references) → the options their loader takes. "device" applies to every model.
APPLIES_TO: dict[str, tuple[str, ...]] = {
    "hf": ("pooling", "dtype", "window", "stride", "layers", "revision", "device"),
    "elmo": ("stateful", "device"),
    "vectors": ("allow_pickle", "device"),
    "builtin": ("device",),
}

HELP = {
    "pooling": "word vector from its subword pieces: first | mean | last (default mean)",
    "dtype": "auto (bf16/fp16 on GPU, fp32 on CPU) | fp32 | fp16 | bf16",
    "window": "pieces per forward pass for long inputs (default: the model's maximum)",
    "stride": "step between overlapping windows (default: half a window)",
    "layers": "keep only these layers, e.g. 0,6,12 (default: all)",
    "revision": "hub revision: branch, tag or commit (hf: ids only)",
    "device": "cpu | cuda | cuda:N | auto (auto: spread over every GPU with accelerate)",
    "stateful": "ELMo: carry the LSTM state from batch to batch, as bilm-tf/AllenNLP ran it",
    "allow_pickle": "gensim .kv/.model files are pickles: read one only if you trust where it came from",
}


@dataclass(frozen=True)
class ModelOptions:
    pooling: str | None = None
    dtype: str | None = None
    window: int | None = None
    stride: int | None = None
    layers: tuple[int, ...] | None = None
    revision: str | None = None
    device: str | None = None
    stateful: bool | None = None
    allow_pickle: bool | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str) -> ModelOptions:
        """Validated options; ``where`` names the source (file and table, or the CLI) in every error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ModelLoadError(f"{where}: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}.")
        values: dict[str, Any] = {}
        for key, value in data.items():
            if value is None:
                continue
            values[key] = _check(key, value, where)
        if "window" in values and "stride" in values and values["stride"] > values["window"]:
            raise ModelLoadError(f"{where}: stride {values['stride']} is larger than window {values['window']}.")
        return cls(**values)

    def to_mapping(self) -> dict[str, Any]:
        """The options that are set, as plain TOML/JSON values."""
        out = {k: v for k, v in asdict(self).items() if v is not None}
        if "layers" in out:
            out["layers"] = list(out["layers"])
        return out

    def check_applies(self, kind: str, where: str) -> None:
        allowed = APPLIES_TO[kind]
        extra = sorted(k for k in self.to_mapping() if k not in allowed)
        if extra:
            raise ModelLoadError(
                f"{where}: option(s) {', '.join(extra)} do not apply to a {kind} model "
                f"(it takes: {', '.join(allowed)})."
            )


def parse_layers(text: str) -> tuple[int, ...]:
    """ "0,6,12" or "0-4,8" → (0, 6, 12) / (0, 1, 2, 3, 4, 8)."""
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
        except ValueError:
            raise ValueError(f"layers: {part!r} is not a layer number or a range like 2-5") from None
    return tuple(out)


def _check(key: str, value: Any, where: str) -> Any:
    def fail(msg: str) -> ModelLoadError:
        return ModelLoadError(f"{where}: {key} = {value!r}: {msg}")

    if key == "pooling":
        if value not in POOLINGS:
            raise fail(f"must be one of {', '.join(POOLINGS)}")
        return value
    if key == "dtype":
        if value not in DTYPES:
            raise fail(f"must be one of {', '.join(DTYPES)}")
        return value
    if key in ("window", "stride"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise fail("must be a positive whole number")
        return value
    if key == "layers":
        try:
            layers = parse_layers(value) if isinstance(value, str) else tuple(value)
        except (TypeError, ValueError) as exc:
            raise fail(str(exc)) from None
        if not layers or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in layers):
            raise fail("must be a non-empty list of layer numbers ≥ 0")
        if len(set(layers)) != len(layers):
            raise fail("repeats a layer")
        return tuple(sorted(layers))
    if key in ("revision", "device"):
        if not isinstance(value, str) or not value.strip():
            raise fail("must be a non-empty string")
        if key == "device" and value.strip() != "auto":
            from models.base import parse_device  # lazy: torch; the registry's readers (models list) need none

            try:  # its syntax; whether this machine has it is checked at load (a registry may serve a GPU node)
                parse_device(value.strip())
            except RequestError:
                raise fail("must be cpu, cuda, cuda:N, mps or auto") from None
        return value.strip()
    if key in ("stateful", "allow_pickle"):
        if not isinstance(value, bool):
            raise fail("must be true or false")
        return value
    raise fail("unknown option")  # unreachable: from_mapping checks names first
