"""Whose API a bare request body was written for, from its shape alone: what ``mockllm explain``
guesses when it is given neither the provider nor the path. Each provider registry entry names its
test here (``ProviderEntry.sniff``); the entries are asked in :data:`SNIFF_ORDER`, and a body no
test claims is OpenAI's. Azure OpenAI's and Vertex AI's bodies are OpenAI's and Gemini's to the
letter: only their paths tell them apart (``provider_for``), so they have no test."""

from __future__ import annotations

from typing import Any

_ANTHROPIC_KEYS = ("anthropic_version", "stop_sequences", "thinking", "top_k")
_ANTHROPIC_BLOCKS = ("image", "tool_use", "tool_result", "thinking", "document")
_OLLAMA_KEYS = ("options", "keep_alive", "format", "think")
_BEDROCK_KEYS = ("inferenceConfig", "toolConfig", "additionalModelRequestFields", "guardrailConfig", "inputText")
_COHERE_KEYS = ("documents", "citation_options", "safety_mode", "strict_tools", "texts", "embedding_types")
_MISTRAL_KEYS = ("safe_prompt", "random_seed", "prompt_mode")
_MISTRAL_MODELS = ("mistral-", "open-mistral", "codestral", "ministral", "magistral", "pixtral", "devstral")


def _anthropic_blocks(messages: Any) -> bool:
    if not isinstance(messages, list):
        return False
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "system":
            return False  # Anthropic has no system role in messages
        content = m.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and (block.get("type") in _ANTHROPIC_BLOCKS or "cache_control" in block):
                    return True
    return False


def _converse_blocks(messages: Any) -> bool:
    """Bedrock Converse content: blocks keyed by kind (``{"text": …}``, ``{"toolUse": …}``), no ``type``."""
    if not isinstance(messages, list):
        return False
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list) and content:
            return all(isinstance(b, dict) and "type" not in b and len(b) == 1 for b in content)
    return False


def bedrock(body: dict[str, Any]) -> bool:
    """Converse (its own keys, or content blocks without ``type``), InvokeModel with an Anthropic body
    (``anthropic_version: bedrock-…``), or a Titan embedding (``inputText``)."""
    version = body.get("anthropic_version")
    if isinstance(version, str) and version.startswith("bedrock-"):
        return True
    return any(k in body for k in _BEDROCK_KEYS) or _converse_blocks(body.get("messages"))


def gemini(body: dict[str, Any]) -> bool:
    return "contents" in body


def responses(body: dict[str, Any]) -> bool:
    return "input" in body and "messages" not in body and not isinstance(body.get("texts"), list)


def anthropic(body: dict[str, Any]) -> bool:
    if any(k in body for k in _ANTHROPIC_KEYS) or ("system" in body and "messages" in body):
        return True
    tools = body.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    return "max_tokens" in body and _anthropic_blocks(body.get("messages"))


def ollama(body: dict[str, Any]) -> bool:
    return any(k in body for k in _OLLAMA_KEYS)


def cohere(body: dict[str, Any]) -> bool:
    return any(k in body for k in _COHERE_KEYS) or "input_type" in body


def mistral(body: dict[str, Any]) -> bool:
    model = body.get("model")
    named = isinstance(model, str) and model.lower().startswith(_MISTRAL_MODELS)
    return named or any(k in body for k in _MISTRAL_KEYS)


#: the order the tests are asked in: each claims only what the ones before it left (Bedrock's
#: Anthropic bodies before Anthropic's, Cohere's ``texts`` before Responses' ``input``)
SNIFF_ORDER = ("bedrock", "gemini", "cohere", "responses", "anthropic", "ollama", "mistral")
