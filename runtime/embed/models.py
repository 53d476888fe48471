"""Each embedding model's usual dimension, so an unscripted vector has the length the application
expects (a vector store created for ``text-embedding-3-small`` wants 1536 numbers).

Looked up by the model name as sent, without a ``models/`` prefix or an Ollama ``:tag``; a name that
starts with a known one (``text-embedding-3-small-2024``) takes its dimension; anything else gets the
provider's usual default (its provider registry entry's ``embedding_dimensions``). A request's own
``dimensions`` (Gemini ``outputDimensionality``) wins."""

from __future__ import annotations

#: model name → dimension (the documented table: docs/embeddings.md).
DIMENSIONS: dict[str, int] = {
    # OpenAI (and Azure OpenAI deployments of these models)
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    # Gemini
    "gemini-embedding-001": 3072,
    "text-embedding-004": 768,
    "text-embedding-005": 768,
    "text-multilingual-embedding-002": 768,
    "embedding-001": 768,
    # Ollama
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
    "snowflake-arctic-embed": 1024,
    "bge-m3": 1024,
    "bge-large": 1024,
    # Mistral, Cohere, Bedrock (for their providers)
    "mistral-embed": 1024,
    "embed-english-v3.0": 1024,
    "embed-multilingual-v3.0": 1024,
    "embed-english-light-v3.0": 384,
    "embed-multilingual-light-v3.0": 384,
    "embed-v4.0": 1536,
    "amazon.titan-embed-text-v2:0": 1024,
    "amazon.titan-embed-text-v1": 1536,
    "cohere.embed-english-v3": 1024,
    "cohere.embed-multilingual-v3": 1024,
}

#: the longest vector a request may ask for (``dimensions``, ``outputDimensionality``). No embedding
#: model in the table is longer than 3072; past this a request is refused with a 400, so one request
#: cannot make the server build a vector of a billion numbers (issue 12: nothing a client sends may
#: grow the server without bound).
MAX_DIMENSIONS = 8192

DEFAULT_DIMENSIONS = 1536  # a model the table does not know, of a provider with no default of its own

# longest names first, so `text-embedding-3-small…` never stops at a shorter prefix
_BY_LENGTH = sorted(DIMENSIONS, key=len, reverse=True)


def model_dimensions(model: str, default: int = DEFAULT_DIMENSIONS) -> int:
    """The usual dimension of ``model`` (as the provider names it); ``default`` for a model the table
    does not know."""
    name = model.strip()
    if name.startswith("models/"):
        name = name[len("models/") :]
    found = DIMENSIONS.get(name)
    if found is not None:
        return found
    base = name.rsplit(":", 1)[0] if ":" in name and not name.startswith("amazon.") else name
    found = DIMENSIONS.get(base)
    if found is not None:
        return found
    for known in _BY_LENGTH:
        if base.startswith(known):
            return DIMENSIONS[known]
    return default
