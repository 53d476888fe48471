// Builds dist/esm (ES modules) and dist/cjs (CommonJS) with TypeScript declarations; `npm pack` runs it.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
rmSync("dist", { recursive: true, force: true });
for (const project of ["tsconfig.json", "tsconfig.cjs.json"]) {
  execFileSync(process.execPath, [tsc, "-p", project], { stdio: "inherit" });
}
mkdirSync("dist/cjs", { recursive: true });
writeFileSync("dist/cjs/package.json", '{\n  "type": "commonjs"\n}\n');
writeFileSync("dist/.built", ""); // tests/test_node_package.py rebuilds when a source is newer
