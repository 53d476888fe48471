"""The provider registry: one entry per API mockllm speaks, and everything the rest of mockllm asks
about a provider, answered from it.

An entry names its adapter, its routes (with a per-request claim where a path is shared), the path
prefixes whose unknown routes answer in its error shape, the upstream ``mockllm record`` forwards
to, the request ``mockllm explain`` posts a bare body to, its recording reader, its embedding routes
and its docs page. The server's route table, ``provider_for``, ``adapter_for``, the recorder's
upstreams, ``mockllm explain``, the recording readers and the docs table test all read :data:`ENTRIES`;
the language's provider names (``dsl/providers.py``) must be exactly its names (a test checks).

Adding a provider is one adapter module plus one :class:`ProviderEntry` in :data:`ENTRIES` (and its
name in ``dsl/providers.py``, its docs page and its tests): see docs/architecture.md."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, cast

import attrs

from mockllm.errors import MockllmError
from mockllm.runtime.embed.models import DEFAULT_DIMENSIONS, model_dimensions
from mockllm.runtime.providers import sniff
from mockllm.runtime.providers.base import Adapter
from mockllm.runtime.request import Operation, Provider

#: how the server answers a route's requests (``server/http/app.py``): "chat" (the adapter parses and
#: renders, the engine decides), "inputs" (the route's own parse/render pair, the engine decides),
#: "count_tokens" (the adapter answers alone), "model_path" (``…/models/{model}:METHOD``: by method),
#: and the listings and banners ("models", "tags", "version", "root")
Handler = Literal[
    "chat", "inputs", "count_tokens", "mcp", "realtime", "models", "model_path", "tags", "version", "root"
]
#: what a route serves that is not an operation: the listings and banners, and the paths that name
#: their operation after the model (``…/models/{model}:METHOD``, the entry's ``model_operations``)
Service = Literal["models", "model_path", "tags", "version", "root"]
#: how a route's requests arrive: an HTTP request and response (streamed or not), a WebSocket session,
#: or a process's standard input and output
Transport = Literal["http", "websocket", "stdio"]
#: whether a request to a shared path is this provider's: ``(path, headers with lower-cased names)``
Claim = Callable[[str, Mapping[str, str]], bool]

DEFAULT_PROVIDER: Provider = "openai"  # answers paths no entry claims


@attrs.frozen
class OperationSpec:
    """One kind of request, whatever its provider: how the server answers it and on which transports.
    Its name is the language's (``endpoint is "embeddings"``, ``dsl/operations.py``)."""

    name: Operation
    handler: Handler  # "chat", "inputs" (the route's ``pair``) or "count_tokens"
    summary: str  # what it is, for a reader of this table
    transports: tuple[Transport, ...] = ("http",)
    engine: bool = True  # decided by the engine (steps match it, the journal keeps it); else the adapter answers


#: every operation, by name: a new kind of request (speech, transcription, images, realtime, MCP) is
#: one entry here, its name in ``dsl/operations.py``, its routes in the providers' entries and the
#: module that parses and renders them (docs/architecture.md, "Adding an operation")
OPERATIONS: dict[str, OperationSpec] = {
    spec.name: spec
    for spec in (
        OperationSpec("chat", "chat", "a conversation turn: messages in, a message (or a stream) out"),
        OperationSpec("embeddings", "inputs", "texts in, one vector each"),
        OperationSpec("moderations", "inputs", "texts in, flagged categories for each"),
        OperationSpec("count_tokens", "count_tokens", "a chat body in, its token count out", engine=False),
        OperationSpec("speech", "inputs", "a text in, audio that says it out (runtime/media/audio.py)"),
        OperationSpec("transcription", "inputs", "an audio upload in, its transcript out"),
        OperationSpec("translation", "inputs", "an audio upload in, its transcript in English out"),
        OperationSpec("images", "inputs", "a prompt (and for edits, pictures) in, pictures out"),
        OperationSpec("rerank", "inputs", "a query and documents in, the documents ranked by relevance out"),
        # served by no provider: server/mcp/ answers it at /mcp/NAME and `mockllm mcp NAME` (docs/mcp.md)
        OperationSpec(
            "mcp", "mcp", "an MCP tools/call: a tool's name and arguments in, its result out", ("http", "stdio")
        ),
        # a WebSocket session's response (server/realtime/): the session's items in, a response's events out
        OperationSpec(
            "realtime",
            "realtime",
            "a live session's response: its items in, text, audio or tool calls out",
            ("websocket",),
        ),
    )
}


