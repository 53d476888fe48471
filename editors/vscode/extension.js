// Starts `mockllm lsp` (the command from the `mockllm.server.*` settings) for .mockllm files.
// Plain JavaScript so the package needs no build step: `npm install` then copy or link the folder.
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function start() {
  const config = vscode.workspace.getConfiguration("mockllm");
  const command = config.get("server.command", "mockllm");
  const args = config.get("server.args", ["lsp"]);
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const server = { command, args, options: { cwd } };
  client = new LanguageClient(
    "mockllm",
    "mockllm",
    { run: server, debug: server },
    {
      documentSelector: [{ language: "mockllm" }],
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/*.mockllm") },
    },
  );
  return client.start().catch((err) => {
    vscode.window.showErrorMessage(
      `mockllm: could not start "${command} ${args.join(" ")}" (${err.message}). ` +
        "Install the server with: pip install 'mockllm[lsp]', or set mockllm.server.command.",
    );
  });
}

async function activate(context) {
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("mockllm.server")) {
        if (client) await client.stop();
        await start();
      }
    }),
  );
  await start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
