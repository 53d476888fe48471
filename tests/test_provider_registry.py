"""The provider registry is the one list of providers: the language, the route table, the docs table,
the recorder and `mockllm explain` all agree with it, and a path two providers share is decided per
request by the entries' claims."""

from __future__ import annotations

import importlib
import re
import textwrap
from pathlib import Path
from typing import get_args

import pytest

from mockllm.cli import main
from mockllm.dsl.operations import OPERATIONS
from mockllm.dsl.parse.parser import grammar_text, parse_text
from mockllm.dsl.providers import PROVIDERS
from mockllm.dsl.tree.reference import SUBJECTS, VALUES
from mockllm.runtime.providers import registry
from mockllm.runtime.providers.registry import ENTRIES, ProviderEntry, RegistryError, Route, Service, Transport
from mockllm.runtime.recording.readers import READERS
from mockllm.server.record.recorder import PUBLIC_APIS, parse_upstreams

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_the_language_names_exactly_the_registry_providers() -> None:
    """`dsl/providers.py`'s `Provider` literal is the language's half of the registry: the language may not
    import the runtime, and mypy needs the names written out. The two halves change together."""
    unserved = sorted(set(PROVIDERS) - set(registry.NAMES))
    assert not unserved, (
        f"dsl/providers.py names {unserved} but runtime/providers/registry.py has no entry for them: "
        "add each one's ProviderEntry to ENTRIES (or take the name out of the Provider literal)"
    )
    unnamed = sorted(set(registry.NAMES) - set(PROVIDERS))
    assert not unnamed, (
        f"runtime/providers/registry.py has entries for {unnamed} but the language cannot name them: "
        "add each name to the Provider literal in dsl/providers.py"
    )
    assert len(set(registry.NAMES)) == len(registry.NAMES), "two entries of ENTRIES have one name"


def test_the_grammar_accepts_every_provider_name_bare() -> None:
    rule = re.search(r"^!provider_word:(.*)$", grammar_text(), re.M)
    assert rule is not None
    assert sorted(re.findall(r'"(\w+)"', rule.group(1))) == sorted(PROVIDERS)
    for name in PROVIDERS:
        script = f'scenario "s":\n    when:\n        provider is {name}\n'
        script += '    step one:\n        reply:\n            text "hi"\n'
        tree, problems = parse_text(script)
        assert problems == [], name
        assert tree is not None


def test_the_editor_help_lists_every_provider() -> None:
    (provider,) = [e for e in SUBJECTS if e.phrase == "provider"]
    assert all(f"`{name}`" in provider.doc for name in PROVIDERS)
    assert {e.phrase for e in VALUES if e.doc.startswith("The provider")} == set(PROVIDERS)


def test_every_entry_has_its_adapter_reader_docs_page_and_upstream() -> None:
    for entry in ENTRIES:
        adapter = registry.adapter_for(entry.name)
        assert adapter.provider == entry.name
        assert adapter is registry.adapter_for(entry.name)  # one shared adapter
        assert entry.reader is None or READERS[entry.name].PROVIDER == entry.name
        assert (DOCS / entry.docs).is_file(), entry.docs
        assert PUBLIC_APIS[entry.name] == entry.upstream


def test_the_docs_table_links_every_provider_page_once() -> None:
    table = (DOCS / "providers.md").read_text(encoding="utf-8")
    linked = re.findall(r"^\|[^|]*\| \[\w+\]\((providers/\w+\.md)\)", table, re.M)
    assert sorted(linked) == sorted(e.docs for e in ENTRIES)


def test_the_site_nav_lists_every_provider_page_once() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = re.findall(r"^ +- [^:\n]+: (providers/\w+\.md)$", nav, re.M)
    assert sorted(pages) == sorted(e.docs for e in ENTRIES), "mkdocs.yml: a line under Providers for each page"


