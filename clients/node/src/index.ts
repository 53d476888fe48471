/**
 * mockllm for Node test suites: start the mockllm server (the Python package's `mockllm serve`) on a
 * free loopback port, point the official SDKs at it, and drive it through its admin API — the same
 * handle the pytest fixture gives Python tests. No dependencies beyond Node's own modules.
 */

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

/** Where each provider's official SDK is pointed, relative to the server's URL (the provider registry's
 * `SdkClient.path`; a Python test checks this table against it). */
export const PROVIDER_PATHS = {
  openai: "/v1",
  responses: "/v1",
  anthropic: "",
  gemini: "",
  ollama: "",
  cohere: "",
  mistral: "",
  azure: "",
  vertex: "",
  bedrock: "",
} as const;

export type Provider = keyof typeof PROVIDER_PATHS;

/** The environment variables the SDKs read their base URL from (set to the URL plus the path)... */
const SDK_URL_VARIABLES: ReadonlyArray<readonly [string, string]> = [
  ["AZURE_OPENAI_ENDPOINT", ""],
  ["OPENAI_BASE_URL", "/v1"],
  ["ANTHROPIC_BASE_URL", ""],
  ["GOOGLE_VERTEX_BASE_URL", ""],
  ["GOOGLE_GEMINI_BASE_URL", ""],
  ["OLLAMA_HOST", ""],
  ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME", ""],
  ["ANTHROPIC_BEDROCK_BASE_URL", ""],
];

/** ...and the credentials, regions and versions they need, set where unset. */
const SDK_DEFAULTS: Readonly<Record<string, string>> = {
  AZURE_OPENAI_API_KEY: "mockllm",
  OPENAI_API_VERSION: "2024-10-21",
  OPENAI_API_KEY: "mockllm",
  ANTHROPIC_API_KEY: "mockllm",
  GEMINI_API_KEY: "mockllm",
  CO_API_KEY: "mockllm",
  MISTRAL_API_KEY: "mockllm",
  AWS_ACCESS_KEY_ID: "mockllm",
  AWS_SECRET_ACCESS_KEY: "mockllm",
  AWS_DEFAULT_REGION: "us-east-1",
};

export interface StartOptions {
  /** Scenarios served from the start: `.mockllm` (or JSON form) file or directory paths, or script text. */
  scenarios?: string | readonly string[];
  /** Extra environment variables for the server process (on top of this process's). */
  env?: Record<string, string | undefined>;
  /** The port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /** The command that runs mockllm: a path, or the command and its first arguments
   * (`["python3", "-m", "mockllm"]`). Default: `MOCKLLM_BIN`, else `mockllm` on PATH, else `python3 -m mockllm`. */
  bin?: string | readonly string[];
  /** More `mockllm serve` arguments (`["--workers", "2"]`). */
  args?: readonly string[];
  /** Where relative scenario paths are looked up and `use "…"` imports may reach (default: the current directory). */
  root?: string;
  /** How long to wait for the server to say it is listening (default 30 s). */
  startTimeoutMs?: number;
}

/** One diagnostic of a script that did not load. */
export interface Diagnostic {
  severity: string;
  code: string;
  message: string;
  span: { file: string; line: number; column: number; end_line: number; end_column: number };
  hint?: string | null;
  related?: unknown[];
}

/** What a load did: the scenarios loaded, those that replaced one of the same name, and warnings. */
export interface Loaded {
  loaded: string[];
  replaced: string[];
  warnings: Diagnostic[];
  /** The warnings rendered as `mockllm check` prints them. */
  text: string;
}

/** One journal entry (`GET /_mockllm/requests`; docs/admin-api.md lists every field). */
export interface JournalEntry {
  id: number;
  time: number;
  conversation: string;
  provider: string;
  endpoint: string;
  model: string | null;
  stream: boolean;
  matched: { scenario: string; step: string; location: string } | null;
  answered_by: string;
  fallback: boolean;
  echo: boolean;
  no_match: { message: string; candidates: unknown[] } | null;
  expectation_failed: string | null;
  status: number;
  [field: string]: unknown;
}