@attrs.frozen
class Route:
    """One path a provider serves, and what it serves there: an operation (``"chat"``,
    ``"embeddings"``…, a key of :data:`OPERATIONS`) or a service (a listing, a banner). Several
    providers may list the same path (``/v1/models``, and ``/v1/chat/completions`` for OpenAI and
    Mistral): then each but one says ``when`` the request is its own, and the one without ``when``
    takes the rest. Claims are tried in :data:`ENTRIES` order."""

    path: str  # a Starlette path pattern: ``{name}`` is one segment, ``{name:path}`` the rest
    methods: tuple[str, ...]
    serves: Operation | Service
    #: an operation answered by its own parse/render pair (embeddings, moderations): the pair's key
    #: ("openai.embeddings") in the ``ROUTES`` of the module the entry's ``pairs`` names
    pair: str | None = None
    when: Claim | None = None
    transport: Transport = "http"

    @property
    def operation(self) -> Operation | None:
        """The operation this route serves, None for a service."""
        spec = OPERATIONS.get(self.serves)
        return spec.name if spec is not None else None

    @property
    def handler(self) -> Handler:
        """How the server answers this route."""
        spec = OPERATIONS.get(self.serves)
        return spec.handler if spec is not None else cast(Service, self.serves)


@attrs.frozen
class SdkClient:
    """How a provider's official SDK is pointed at a mockllm server: the handle the Python API
    (``MockServer``) and the pytest fixture offer, and the environment ``mockllm_env`` sets."""

    handle: str  # the property of MockServer and the fixture: "cohere_base_url"
    usage: str  # how the SDK takes it (docs/pytest.md, docs/python-api.md)
    path: str = ""  # appended to the server's URL ("/v1" for OpenAI's SDK)
    env: tuple[str, ...] = ()  # variables the SDKs read that URL from: set to it
    #: variables an SDK needs besides the URL (credentials, region, API version): set where unset
    defaults: tuple[tuple[str, str], ...] = ()


_OPENAI_SDK = SdkClient(
    "openai_base_url",
    'OpenAI(base_url=…, api_key="test")',
    "/v1",
    ("OPENAI_BASE_URL",),
    (("OPENAI_API_KEY", "mockllm"),),
)


def _method_handlers(operations: Mapping[str, Operation]) -> Mapping[str, Handler]:
    return {method: OPERATIONS[op].handler for method, op in operations.items()}


@attrs.frozen
class ProviderEntry:
    """Everything mockllm knows about one provider besides its adapter's code."""

    name: Provider
    adapter: str  # "module:Class" in mockllm.runtime.providers; the class takes no arguments
    routes: tuple[Route, ...]
    upstream: str  # the public API's base URL: where `mockllm record` forwards by default
    prefixes: tuple[str, ...] = ()  # unknown paths under these get this provider's 404/405
    #: module in mockllm.runtime.providers whose ``ROUTES`` maps each route's ``pair`` to its
    #: parse/render functions (its embedding and moderation routes)
    pairs: str | None = None
    upstream_from: Provider | None = None  # `--upstream NAME=URL` for that provider also sets this one
    #: where a bare chat body goes (`mockllm explain`); "{model}" is the body's model (default: the
    #: first "chat" route)
    chat_path: str = attrs.field(default=attrs.Factory(lambda e: _chat_route(e.routes), takes_self=True))
    default_model: str = ""  # for "{model}" in chat_path when the body names none
    #: a regex found in the path of a recorded POST that is this provider's chat request (default:
    #: the chat path, at the end)
    recorded: str = attrs.field(default=attrs.Factory(lambda e: re.escape(e.chat_path) + "$", takes_self=True))
    #: module in mockllm.runtime.recording.readers that reads its recorded answers (default: the
    #: adapter's module name); None: no reader yet, so its recorded traffic is not converted
    reader: str | None = attrs.field(default=attrs.Factory(lambda e: e.adapter.partition(":")[0], takes_self=True))
    docs: str = attrs.field(default=attrs.Factory(lambda e: f"providers/{e.name}.md", takes_self=True))  # docs/…
    #: ``…/models/{model}:METHOD`` operations its "model_path" routes answer; a method answered by a
    #: parse/render pair has the pair ``NAME.METHOD`` in the ``pairs`` module
    model_operations: Mapping[str, Operation] = attrs.field(factory=dict)
    #: how the server answers each of ``model_operations`` (derived)
    model_methods: Mapping[str, Handler] = attrs.field(
        init=False, default=attrs.Factory(lambda e: _method_handlers(e.model_operations), takes_self=True)
    )
    #: how its official SDK is pointed at the server (the API's and the fixture's handles)
    client: SdkClient | None = None
    #: whether a bare body is this provider's, from its shape (``sniff.py``; ``mockllm explain``); None
    #: for a body shaped as another provider's (Azure's is OpenAI's)
    sniff: Callable[[dict[str, Any]], bool] | None = None
    #: the length of an unscripted vector for an embedding model mockllm does not know (None: it
    #: serves no embeddings)
    embedding_dimensions: int | None = None