def test_record_help_names_every_provider(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert all(f" {name}," in help_text or f" {name})" in help_text for name in registry.NAMES), help_text


#: "Adding a provider" in docs/architecture.md: the files a new provider touches
ADDING = (DOCS / "architecture.md").read_text(encoding="utf-8").split("## Adding a provider", 1)[1]
(TOUCHED,) = re.findall(r"```text\n(.*?)```", ADDING.split("1. **Its adapter**", 1)[0], re.S)


def test_adding_a_provider_lists_the_files_the_registry_needs() -> None:
    """The architecture page's list of the files a new provider touches is what every provider has."""
    files = [line.split()[0] for line in TOUCHED.strip().splitlines()]
    assert len(files) == len(set(files)) >= 8
    for entry in ENTRIES:
        module = entry.adapter.partition(":")[0].replace(".", "/")  # a folder's module: bedrock/adapter
        for file in files:
            path = ROOT / file.replace("MODULE", module).replace("NAME", entry.name)
            assert path.is_file(), f"{entry.name}: docs/architecture.md says a provider has {path.relative_to(ROOT)}"
    server_http = (ROOT / "tests" / "test_server_http.py").read_text(encoding="utf-8")
    registry_text = (ROOT / "runtime" / "providers" / "registry.py").read_text(encoding="utf-8")
    for entry in ENTRIES:
        assert f'provider == "{entry.name}"' in server_http, f"tests/test_server_http.py: no request for {entry.name}"
        assert f'name="{entry.name}"' in registry_text


#: path → the provider whose error shape answers it (no headers)
BY_PATH = """
/v1/chat/completions openai
/v1/responses responses
/v1/responses/resp_1/cancel responses
/v1/messages anthropic
/v1/messages/batches anthropic
/v1/models openai
/v1/models/gpt-4o openai
/v1/models/gemini-2.5-flash:generateContent gemini
/v1beta/models/gemini-2.5-flash:generateContent gemini
/v1beta/cachedContents gemini
/api/chat ollama
/api/ps ollama
/api ollama
/v2/chat cohere
/v2/embed cohere
/v2/rerank cohere
/v1/embeddings openai
/openai/deployments/gpt-4o/chat/completions azure
/openai/v1/embeddings azure
/openai/deployments/gpt-4o/completions azure
/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:generateContent vertex
/v1beta1/publishers/google/models/gemini-2.5-flash:countTokens vertex
/v1beta1/projects/p/locations/l/endpoints/e:predict vertex
/model/amazon.nova-pro-v1:0/converse bedrock
/model/m/count-tokens bedrock
/nowhere openai
"""


@pytest.mark.parametrize(("path", "provider"), [line.split() for line in BY_PATH.strip().splitlines()])
def test_provider_for_a_path(path: str, provider: str) -> None:
    assert registry.provider_for(path) == provider


@pytest.mark.parametrize(
    ("header", "provider"), [("anthropic-version", "anthropic"), ("x-goog-api-key", "gemini"), ("user-agent", "openai")]
)
def test_model_listing_by_header(header: str, provider: str) -> None:
    assert registry.provider_for("/v1/models", {header: "x"}) == provider


def test_a_shared_path_is_one_route_decided_per_request() -> None:
    shared = [spec for spec in registry.ROUTES if spec.provider is None]
    assert {spec.path for spec in shared} == {
        "/v1/models",
        "/v1/models/{rest:path}",
        "/v1/chat/completions",
        "/v1/embeddings",
    }
    assert len({spec.path for spec in registry.ROUTES}) == len(registry.ROUTES)
    (models,) = [spec for spec in shared if spec.path == "/v1/models"]
    assert [name for name, _ in models.claims] == ["openai", "anthropic", "gemini"]


@pytest.mark.parametrize(
    ("headers", "provider"),
    [
        ({"user-agent": "mistral-client-python/3.7.0"}, "mistral"),
        ({"user-agent": "OpenAI/Python 2.8.1"}, "openai"),
        ({"user-agent": "OpenAI/Python 2.8.1", "x-mockllm-provider": "mistral"}, "mistral"),
        ({"user-agent": "mistral-client-python/3.7.0", "x-mockllm-provider": "openai"}, "openai"),
        ({}, "openai"),
    ],
)
def test_mistral_shares_openai_paths_by_user_agent_or_header(headers: dict[str, str], provider: str) -> None:
    for path in ("/v1/chat/completions", "/v1/embeddings"):
        assert registry.provider_for(path, headers) == provider
    spec = registry.route_at("/v1/embeddings")
    assert spec is not None
    assert spec.inputs_for(provider) == f"{provider}.embeddings"


def _entry(name: str, *routes: Route) -> ProviderEntry:
    return ProviderEntry(
        name="openai" if name == "a" else "ollama",
        adapter="openai_chat:OpenAIChatAdapter",
        routes=routes,
        upstream="http://x",
        chat_path="/c",
        recorded="/c$",
        reader="openai_chat",
        docs="providers/openai.md",
    )


def test_a_path_shared_by_user_agent() -> None:
    """How Mistral shares `/v1/chat/completions` with OpenAI: its claim reads the User-Agent."""

    def by_agent(path: str, headers: object) -> bool:
        assert isinstance(headers, dict)
        return "mistral-client" in headers.get("user-agent", "")

    table = registry._route_table(
        (
            _entry("a", Route("/v1/chat/completions", ("POST",), "chat")),
            _entry("b", Route("/v1/chat/completions", ("POST",), "chat", when=by_agent)),
        )
    )
    (spec,) = table
    assert spec.provider is None
    assert spec.provider_of(spec.path, {"user-agent": "mistral-client-python/1.9"}) == "ollama"
    assert spec.provider_of(spec.path, {"user-agent": "OpenAI/Python 1.99"}) == "openai"


def test_two_defaults_or_two_handlers_for_one_path_are_refused() -> None:
    with pytest.raises(RegistryError, match="both claim it"):
        registry._route_table(
            (_entry("a", Route("/x", ("POST",), "chat")), _entry("b", Route("/x", ("POST",), "chat")))
        )
    with pytest.raises(RegistryError, match="differently"):
        registry._route_table(
            (_entry("a", Route("/x", ("POST",), "chat")), _entry("b", Route("/x", ("GET",), "models", when=None)))
        )


def test_recorded_chat_paths() -> None:
    assert registry.recorded_provider("POST", "/proxy/v1/chat/completions") == "openai"
    assert registry.recorded_provider("POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent") == "gemini"
    assert registry.recorded_provider("POST", "/v1beta/models/m:embedContent") is None
    assert registry.recorded_provider("GET", "/v1/chat/completions") is None
    assert registry.recorded_provider("POST", "/openai/deployments/gpt4o/chat/completions") == "azure"
    assert registry.recorded_provider("POST", "/openai/v1/chat/completions") == "azure"
    vertex = "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"
    assert registry.recorded_provider("POST", vertex) == "vertex"
    mistral_sdk = {"user-agent": "mistral-client-python/1.9.0"}
    assert registry.recorded_provider("POST", "/v1/chat/completions", mistral_sdk) == "mistral"
    assert registry.recorded_provider("POST", "/v2/chat") == "cohere"


def test_upstream_for_openai_also_serves_responses_unless_given() -> None:
    assert parse_upstreams(["openai=http://a/"])["responses"] == "http://a"
    assert parse_upstreams(["openai=http://a", "responses=http://b"])["responses"] == "http://b"


def test_explain_posts_a_bare_body_to_the_entry_chat_path() -> None:
    assert registry.chat_path("gemini", {}) == "/v1beta/models/gemini-2.0-flash:generateContent"
    assert registry.chat_path("gemini", {"model": "models/g"}) == "/v1beta/models/g:generateContent"
    assert registry.chat_path("anthropic", {"model": "m"}) == "/v1/messages"


def test_the_architecture_page_example_is_a_valid_entry() -> None:
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Adding a provider", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    made = eval(textwrap.dedent(code.group(1)), {"ProviderEntry": ProviderEntry, "Route": Route})
    chat, embed = registry._route_table((made,))
    assert (chat.path, chat.handler, embed.inputs) == ("/v2/chat", "chat", "cohere.embed")
    shared = re.search(r"`(Route\(\"/v1/chat/completions\".*?\))`", section)
    assert shared is not None
    route = eval(shared.group(1), {"Route": Route})
    assert route.when is not None and route.when("/v1/chat/completions", {"user-agent": "mistral-client-python/1"})


#: "Adding an operation" in docs/architecture.md: the files a new operation touches
ADDING_OPERATION = (DOCS / "architecture.md").read_text(encoding="utf-8").split("## Adding an operation", 1)[1]
(OPERATION_FILES,) = re.findall(r"```text\n(.*?)```", ADDING_OPERATION.split("1. **Its name", 1)[0], re.S)


def _serving(operation: str) -> list[tuple[ProviderEntry, Route | None]]:
    """Each entry that serves ``operation``, with its route (None: one of its ``model_operations``)."""
    found: list[tuple[ProviderEntry, Route | None]] = []
    for e in ENTRIES:
        found += [(e, r) for r in e.routes if r.serves == operation]
        if operation in e.model_operations.values():
            found.append((e, None))
    return found


def test_the_language_names_exactly_the_registry_operations() -> None:
    assert sorted(OPERATIONS) == sorted(registry.OPERATIONS), (
        "dsl/operations.py's Operation literal and OPERATIONS in runtime/providers/registry.py change together"
    )
    assert all(name == spec.name for name, spec in registry.OPERATIONS.items())


def test_adding_an_operation_lists_the_files_each_operation_has() -> None:
    """The architecture page's list of the files a new operation touches is what every operation has."""
    files = [line.split()[0] for line in OPERATION_FILES.strip().splitlines()]
    assert len(files) == len(set(files)) == 6
    language = (DOCS / "language.md").read_text(encoding="utf-8")
    (endpoint_row,) = [line for line in language.splitlines() if line.startswith("| `endpoint` |")]
    for name, spec in registry.OPERATIONS.items():
        assert (f'"{name}"' in endpoint_row) == spec.engine, f"docs/language.md: the endpoint row and {name}"
        if spec.handler == "mcp":  # served by server/mcp/ at /mcp/NAME, by no provider (docs/mcp.md)
            assert (DOCS / "mcp.md").is_file() and (ROOT / "tests" / "test_e2e_mcp.py").is_file()
            continue
        serving = _serving(name)
        assert serving, f"no entry in ENTRIES serves the operation {name}"
        for e, route in serving:
            assert (DOCS / e.docs).is_file(), e.docs
            assert (ROOT / "tests" / f"test_e2e_{e.name}.py").is_file(), f"{e.name} serves {name}: no SDK tests"
            if spec.handler != "inputs":
                continue
            key = route.pair if route is not None else None
            assert e.pairs is not None, f"{e.name} serves {name} by a pair but names no `pairs` module"
            module = importlib.import_module(f"mockllm.runtime.providers.{e.pairs}")
            pairs = {k for k in module.ROUTES if k.startswith(f"{e.name}.")}
            assert key is None or key in pairs, f"{e.name}: {key} is not in {e.pairs}.ROUTES"
            assert (ROOT / "runtime" / "providers" / f"{e.pairs}.py").is_file()


def test_every_route_names_an_operation_or_a_service_and_a_transport() -> None:
    for spec in registry.ROUTES:
        assert spec.transport in get_args(Transport)
        assert spec.operation is None or spec.operation in registry.OPERATIONS
        assert spec.operation is not None or spec.handler in get_args(Service)
    by_operation = {spec.operation for spec in registry.ROUTES}
    assert {"chat", "embeddings", "moderations", "count_tokens", None} <= by_operation


def test_every_provider_serving_embeddings_has_its_default_dimension_documented() -> None:
    page = (DOCS / "embeddings.md").read_text(encoding="utf-8")
    sentence = " ".join(page.split("Any other model gets its", 1)[1].split(".", 1)[0].split())
    titles = {"openai": "OpenAI", "azure": "Azure OpenAI", "vertex": "Vertex AI", "bedrock": "Bedrock"}
    for e in ENTRIES:
        embeds = e.pairs is not None or e.name == "bedrock"  # Bedrock: embedding bodies through invoke
        assert (e.embedding_dimensions is not None) == embeds, e.name
        if e.embedding_dimensions is not None:
            said = re.search(rf"{e.embedding_dimensions} \(([^)]*)\)", sentence)
            assert said is not None and titles.get(e.name, e.name.title()) in said.group(1), (e.name, sentence)


#: a bare body of each provider whose bodies differ from every other's (what `mockllm explain` sniffs)
BODIES = {
    "openai": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
    "responses": {"model": "gpt-4o", "input": "hi"},
    "anthropic": {"model": "claude", "max_tokens": 10, "system": "be brief", "messages": []},
    "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    "ollama": {"model": "llama3", "messages": [{"role": "user", "content": "hi"}], "options": {}},
    "cohere": {"model": "command-r", "messages": [{"role": "user", "content": "hi"}], "documents": []},
    "mistral": {"model": "mistral-small-latest", "messages": [{"role": "user", "content": "hi"}]},
    "bedrock": {"messages": [{"role": "user", "content": [{"text": "hi"}]}], "inferenceConfig": {"maxTokens": 9}},
}
#: and the paths that tell apart the providers whose bodies are another's
BY_ENDPOINT = {
    "azure": "/openai/v1/chat/completions",
    "vertex": "/v1/projects/p/locations/l/publishers/google/models/gemini-2.0-flash:generateContent",
}


def test_explain_knows_every_provider_by_body_or_path() -> None:
    from mockllm.explain import guess_provider, parse_request

    assert sorted([*BODIES, *BY_ENDPOINT]) == sorted(registry.NAMES)
    for name, body in BODIES.items():
        assert guess_provider(body) == name
        assert registry.entry(name).sniff is not None or name == "openai"
    assert guess_provider({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 5, "messages": []}) == "bedrock"
    assert guess_provider({"texts": ["a"], "input_type": "search_document"}) == "cohere"
    assert guess_provider({"inputText": "a"}) == "bedrock"
    for name, path in BY_ENDPOINT.items():
        assert registry.entry(name).sniff is None  # its bodies are another provider's
        body = BODIES["openai" if name == "azure" else "gemini"]
        wrapped = {"endpoint": path, "body": body}
        assert parse_request(wrapped, None, None).provider == name
    assert parse_request(BODIES["mistral"], None, None).provider == "mistral"