/** One live conversation (`GET /_mockllm/conversations`). */
export type ConversationRecord = Record<string, unknown>;

/** The problems a teardown checks (`GET /_mockllm/verify`). */
export class Verification {
  readonly unmatched: JournalEntry[];
  readonly expectationFailures: JournalEntry[];
  readonly unusedSteps: Array<{ scenario: string; step: string; location: string }>;
  readonly rejected: JournalEntry[];
  readonly notLoaded: Array<{ message: string; text: string }>;

  constructor(data: Record<string, unknown>) {
    this.unmatched = (data["unmatched"] as JournalEntry[] | undefined) ?? [];
    this.expectationFailures = (data["expectation_failures"] as JournalEntry[] | undefined) ?? [];
    this.unusedSteps = (data["unused_steps"] as Verification["unusedSteps"] | undefined) ?? [];
    this.rejected = (data["rejected"] as JournalEntry[] | undefined) ?? [];
    this.notLoaded = (data["not_loaded"] as Verification["notLoaded"] | undefined) ?? [];
  }

  /** No unmatched, refused or failed-expectation request (unused steps are reported apart). */
  get ok(): boolean {
    return (
      this.unmatched.length === 0 &&
      this.expectationFailures.length === 0 &&
      this.rejected.length === 0 &&
      this.notLoaded.length === 0
    );
  }

  /** The problems as text ("" when there are none), as the pytest plugin words them. */
  report(options: { unused?: boolean } = {}): string {
    const parts = this.notLoaded.map((r) => `mockllm: ${r.message}:\n${r.text}`);
    const plural = (n: number): string => (n === 1 ? "" : "s");
    if (this.unmatched.length > 0) {
      const head = `mockllm: ${this.unmatched.length} request${plural(this.unmatched.length)} matched no step`;
      const each = this.unmatched.map((e) => e.no_match?.message ?? `mockllm: no step matched request #${e.id}`);
      parts.push([head, ...each].join("\n\n"));
    }
    if (this.expectationFailures.length > 0) {
      parts.push(this.expectationFailures.map((e) => `mockllm: expectation failed: ${e.expectation_failed}`).join("\n"));
    }
    if (this.rejected.length > 0) {
      const n = this.rejected.length;
      const lines = [`mockllm: ${n} request${plural(n)} refused before matching:`];
      for (const e of this.rejected) lines.push(`  - ${e.endpoint}: ${e.status} ${String(e["rejected"])}`);
      parts.push(lines.join("\n"));
    }
    if (options.unused && this.unusedSteps.length > 0) {
      const lines = ["mockllm: steps never used:"];
      for (const s of this.unusedSteps) lines.push(`  - scenario "${s.scenario}", step \`${s.step}\` (${s.location})`);
      parts.push(lines.join("\n"));
    }
    return parts.join("\n\n");
  }
}

/** Every error this package raises: a server that would not start or died, a script with errors. */
export class MockllmError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MockllmError";
  }
}

/** Script text or a path? Text holds a newline or starts with `{` (the JSON form), as in Python. */
export function isScriptText(source: string): boolean {
  return source.includes("\n") || source.trimStart().startsWith("{");
}

const LISTENING = /^mockllm listening on (http:\/\/\S+)/;
const OUTPUT_KEPT = 64 * 1024;
const INSTALL_HINT =
  "install it with `pip install mockllm` (Python >= 3.11), or give the command with the `bin` option or MOCKLLM_BIN";

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function killAllOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const child of running) child.kill("SIGKILL");
  });
}