def _chat_route(routes: tuple[Route, ...]) -> str:
    return next((r.path for r in routes if r.serves == "chat"), "")


def _header(name: str) -> Claim:
    return lambda path, headers: name in headers


def _mistral_client(path: str, headers: Mapping[str, str]) -> bool:
    """A request to a path Mistral shares with OpenAI is Mistral's when ``x-mockllm-provider`` says
    ``mistral`` or, without that header, when it comes from a Mistral SDK (``User-Agent:
    mistral-client-python/…``); ``x-mockllm-provider: openai`` keeps a Mistral SDK's request OpenAI's."""
    forced = headers.get("x-mockllm-provider")
    if forced is not None:
        return forced.strip().lower() == "mistral"
    return headers.get("user-agent", "").lower().startswith("mistral-client")


def _gemini_method(path: str, headers: Mapping[str, str]) -> bool:
    return ":" in path.rsplit("/", 1)[-1] or "x-goog-api-key" in headers


_VERTEX_MODEL = "/publishers/google/models/{rest:path}"
#: the ``{model}:METHOD`` operations Gemini and Vertex share
_GENERATE: dict[str, Operation] = {
    "generateContent": "chat",
    "streamGenerateContent": "chat",
    "countTokens": "count_tokens",
}

ENTRIES: tuple[ProviderEntry, ...] = (
    ProviderEntry(  # before openai: its recorded chat paths end as OpenAI's do
        name="azure",
        adapter="azure:AzureAdapter",
        routes=(
            Route("/openai/deployments/{deployment}/chat/completions", ("POST",), "chat"),
            Route("/openai/deployments/{deployment}/embeddings", ("POST",), "embeddings", "azure.embeddings"),
            Route("/openai/deployments/{deployment}/audio/speech", ("POST",), "speech", "azure.speech"),
            Route(
                "/openai/deployments/{deployment}/audio/transcriptions",
                ("POST",),
                "transcription",
                "azure.transcriptions",
            ),
            Route(
                "/openai/deployments/{deployment}/audio/translations", ("POST",), "translation", "azure.translations"
            ),
            Route(
                "/openai/deployments/{deployment}/images/generations", ("POST",), "images", "azure.images.generations"
            ),
            Route("/openai/deployments/{deployment}/images/edits", ("POST",), "images", "azure.images.edits"),
            Route("/openai/v1/chat/completions", ("POST",), "chat"),
            Route("/openai/v1/embeddings", ("POST",), "embeddings", "azure.embeddings"),
            Route("/openai/v1/audio/speech", ("POST",), "speech", "azure.speech"),
            Route("/openai/v1/audio/transcriptions", ("POST",), "transcription", "azure.transcriptions"),
            Route("/openai/v1/audio/translations", ("POST",), "translation", "azure.translations"),
            Route("/openai/v1/images/generations", ("POST",), "images", "azure.images.generations"),
            Route("/openai/v1/images/edits", ("POST",), "images", "azure.images.edits"),
        ),
        upstream="https://YOUR-RESOURCE.openai.azure.com",  # every resource has its own: --upstream azure=URL
        prefixes=("/openai/",),
        chat_path="/openai/v1/chat/completions",  # needs no api-version
        recorded=r"/openai/(?:deployments/[^/]+|v1)/chat/completions$",
        pairs="azure",
        client=SdkClient(
            "azure_endpoint",
            'AzureOpenAI(azure_endpoint=…, api_key="test", api_version="2024-10-21")',
            env=("AZURE_OPENAI_ENDPOINT",),
            defaults=(("AZURE_OPENAI_API_KEY", "mockllm"), ("OPENAI_API_VERSION", "2024-10-21")),
        ),
        embedding_dimensions=1536,
    ),
    ProviderEntry(
        name="openai",
        adapter="openai_chat:OpenAIChatAdapter",
        routes=(
            Route("/v1/chat/completions", ("POST",), "chat"),
            Route("/v1/embeddings", ("POST",), "embeddings", "openai.embeddings"),
            # OpenRouter's OpenAI-compatible API (runtime/providers/openrouter.py); still `provider is openai`
            Route("/api/v1/chat/completions", ("POST",), "chat"),
            Route("/api/v1/embeddings", ("POST",), "embeddings", "openai.embeddings"),
            Route("/api/v1/models", ("GET",), "models"),
            Route("/v1/moderations", ("POST",), "moderations", "openai.moderations"),
            Route("/v1/audio/speech", ("POST",), "speech", "openai.speech"),
            Route("/v1/audio/transcriptions", ("POST",), "transcription", "openai.transcriptions"),
            Route("/v1/audio/translations", ("POST",), "translation", "openai.translations"),
            Route("/v1/images/generations", ("POST",), "images", "openai.images.generations"),
            Route("/v1/images/edits", ("POST",), "images", "openai.images.edits"),
            Route("/v1/images/variations", ("POST",), "images", "openai.images.variations"),
            Route("/v1/models", ("GET",), "models"),
            Route("/v1/models/{rest:path}", ("GET",), "model_path"),
            # the Realtime API: a WebSocket session (server/realtime/, docs/realtime.md)
            Route("/v1/realtime", ("GET",), "realtime", transport="websocket"),
        ),
        upstream="https://api.openai.com",
        recorded=r"/chat/completions$",
        pairs="openai_pairs",
        client=_OPENAI_SDK,
        embedding_dimensions=1536,
    ),
    ProviderEntry(
        name="responses",
        adapter="responses:ResponsesAdapter",
        routes=(Route("/v1/responses", ("POST",), "chat"),),
        upstream="https://api.openai.com",
        prefixes=("/v1/responses",),
        upstream_from="openai",
        client=_OPENAI_SDK,
        sniff=sniff.responses,
    ),
    ProviderEntry(
        name="anthropic",
        adapter="anthropic:AnthropicAdapter",
        routes=(
            Route("/v1/messages", ("POST",), "chat"),
            Route("/v1/messages/count_tokens", ("POST",), "count_tokens"),
            Route("/v1/models", ("GET",), "models", when=_header("anthropic-version")),
            Route("/v1/models/{rest:path}", ("GET",), "model_path", when=_header("anthropic-version")),
        ),
        upstream="https://api.anthropic.com",
        prefixes=("/v1/messages",),
        client=SdkClient(
            "anthropic_base_url",
            'Anthropic(base_url=…, api_key="test")',
            env=("ANTHROPIC_BASE_URL",),
            defaults=(("ANTHROPIC_API_KEY", "mockllm"),),
        ),
        sniff=sniff.anthropic,
    ),
    ProviderEntry(  # before gemini: its recorded paths end as Gemini's do
        name="vertex",
        adapter="vertex:VertexAdapter",
        routes=(
            *(
                Route(f"/{version}{project}{_VERTEX_MODEL}", ("POST",), "model_path")
                for version in ("v1", "v1beta1")
                for project in ("/projects/{project}/locations/{location}", "")  # "": express mode (an API key)
            ),
            # the Live API (runtime/providers/gemini_live.py, docs/gemini-live.md)
            Route(
                "/ws/google.cloud.aiplatform.{version}.LlmBidiService/BidiGenerateContent",
                ("GET",),
                "realtime",
                transport="websocket",
            ),
        ),
        upstream="https://aiplatform.googleapis.com",
        chat_path="/v1/projects/mockllm/locations/us-central1/publishers/google/models/{model}:generateContent",
        recorded=r"/publishers/google/models/[^/:]+:(?:generateContent|streamGenerateContent)$",
        prefixes=("/v1/projects/", "/v1/publishers/", "/v1beta1/"),
        pairs="vertex",
        default_model="gemini-2.0-flash",
        model_operations={
            **_GENERATE,
            "embedContent": "embeddings",
            "batchEmbedContents": "embeddings",
            "predict": "embeddings",
        },
        client=SdkClient(
            "vertex_base_url",
            'genai.Client(vertexai=True, project=…, location=…, credentials=…, http_options={"base_url": …})',
            env=("GOOGLE_VERTEX_BASE_URL",),  # with project= and location= given: without them the SDK
        ),  # posts to the base URL itself (an API gateway's),
        embedding_dimensions=768,
    ),
    ProviderEntry(
        name="gemini",
        adapter="gemini:GeminiAdapter",
        routes=(
            Route("/v1/models", ("GET",), "models", when=_header("x-goog-api-key")),
            # Starlette cannot route a ':' inside a segment: Gemini's `{model}:{method}` is split by hand.
            Route("/v1/models/{rest:path}", ("GET", "POST"), "model_path", when=_gemini_method),
            Route("/v1beta/models", ("GET",), "models"),
            Route("/v1beta/models/{rest:path}", ("GET", "POST"), "model_path"),
            # the Live API: a WebSocket session (runtime/providers/gemini_live.py, docs/realtime.md)
            Route(
                "/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent",
                ("GET",),
                "realtime",
                transport="websocket",
            ),
            Route(
                "/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContentConstrained",
                ("GET",),
                "realtime",
                transport="websocket",
            ),
        ),
        upstream="https://generativelanguage.googleapis.com",
        chat_path="/v1beta/models/{model}:generateContent",
        recorded=r"/models/.*:(?:generateContent|streamGenerateContent)$",
        prefixes=("/v1beta/",),
        pairs="gemini_embed",
        default_model="gemini-2.0-flash",
        model_operations={**_GENERATE, "embedContent": "embeddings", "batchEmbedContents": "embeddings"},
        client=SdkClient(
            "gemini_base_url",
            'genai.Client(api_key="test", http_options={"base_url": …})',
            env=("GOOGLE_GEMINI_BASE_URL",),
            defaults=(("GEMINI_API_KEY", "mockllm"),),
        ),
        embedding_dimensions=768,
        sniff=sniff.gemini,
    ),
    ProviderEntry(
        name="ollama",
        adapter="ollama:OllamaAdapter",
        routes=(
            Route("/api/chat", ("POST",), "chat"),
            Route("/api/generate", ("POST",), "chat"),  # a completion, read as a chat turn (ollama_generate.py)
            Route("/api/embed", ("POST",), "embeddings", "ollama.embed"),
            Route("/api/embeddings", ("POST",), "embeddings", "ollama.embeddings"),
            Route("/api/tags", ("GET",), "tags"),
            Route("/api/version", ("GET",), "version"),
            Route("/", ("GET",), "root"),
        ),
        upstream="http://localhost:11434",
        prefixes=("/api/",),
        pairs="ollama_embed",
        client=SdkClient("ollama_host", "ollama.Client(host=…)", env=("OLLAMA_HOST",)),
        embedding_dimensions=768,
        sniff=sniff.ollama,
    ),
    ProviderEntry(
        name="cohere",
        adapter="cohere:CohereAdapter",
        routes=(
            Route("/v2/chat", ("POST",), "chat"),
            Route("/v2/embed", ("POST",), "embeddings", "cohere.embed"),
            Route("/v2/rerank", ("POST",), "rerank", "cohere.rerank"),
            Route("/v1/rerank", ("POST",), "rerank", "cohere.rerank"),  # the v1 shape other services copy
        ),
        upstream="https://api.cohere.com",
        prefixes=("/v2/",),
        pairs="cohere_embed",
        client=SdkClient(
            "cohere_base_url",
            'cohere.ClientV2(base_url=…, api_key="test")',
            # no env: the SDK reads CO_API_URL once, when it is imported, not when a client is made
            defaults=(("CO_API_KEY", "mockllm"),),
        ),
        embedding_dimensions=1024,
        sniff=sniff.cohere,
    ),
    ProviderEntry(
        name="mistral",
        adapter="mistral:MistralAdapter",
        routes=(
            Route("/v1/chat/completions", ("POST",), "chat", when=_mistral_client),
            Route("/v1/embeddings", ("POST",), "embeddings", "mistral.embeddings", when=_mistral_client),
        ),
        upstream="https://api.mistral.ai",
        pairs="mistral_embed",
        client=SdkClient(  # its SDK reads no URL from the environment
            "mistral_base_url",
            'Mistral(server_url=…, api_key="test")',
            defaults=(("MISTRAL_API_KEY", "mockllm"),),
        ),
        embedding_dimensions=1024,
        sniff=sniff.mistral,
    ),
    ProviderEntry(
        name="bedrock",
        adapter="bedrock.adapter:BedrockAdapter",
        # converse, converse-stream, invoke, invoke-with-response-stream: the adapter reads the
        # operation (and the model id, which may hold `/` once decoded) from the path
        routes=(
            Route("/model/{rest:path}/count-tokens", ("POST",), "count_tokens"),  # before the catch-all
            Route("/model/{rest:path}", ("POST",), "chat"),
        ),
        upstream="https://bedrock-runtime.us-east-1.amazonaws.com",
        chat_path="/model/{model}/converse",
        default_model="anthropic.claude-3-5-sonnet-20240620-v1:0",
        recorded=r"/model/.+/(?:converse|converse-stream|invoke|invoke-with-response-stream)$",
        prefixes=("/model/",),
        reader="bedrock",
        client=SdkClient(
            "bedrock_endpoint_url",
            'boto3.client("bedrock-runtime", endpoint_url=…), AnthropicBedrock(base_url=…)',
            env=("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "ANTHROPIC_BEDROCK_BASE_URL"),
            defaults=(
                ("AWS_ACCESS_KEY_ID", "mockllm"),
                ("AWS_SECRET_ACCESS_KEY", "mockllm"),
                ("AWS_DEFAULT_REGION", "us-east-1"),
            ),
        ),
        embedding_dimensions=1024,
        sniff=sniff.bedrock,
    ),
)

BY_NAME: dict[str, ProviderEntry] = {e.name: e for e in ENTRIES}
NAMES: tuple[Provider, ...] = tuple(e.name for e in ENTRIES)


def entry(name: str) -> ProviderEntry:
    """The entry of provider ``name`` (KeyError for a name no entry has)."""
    return BY_NAME[name]


# ------------------------------------------------------------------------------------------------
# The route table: every entry's routes, one per path


@attrs.frozen
class RouteSpec:
    """One path of the server's route table, with every provider that serves it."""

    path: str  # Starlette path pattern
    methods: tuple[str, ...]
    handler: Handler
    provider: Provider | None  # None: decided per request by ``claims`` (see :meth:`provider_of`)
    inputs: str | None = None  # a route answered by a parse/render pair: the pair's key (``Route.pair``)
    claims: tuple[tuple[Provider, Claim | None], ...] = ()
    #: a shared embedding path's pair for each claimant that names its own (Mistral's `/v1/embeddings`)
    claim_inputs: tuple[tuple[Provider, str], ...] = ()
    operation: Operation | None = None  # None: a service (a listing, a banner, ``…/models/{model}:METHOD``)
    transport: Transport = "http"

    def inputs_for(self, provider: Provider) -> str | None:
        """The parse/render pair ``provider`` answers this path with (embeddings, moderations)."""
        return next((name for who, name in self.claim_inputs if who == provider), self.inputs)

    def provider_of(self, path: str, headers: Mapping[str, str]) -> Provider:
        """The provider whose request this is: the first claim that holds, else the path's default."""
        if self.provider is not None:
            return self.provider
        fallback = DEFAULT_PROVIDER
        for name, when in self.claims:
            if when is None:
                fallback = name
            elif when(path, headers):
                return name
        return fallback


class RegistryError(MockllmError):
    """Two entries list one path with different handlers (a mistake in :data:`ENTRIES`)."""


def _route_table(entries: tuple[ProviderEntry, ...]) -> tuple[RouteSpec, ...]:
    by_path: dict[str, list[tuple[ProviderEntry, Route]]] = {}
    for e in entries:
        for r in e.routes:
            by_path.setdefault(r.path, []).append((e, r))
    table = []
    for path, claimants in by_path.items():
        first = claimants[0][1]
        same = (first.serves, first.transport, first.pair is None)
        if any((r.serves, r.transport, r.pair is None) != same for _, r in claimants):
            raise RegistryError(f"providers {', '.join(e.name for e, _ in claimants)} serve {path} differently")
        defaults = [e.name for e, r in claimants if r.when is None]
        if len(defaults) > 1:
            raise RegistryError(f"{path}: {' and '.join(defaults)} both claim it without `when`")
        methods = tuple(dict.fromkeys(m for _, r in claimants for m in r.methods))
        single = claimants[0][0].name if len(claimants) == 1 and first.when is None else None
        claims = tuple((e.name, r.when) for e, r in claimants)
        own = tuple((e.name, r.pair) for e, r in claimants[1:] if r.pair is not None and r.pair != first.pair)
        table.append(
            RouteSpec(path, methods, first.handler, single, first.pair, claims, own, first.operation, first.transport)
        )
    return tuple(table)


ROUTES: tuple[RouteSpec, ...] = _route_table(ENTRIES)

#: the OpenAI routes an OpenAI-compatible service serves under its own base path (``--openai-prefix``)
OPENAI_COMPATIBLE = ("/chat/completions", "/embeddings", "/models")


def openai_prefixed(prefixes: tuple[str, ...]) -> tuple[RouteSpec, ...]:
    """OpenAI's chat, embedding and model-listing routes again under each of ``prefixes`` (``/groq/openai/v1``
    serves ``/groq/openai/v1/chat/completions`` …): always OpenAI's, whatever the headers say."""
    out: list[RouteSpec] = []
    for prefix in prefixes:
        base = "/" + prefix.strip("/")
        for spec in ROUTES:
            tail = spec.path.removeprefix("/v1")
            if spec.path.startswith("/v1/") and tail in OPENAI_COMPATIBLE and spec.path != base + tail:
                out.append(attrs.evolve(spec, path=base + tail, provider="openai", claims=(), claim_inputs=()))
    return tuple(out)


def _pattern(path: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)(?::(\w+))?\}", path)
    out = []
    for i in range(0, len(parts), 3):
        out.append(re.escape(parts[i]))
        if i + 1 < len(parts):
            out.append(".*" if parts[i + 2] == "path" else "[^/]+")
    return re.compile("".join(out) + "$")


