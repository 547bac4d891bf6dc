// The conformance suite imports `globSync` from `fs`, which Node 22 has and Node 20 lacks.
// This loader hands the suite a copy of `fs` with a small `globSync` (the suite only uses
// it as globSync("**/checks.json", { cwd })). Usage: node --import ./node20-globsync.mjs ...
import { register } from "node:module";

const shim = `
import fs from "node:fs";
import path from "node:path";
export * from "node:fs";
export default fs;
const pattern = (glob) => new RegExp("^" + glob
  .replace(/[.+^$()|[\\]\\\\]/g, "\\\\$&")
  .replace(/\\*\\*\\//g, "\\u0000")
  .replace(/\\*/g, "[^/]*")
  .replace(/\\?/g, "[^/]")
  .replace(/\\u0000/g, "(?:.*/)?") + "$");
export function globSync(globs, options = {}) {
  const cwd = String(options.cwd ?? process.cwd());
  const tests = [].concat(globs).map(pattern);
  const found = [];
  const walk = (rel) => {
    let entries;
    try { entries = fs.readdirSync(path.join(cwd, rel), { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      const r = rel ? rel + "/" + e.name : e.name;
      if (tests.some((t) => t.test(r))) found.push(r.split("/").join(path.sep));
      if (e.isDirectory()) walk(r);
    }
  };
  walk("");
  return found;
}
`;
const hooks = `
const FS = ${JSON.stringify("data:text/javascript," + encodeURIComponent(shim))};
export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/@modelcontextprotocol/conformance/")) {
    return { url: FS, shortCircuit: true };
  }
  return next(specifier, context);
}
`;
if (!("globSync" in (await import("node:fs")))) {
  register("data:text/javascript," + encodeURIComponent(hooks));
}