function onPath(command: string): string | undefined {
  const exts = process.platform === "win32" ? (process.env["PATHEXT"] ?? ".EXE;.CMD;.BAT").split(";") : [""];
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    if (!dir) continue;
    for (const ext of exts) {
      const candidate = join(dir, command + ext);
      try {
        if (statSync(candidate).isFile()) return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** The command that runs mockllm, and what to say when it fails: the option, MOCKLLM_BIN, `mockllm` on
 * PATH, else Python with `-m mockllm`. */
function findCommand(bin: StartOptions["bin"]): string[] {
  if (bin !== undefined) return typeof bin === "string" ? [bin] : [...bin];
  const fromEnv = process.env["MOCKLLM_BIN"];
  if (fromEnv) return [fromEnv];
  const found = onPath("mockllm");
  if (found) return [found];
  for (const python of ["python3", "python"]) {
    const interpreter = onPath(python);
    if (interpreter) return [interpreter, "-m", "mockllm"];
  }
  throw new MockllmError(
    `mockllm: cannot start the mock server: neither the \`mockllm\` command nor Python is on PATH; ${INSTALL_HINT}`,
  );
}

/** The files a directory holds for the library, as `mockllm serve DIR` finds them: its `.mockllm` and
 * `.json` scripts, in path order. */
function scriptsUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...scriptsUnder(path));
    else if (name.endsWith(".mockllm") || name.endsWith(".json")) out.push(path);
  }
  return out;
}

interface Source {
  text: string;
  json: boolean;
  /** The file's path, for error messages and for `use` imports (null for text). */
  path: string | null;
}

/** A running mockllm server and the handle tests use. `startMockllm` makes one; `useMockllm` (from
 * `mockllm/vitest` and `mockllm/jest`) makes one per test file. */
export class Mockllm {
  private child: ChildProcess | null = null;
  private serverUrl: string | null = null;
  private output = "";
  private exitCode: number | null = null;
  private exitSignal: string | null = null;
  private library: Source[] = [];
  private changed = false;
  /** Fail the current test on a request no step matched (the helpers set it from `strict` before each test). */
  strict = true;
  /** Fail the current test on a step it loaded and never used. */
  requireAllUsed = false;
  /** The scenarios loaded since the last `restore()`. */
  loadedNames: string[] = [];
  private readonly root: string;
  private readonly adminToken: string | undefined;
  /** Names the current test (for `conversationHeader`); the Vitest and Jest helpers set it. */
  testName: () => string = () => "";
  /** The current test file, against which relative scenario paths are looked up first. */
  testPath: () => string | undefined = () => undefined;

  constructor(readonly options: StartOptions = {}) {
    this.root = resolve(options.root ?? process.cwd());
    const env = { ...process.env, ...options.env };
    this.adminToken = env["MOCKLLM_ADMIN_TOKEN"] || undefined;
  }

  // ---- the base URLs the SDKs take

  /** `http://127.0.0.1:PORT`. */
  get url(): string {
    if (this.serverUrl === null) throw new MockllmError("mockllm: the server is not started (use it inside a test)");
    return this.serverUrl;
  }

  /** Where provider `provider`'s official SDK is pointed. */
  baseUrl(provider: Provider): string {
    const path = PROVIDER_PATHS[provider];
    if (path === undefined) {
      throw new MockllmError(`mockllm: no provider "${provider}" (${Object.keys(PROVIDER_PATHS).join(", ")})`);
    }
    return this.url + path;
  }

  /** `new OpenAI({ baseURL: mock.openaiBaseUrl, apiKey: "test" })`: the URL plus `/v1`. */
  get openaiBaseUrl(): string {
    return this.baseUrl("openai");
  }
  /** `new Anthropic({ baseURL: mock.anthropicBaseUrl, apiKey: "test" })`. */
  get anthropicBaseUrl(): string {
    return this.baseUrl("anthropic");
  }
  /** `new GoogleGenAI({ apiKey: "test", httpOptions: { baseUrl: mock.geminiBaseUrl } })`. */
  get geminiBaseUrl(): string {
    return this.baseUrl("gemini");
  }
  /** `new Ollama({ host: mock.ollamaHost })`. */
  get ollamaHost(): string {
    return this.baseUrl("ollama");
  }
  /** `new CohereClientV2({ environment: mock.cohereBaseUrl, token: "test" })`. */
  get cohereBaseUrl(): string {
    return this.baseUrl("cohere");
  }
  /** `new Mistral({ serverURL: mock.mistralBaseUrl, apiKey: "test" })`. */
  get mistralBaseUrl(): string {
    return this.baseUrl("mistral");
  }
  /** `new AzureOpenAI({ endpoint: mock.azureEndpoint, apiKey: "test", apiVersion: "2024-10-21" })`. */
  get azureEndpoint(): string {
    return this.baseUrl("azure");
  }
  /** Vertex AI's base URL (`httpOptions: { baseUrl }` with `vertexai: true`). */
  get vertexBaseUrl(): string {
    return this.baseUrl("vertex");
  }
  /** `new BedrockRuntimeClient({ endpoint: mock.bedrockEndpointUrl, region: "us-east-1", credentials })`. */
  get bedrockEndpointUrl(): string {
    return this.baseUrl("bedrock");
  }