_EXACT: dict[str, RouteSpec] = {spec.path: spec for spec in ROUTES if "{" not in spec.path}
_PATTERNS: tuple[tuple[re.Pattern[str], RouteSpec], ...] = tuple(
    (_pattern(spec.path), spec) for spec in ROUTES if "{" in spec.path
)
_PREFIXES: tuple[tuple[str, Provider], ...] = tuple(
    sorted(((p, e.name) for e in ENTRIES for p in e.prefixes), key=lambda item: len(item[0]), reverse=True)
)


def route_at(path: str) -> RouteSpec | None:
    """The route table's entry for ``path``, None when no route matches it."""
    found = _EXACT.get(path)
    if found is not None:
        return found
    for pattern, spec in _PATTERNS:
        if pattern.match(path):
            return spec
    return None


def provider_for(path: str, headers: Mapping[str, str] | None = None) -> Provider:
    """The provider whose error shape answers a request to ``path`` (headers lower-cased): the route's
    provider (or the claim that holds on a shared path), else the entry with the longest prefix of
    ``path``, else OpenAI."""
    spec = route_at(path)
    if spec is not None:
        return spec.provider_of(path, headers or {})
    for prefix, name in _PREFIXES:
        if path.startswith(prefix) or path == prefix.rstrip("/"):
            return name
    return DEFAULT_PROVIDER


