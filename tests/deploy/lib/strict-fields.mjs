// Unknown fields: kubernetes-models' validators check types, enums and required fields but let
// unknown ones through, where the API server's strict field validation (kubectl's default) stops
// them, and a misspelled securityContext field would otherwise vanish. The field lists come from
// the same package's generated declarations (pinned by package-lock.json).
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const modelsDir = path.dirname(require.resolve("kubernetes-models/package.json"));
const cache = new Map();

function resolveImport(fromFile, spec) {
  let base;
  if (spec.startsWith(".")) base = path.resolve(path.dirname(fromFile), spec);
  else {
    const [scope, name, ...rest] = spec.split("/");
    const pkg = path.dirname(require.resolve(`${scope}/${name}/package.json`, { paths: [modelsDir] }));
    base = path.join(pkg, ...rest);
  }
  return base.replace(/\.js$/, "") + ".d.ts";
}

// { fields: Map<name, type text>, imports: Map<type name, file> } of a declaration file's
// interface, or null when the file declares no interface (a scalar such as Quantity).
function declaration(file) {
  if (cache.has(file)) return cache.get(file);
  let result = null;
  if (existsSync(file)) {
    const text = readFileSync(file, "utf8")
      .replace(/\/\*\*[\s\S]*?\*\//g, "")
      .replace(/\{\s*\[key: string\]:\s*([^;]+);\s*\}/g, "Map<$1>");
    const imports = new Map();
    for (const m of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm)) {
      imports.set(m[1], resolveImport(file, m[2]));
    }
    const body = text.match(/^export interface \w+(?: extends [\w, ]+)? \{\n([\s\S]*?)^\}/m);
    if (body) {
      const fields = new Map();
      for (const m of body[1].matchAll(/^\s*"([^"]+)"\??: (.+);$/gm)) fields.set(m[1], m[2]);
      result = { fields, imports };
    }
  }
  cache.set(file, result);
  return result;
}

function walk(value, type, decl, where, errors) {
  let m;
  if ((m = type.match(/^Array<(.+)>$/))) {
    if (Array.isArray(value)) value.forEach((v, i) => walk(v, m[1], decl, `${where}[${i}]`, errors));
  } else if ((m = type.match(/^Map<(.+)>$/))) {
    if (value && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) walk(v, m[1], decl, `${where}.${k}`, errors);
    }
  } else if (decl.imports.has(type)) {
    checkObject(value, decl.imports.get(type), where, errors);
  }
}

function checkObject(value, file, where, errors) {
  const decl = declaration(file);
  if (!decl || !value || typeof value !== "object" || Array.isArray(value)) return;
  for (const [key, v] of Object.entries(value)) {
    const type = decl.fields.get(key);
    if (type === undefined) errors.push(`${where}.${key}: unknown field`);
    else walk(v, type, decl, `${where}.${key}`, errors);
  }
}

// The unknown fields of a manifest of apiVersion/kind, as "path: unknown field" lines.
export function unknownFields(manifest) {
  const file = path.join(modelsDir, manifest.apiVersion, `${manifest.kind}.d.ts`);
  if (!existsSync(file)) return [`${manifest.apiVersion}/${manifest.kind}: no such kind`];
  const errors = [];
  checkObject(manifest, file, manifest.kind, errors);
  return errors;
}
