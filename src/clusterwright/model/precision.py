"""Numeric precisions: bytes per element and the tensor-core format each computes in."""

from __future__ import annotations

from enum import StrEnum

from clusterwright.catalog.schema import Dtype


class Precision(StrEnum):
    """Storage precision of weights, gradients, activations or KV cache."""

    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    int4 = "int4"
    fp4 = "fp4"


BYTES: dict[Precision, float] = {
    Precision.fp32: 4.0,
    Precision.bf16: 2.0,
    Precision.fp16: 2.0,
    Precision.fp8: 1.0,
    Precision.int8: 1.0,
    Precision.int4: 0.5,
    Precision.fp4: 0.5,
}


def bytes_per(p: Precision | str) -> float:
    """Bytes per element of precision ``p``."""
    return BYTES[Precision(p)]


def training_dtype(p: Precision | str) -> Dtype:
    """Tensor-core format that mixed-precision training in ``p`` runs its GEMMs in.

    fp32 training runs in TF32 on Ampere and later (PyTorch/cuBLAS default for matmuls).
    """
    p = Precision(p)
    table = {
        Precision.fp32: Dtype.tf32,
        Precision.bf16: Dtype.bf16,
        Precision.fp16: Dtype.fp16,
        Precision.fp8: Dtype.fp8,
        Precision.fp4: Dtype.fp4,
    }
    if p not in table:
        raise ValueError(
            f"precision {p} is not a training precision (use fp32, bf16, fp16, fp8, fp4)"
        )
    return table[p]


def inference_dtype(weights: Precision | str) -> Dtype:
    """Format the GEMMs of inference run in. Integer weights (W8A16, W4A16) are dequantized
    to 16-bit in the kernel (e.g. Marlin, AWQ), so they need no integer tensor cores."""
    p = Precision(weights)
    if p in (Precision.int8, Precision.int4, Precision.fp32):
        return Dtype.fp16 if p != Precision.fp32 else Dtype.tf32
    return Dtype(p.value)


def default_kv_precision(weights: Precision | str) -> Precision:
    """KV-cache precision when none is given: the weights' format, except that integer
    weight-only quantization (W8A16, W4A16) keeps a 16-bit cache, as vLLM does by default
    (kv_cache_dtype="auto" follows the model's activation dtype)."""
    p = Precision(weights)
    return Precision.bf16 if p in (Precision.int8, Precision.int4) else p