def recorded_provider(method: str, path: str, headers: Mapping[str, str] | None = None) -> Provider | None:
    """The provider whose chat request a recorded ``method`` ``path`` is, None for any other request
    (listings, embeddings, non-LLM traffic). Paths may carry a proxy's prefix. Where providers share a
    chat path, the one whose claim holds on the request's ``headers`` (lower-cased names) wins, as in
    serving; else the first entry that claims it unconditionally."""
    if method != "POST":
        return None
    matches = [e for e in ENTRIES if e.reader is not None and re.search(e.recorded, path)]
    for e in matches:
        claim = _chat_claim(e)
        if claim is not None and claim(path, headers or {}):
            return e.name
    return next((e.name for e in matches if _chat_claim(e) is None), None)


def _chat_claim(e: ProviderEntry) -> Claim | None:
    return next((r.when for r in e.routes if r.serves == "chat" and r.when is not None), None)


def chat_path(name: str, body: Any) -> str:
    """Where a bare chat ``body`` for provider ``name`` is posted (the model in the path where the
    API puts it there)."""
    e = entry(name)
    if "{model}" not in e.chat_path:
        return e.chat_path
    model = body.get("model") if isinstance(body, dict) else None
    named = model if isinstance(model, str) and model else e.default_model
    return e.chat_path.replace("{model}", named.removeprefix("models/"))