  /** The environment variables that point the SDKs here (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL` …),
   * with the API keys, regions and versions they need: what `mockllm_env` sets in pytest. */
  sdkEnv(): Record<string, string> {
    const vars: Record<string, string> = {};
    for (const [name, path] of SDK_URL_VARIABLES) vars[name] = this.url + path;
    return { ...SDK_DEFAULTS, ...vars };
  }

  /** `{"x-mockllm-conversation": KEY}` with a key unique to this test (and to `name`): pass it as the
   * client's default headers to keep this test's chats apart from any other's. */
  conversationHeader(name = ""): Record<string, string> {
    const test = this.testName();
    const key = test && name ? `${test}::${name}` : test || name;
    if (!key) throw new MockllmError("mockllm: conversationHeader() outside a test needs a name");
    return { "x-mockllm-conversation": key };
  }

  // ---- starting and stopping

  /** Start the server: `mockllm serve --port 0`, then load the `scenarios` option. */
  async start(): Promise<this> {
    if (this.child !== null) return this;
    this.library = this.sources(this.options.scenarios);
    const command = findCommand(this.options.bin);
    const args = [
      ...command.slice(1),
      "serve",
      "--port",
      String(this.options.port ?? 0),
      "--scenario-base",
      this.root,
      ...(this.options.args ?? []),
    ];
    const child = spawn(command[0]!, args, {
      cwd: this.root,
      env: { ...process.env, PYTHONUNBUFFERED: "1", ...this.options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    running.add(child);
    killAllOnExit();
    const keep = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString("utf8")).slice(-OUTPUT_KEPT);
    };
    child.stderr!.on("data", keep);
    child.once("exit", (code, signal) => {
      this.exitCode = code;
      this.exitSignal = signal;
      running.delete(child);
    });
    try {
      this.serverUrl = await this.listening(child, command, keep);
    } catch (error) {
      await this.stop();
      throw error;
    }
    child.unref();
    (child.stdout as unknown as { unref?: () => void }).unref?.();
    (child.stderr as unknown as { unref?: () => void }).unref?.();
    await this.loadLibrary();
    return this;
  }

  private listening(child: ChildProcess, command: string[], keep: (chunk: Buffer) => void): Promise<string> {
    const timeout = this.options.startTimeoutMs ?? 30_000;
    const shown = command.join(" ");
    return new Promise((resolvePromise, reject) => {
      let first = "";
      let done = false;
      const finish = (error: Error | null, url?: string): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (error) reject(error);
        else resolvePromise(url!);
      };
      const timer = setTimeout(
        () => finish(new MockllmError(`mockllm: \`${shown} serve\` did not start within ${timeout} ms${this.shownOutput()}`)),
        timeout,
      );
      child.stdout!.on("data", (chunk: Buffer) => {
        keep(chunk);
        if (done) return;
        first += chunk.toString("utf8");
        const newline = first.indexOf("\n");
        if (newline < 0) return;
        const match = LISTENING.exec(first.slice(0, newline).trim());
        if (match) finish(null, match[1]!.replace(/\/$/, ""));
        else finish(new MockllmError(`mockllm: \`${shown} serve\` printed something unexpected${this.shownOutput()}`));
      });
      child.once("error", (error: NodeJS.ErrnoException) => {
        const why = error.code === "ENOENT" ? `\`${command[0]}\` was not found` : error.message;
        finish(new MockllmError(`mockllm: cannot start the mock server: ${why}; ${INSTALL_HINT}`));
      });
      child.once("exit", (code, signal) => {
        setImmediate(() => {
          // let the last output arrive
          if (/No module named mockllm|No module named 'mockllm'/.test(this.output)) {
            finish(new MockllmError(`mockllm: cannot start the mock server: \`${command[0]}\` has no mockllm package; ${INSTALL_HINT}`));
          } else {
            const how = signal ? `was killed (${signal})` : `exited with code ${code}`;
            finish(new MockllmError(`mockllm: \`${shown} serve\` ${how} before it was listening${this.shownOutput()}`));
          }
        });
      });
    });
  }

