"""Hugging Face ids of NVIDIA AIConfigurator-core 0.12.0's model list (its model_configs/
files, ``<org>--<name>_config.json``) resolve to the catalog entries chosen for them, as
serving validation looks them up (case-insensitive); the ones the catalog leaves out
(docs/serving.md, Known limits) resolve to none."""

from __future__ import annotations

from clusterwright.catalog.registry import Catalog

MAPPED = {
    "meta-llama/Meta-Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3.1-70B": "llama-3.1-70b",
    "nvidia/Llama-3.1-70B-Instruct-FP8": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3.1-405B": "llama-3.1-405b",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "mistralai/Mixtral-8x22B-v0.1": "mixtral-8x22b",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "nvidia/DeepSeek-V3.1-NVFP4": "deepseek-v3",
    "deepseek-ai/DeepSeek-R1": "deepseek-r1",
    "deepseek-ai/DeepSeek-V3.2": "deepseek-v3.2",
    "nvidia/DeepSeek-V3.2-NVFP4": "deepseek-v3.2",
    "Qwen/Qwen3-0.6B": "qwen3-0.6b",
    "Qwen/Qwen3-1.7B": "qwen3-1.7b",
    "Qwen/Qwen3-VL-2B-Instruct": "qwen3-1.7b",
    "Qwen/Qwen3-VL-4B-Instruct": "qwen3-4b",
    "Qwen/Qwen3-8B": "qwen3-8b",
    "Qwen/Qwen3-VL-8B-Instruct": "qwen3-8b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "Qwen/Qwen3-32B-FP8": "qwen3-32b",
    "Qwen/Qwen3-32B-FP8-Static-PerTensor": "qwen3-32b",
    "Qwen/Qwen3-VL-32B-Instruct": "qwen3-32b",
    "Qwen/Qwen3-VL-32B-Thinking": "qwen3-32b",
    "Qwen/Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen/Qwen3-30B-A3B-FP8": "qwen3-30b-a3b",
    "Qwen/Qwen3-VL-30B-A3B-Instruct": "qwen3-30b-a3b",
    "Qwen/Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "nvidia/Qwen3-235B-A22B-NVFP4": "qwen3-235b-a22b",
    "Qwen/Qwen3-VL-235B-A22B-Instruct": "qwen3-235b-a22b",
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": "qwen3-coder-480b-a35b",
    "Qwen/Qwen3.5-35B-A3B": "qwen3.5-35b-a3b",
    "Qwen/Qwen3.5-27B": "qwen3.5-27b",
    "nvidia/Nemotron-H-56B-Base-8K": "nemotron-h-56b",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": "nemotron-3-nano-30b-a3b",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4": "nemotron-3-nano-30b-a3b",
    "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4": "nemotron-3-nano-30b-a3b",
    "nvidia/Qwen3.6-27B-NVFP4": "qwen3.5-27b",
    "nvidia/Qwen3.6-35B-A3B-NVFP4": "qwen3.5-35b-a3b",
    "Qwen/Qwen3.5-122B-A10B": "qwen3.5-122b-a10b",
    "nvidia/Qwen3.5-122B-A10B-NVFP4": "qwen3.5-122b-a10b",
    "Qwen/Qwen3.5-397B-A17B": "qwen3.5-397b-a17b",
    "nvidia/Qwen3.5-397B-A17B-NVFP4": "qwen3.5-397b-a17b",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "MiniMaxAI/MiniMax-M2.5": "minimax-m2.5",
    "nvidia/MiniMax-M2.5-NVFP4": "minimax-m2.5",
    "MiniMaxAI/MiniMax-M2.7": "minimax-m2.5",
    "nvidia/MiniMax-M2.7-NVFP4": "minimax-m2.5",
    "MiniMaxAI/MiniMax-M3": "minimax-m3",
    "nvidia/MiniMax-M3-NVFP4": "minimax-m3",
    "zai-org/GLM-5": "glm-5",
    "zai-org/GLM-5-FP8": "glm-5",
    "nvidia/GLM-5-NVFP4": "glm-5",
    "zai-org/GLM-5.1": "glm-5",
    "zai-org/GLM-5.1-FP8": "glm-5",
    "nvidia/GLM-5.1-NVFP4": "glm-5",
    "zai-org/GLM-5.2": "glm-5",
    "zai-org/GLM-5.2-FP8": "glm-5",
    "nvidia/GLM-5.2-NVFP4": "glm-5",
    "zai-org/GLM-5.3": "glm-5",
    "zai-org/GLM-5.3-FP8": "glm-5",
    "nvidia/GLM-5.3-NVFP4": "glm-5",
    "moonshotai/Kimi-K2-Instruct": "kimi-k2",
    "moonshotai/Kimi-K2.5": "kimi-k2.5",
    "nvidia/Kimi-K2.5-NVFP4": "kimi-k2.5",
    "nvidia/Kimi-K2.6-NVFP4": "kimi-k2.5",
    "nvidia/Kimi-K2.7-Code-NVFP4": "kimi-k2.5",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "llama-4-scout",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": "llama-4-maverick",
    "stepfun-ai/Step-3.7-Flash": "step-3.7-flash",
    "stepfun-ai/Step-3.7-Flash-FP8": "step-3.7-flash",
    "XiaomiMiMo/MiMo-V2-Flash": "mimo-v2-flash",
    "nvidia/Llama-3_3-Nemotron-Super-49B-v1": "llama-3.3-nemotron-super-49b",
    "deepseek-ai/DeepSeek-V4-Flash": "deepseek-v4-flash",
    "nvidia/DeepSeek-V4-Flash-NVFP4": "deepseek-v4-flash",
    "sgl-project/DeepSeek-V4-Flash-FP8": "deepseek-v4-flash",
    "deepseek-ai/DeepSeek-V4-Pro": "deepseek-v4-pro",
    "nvidia/DeepSeek-V4-Pro-NVFP4": "deepseek-v4-pro",
    "sgl-project/DeepSeek-V4-Pro-FP8": "deepseek-v4-pro",
    "google/gemma-4-26B-A4B": "gemma-4-26b-a4b",
    "nvidia/Gemma-4-26B-A4B-NVFP4": "gemma-4-26b-a4b",
    "nvidia/Gemma-4-31B-IT-NVFP4": "gemma-4-31b",
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8": "nemotron-3-super-120b-a12b",
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4": "nemotron-3-super-120b-a12b",
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16": "nemotron-3-ultra-550b-a55b",
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8": "nemotron-3-ultra-550b-a55b",
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4": "nemotron-3-ultra-550b-a55b",
}

# Left out on purpose (docs/serving.md, Known limits, says why).
LEFT_OUT = [
    "moonshotai/Kimi-K3",
    "XiaomiMiMo/MiMo-7B-Base",
]


def _lookup(catalog: Catalog) -> dict[str, str]:
    # As validation/serving_silicon.py matches a row's model_path.
    return {h.lower(): m.id for m in catalog.all("models") for h in m.hf_ids}


def test_aiconfigurator_012_model_ids_resolve_to_the_chosen_entries(catalog: Catalog) -> None:
    models = _lookup(catalog)
    wrong = {hf: (models.get(hf.lower()), mid) for hf, mid in MAPPED.items()
             if models.get(hf.lower()) != mid}
    assert not wrong, wrong


def test_aiconfigurator_012_models_left_out_resolve_to_none(catalog: Catalog) -> None:
    models = _lookup(catalog)
    claimed = {hf: models[hf.lower()] for hf in LEFT_OUT if hf.lower() in models}
    assert not claimed, ("now in the catalog: move them to MAPPED and out of docs/serving.md's "
                         f"Known limits: {claimed}")
    assert not set(MAPPED) & set(LEFT_OUT)