# ------------------------------------------------------------------------------------------------
# Loading what an entry names


def _load(module: str, attr: str) -> Any:
    return getattr(importlib.import_module(f"mockllm.runtime.providers.{module}"), attr)


_ADAPTERS: dict[str, Adapter] = {}


def adapter_for(provider: str) -> Adapter:
    """The (stateless, shared) adapter of ``provider``, made on first use."""
    found = _ADAPTERS.get(provider)
    if found is None:
        module, _, cls = entry(provider).adapter.partition(":")
        found = _ADAPTERS[provider] = _load(module, cls)()
    return found


# ------------------------------------------------------------------------------------------------
# Pointing the official SDKs at a server


def base_url(name: str, server_url: str) -> str:
    """Where provider ``name``'s official SDK is pointed for the server at ``server_url``."""
    client = entry(name).client
    return server_url + (client.path if client is not None else "")


def sdk_clients() -> tuple[SdkClient, ...]:
    """Every entry's SDK client, once each (OpenAI's SDK serves two entries)."""
    return tuple(dict.fromkeys(e.client for e in ENTRIES if e.client is not None))


def sdk_environment(server_url: str) -> tuple[dict[str, str], dict[str, str]]:
    """What ``mockllm_env`` sets: the variables that point the SDKs at ``server_url``, and the
    credentials, regions and versions to set where unset."""
    urls = {var: server_url + c.path for c in sdk_clients() for var in c.env}
    defaults = {var: value for c in sdk_clients() for var, value in c.defaults}
    return urls, defaults


def usual_dimensions(provider: str, model: str) -> int:
    """The length of an unscripted vector for ``model`` of ``provider``: the model's usual one, else
    the provider's (``embedding_dimensions``)."""
    return model_dimensions(model, entry(provider).embedding_dimensions or DEFAULT_DIMENSIONS)


def guess_provider(body: Any) -> Provider:
    """The provider a bare request ``body`` was written for, from its shape: the first entry whose
    ``sniff`` claims it (in ``sniff.SNIFF_ORDER``), else OpenAI."""
    if isinstance(body, dict):
        for name in sniff.SNIFF_ORDER:
            test = BY_NAME[name].sniff
            if test is not None and test(body):
                return BY_NAME[name].name
    return DEFAULT_PROVIDER