  private shownOutput(): string {
    const text = this.output.trim();
    return text ? `; its output:\n${text}` : " (it printed nothing)";
  }

  /** Stop the server (SIGTERM, then SIGKILL after 5 s). */
  async stop(): Promise<void> {
    const child = this.child;
    if (child === null) return;
    this.child = null;
    this.serverUrl = null;
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolvePromise) => {
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      child.once("exit", () => {
        clearTimeout(timer);
        resolvePromise();
      });
      child.kill("SIGTERM");
    });
  }

  /** Whether the server process is still running. */
  get alive(): boolean {
    return this.child !== null && this.exitCode === null && this.exitSignal === null;
  }

  // ---- the admin API

  private async admin(method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Response> {
    const url = this.url + "/_mockllm" + path;
    if (this.adminToken) headers = { ...headers, authorization: `Bearer ${this.adminToken}` };
    try {
      return await fetch(url, { method, body, headers });
    } catch (error) {
      if (!this.alive) throw this.died();
      throw new MockllmError(`mockllm: ${method} ${url} failed: ${String((error as Error).cause ?? error)}`);
    }
  }

  private died(): MockllmError {
    const how = this.exitSignal ? `was killed (${this.exitSignal})` : `exited with code ${this.exitCode}`;
    return new MockllmError(`mockllm: the mock server ${how}${this.shownOutput()}`);
  }

  private async json<T>(method: string, path: string): Promise<T> {
    const response = await this.admin(method, path);
    if (!response.ok) {
      throw new MockllmError(`mockllm: ${method} /_mockllm${path} answered ${response.status}: ${await response.text()}`);
    }
    return (await response.json()) as T;
  }

  /** The sources of `scenarios`: each path's text read now (a directory: its `.mockllm` files). */
  private sources(scenarios: StartOptions["scenarios"]): Source[] {
    const list = scenarios === undefined ? [] : typeof scenarios === "string" ? [scenarios] : [...scenarios];
    const out: Source[] = [];
    for (const source of list) {
      if (isScriptText(source)) {
        out.push({ text: source, json: source.trimStart().startsWith("{"), path: null });
        continue;
      }
      const path = this.resolvePath(source);
      const files = statSync(path).isDirectory() ? scriptsUnder(path) : [path];
      for (const file of files) {
        const inside = !relative(this.root, file).startsWith("..");
        out.push({ text: inside ? "" : readFileSync(file, "utf8"), json: file.endsWith(".json"), path: file });
      }
    }
    return out;
  }

  private resolvePath(source: string): string {
    if (isAbsolute(source)) {
      if (existsSync(source)) return source;
      throw new MockllmError(`mockllm: scenario path '${source}' not found`);
    }
    const testPath = this.testPath();
    const bases = [testPath ? dirname(testPath) : undefined, this.root].filter((b): b is string => b !== undefined);
    for (const base of bases) {
      if (existsSync(join(base, source))) return join(base, source);
    }
    const looked = bases.map((b) => join(b, source)).join(" and ");
    throw new MockllmError(`mockllm: scenario path '${source}' not found (looked for ${looked})`);
  }

  private async post(source: Source): Promise<Loaded> {
    let { text, json } = source;
    let name = "<script text>";
    if (source.path !== null) {
      name = relative(process.cwd(), source.path) || source.path;
      const rel = relative(this.root, source.path);
      if (rel && !rel.startsWith("..") && !isAbsolute(rel)) {
        // imported from its file, so its scenarios keep their own file:line:column in every report
        text = `use ${JSON.stringify(rel.split(sep).join("/"))} as loaded\n`;
        json = false;
      }
    }
    const type = json ? "application/json" : "text/plain; charset=utf-8";
    const response = await this.admin("POST", "/scenarios", text, { "content-type": type });
    const data = (await response.json()) as Record<string, unknown>;
    if (response.status === 400 && typeof data["text"] === "string") {
      throw new MockllmError(`mockllm: ${name} has errors:\n\n${data["text"].split("POST /_mockllm/scenarios").join(name)}`);
    }
    if (!response.ok) throw new MockllmError(`mockllm: loading scenarios answered ${response.status}: ${JSON.stringify(data)}`);
    return data as unknown as Loaded;
  }

  private async loadLibrary(): Promise<void> {
    for (const source of this.library) await this.post(source);
  }

  /** Load scenarios on top of what is served: script text, or a `.mockllm` / JSON-form file or a
   * directory (relative to the test file, then the root). Inside `useMockllm`, the load lasts for this
   * test only. A script with errors throws a `MockllmError` with every error, `file:line:column`. */
  async load(source: string): Promise<Loaded> {
    const sources = this.sources(source);
    const result: Loaded = { loaded: [], replaced: [], warnings: [], text: "" };
    for (const one of sources) {
      const loaded = await this.post(one);
      this.changed = true;
      result.loaded.push(...loaded.loaded);
      for (const name of loaded.loaded) if (!this.loadedNames.includes(name)) this.loadedNames.push(name);
      result.replaced.push(...loaded.replaced);
      result.warnings.push(...loaded.warnings);
      result.text = [result.text, loaded.text].filter(Boolean).join("\n");
    }
    return result;
  }

  /** Forget conversation state, the journal and step usage (or one conversation's); scenarios stay. */
  async reset(conversation?: string): Promise<void> {
    const query = conversation === undefined ? "" : `?conversation=${encodeURIComponent(conversation)}`;
    await this.json("POST", "/reset" + query);
  }

  /** Back to the scenarios the server started with (those loaded since are dropped), everything forgotten:
   * what the Vitest and Jest helpers do before each test. */
  async restore(): Promise<void> {
    if (this.changed) {
      await this.json("DELETE", "/scenarios");
      await this.loadLibrary();
      this.changed = false;
    }
    this.loadedNames = [];
    await this.reset();
  }

  /** The journal since the last reset, oldest first (every page of `GET /_mockllm/requests`). */
  async requests(): Promise<JournalEntry[]> {
    const out: JournalEntry[] = [];
    let after = 0;
    for (;;) {
      const page = await this.json<JournalEntry[]>("GET", `/requests?limit=1000&after=${after}`);
      out.push(...page);
      if (page.length < 1000) return out;
      after = page[page.length - 1]!.id;
    }
  }

  /** The live conversations: each one's machine positions, use counts and captures. */
  async conversations(): Promise<ConversationRecord[]> {
    return this.json<ConversationRecord[]>("GET", "/conversations");
  }

  /** Unmatched requests, failed expectations, refused requests and unused steps since the last reset. */
  async verify(): Promise<Verification> {
    return new Verification(await this.json<Record<string, unknown>>("GET", "/verify"));
  }

  /** What fails a test after its body ("" when nothing): requests no step matched (when `strict`), and
   * steps this test loaded and never used (when `requireAllUsed`). */
  async problems(): Promise<string> {
    const verification = await this.verify();
    const parts: string[] = [];
    if (this.strict) {
      const text = verification.report();
      if (text) parts.push(text);
    }
    if (this.requireAllUsed) {
      const unused = verification.unusedSteps.filter((s) => this.loadedNames.includes(s.scenario));
      const text = new Verification({ unused_steps: unused }).report({ unused: true });
      if (text) parts.push(text);
    }
    return parts.join("\n\n");
  }

  /** The server's health answer (version, what is loaded). */
  async health(): Promise<Record<string, unknown>> {
    return this.json<Record<string, unknown>>("GET", "/health");
  }
}

/** Start a mockllm server for a test run; `await mock.stop()` when done. */
export async function startMockllm(options: StartOptions = {}): Promise<Mockllm> {
  return new Mockllm(options).start();
}
