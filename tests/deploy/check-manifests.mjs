// Offline checks of deploy/kubernetes, printed as TAP: each manifest against the Kubernetes API
// schemas (kubernetes-models, generated from Kubernetes 1.34's OpenAPI), unknown fields refused,
// kustomization.yaml listing every file, and the manifests agreeing with each other, with the
// README's settings and with the seccomp profiles. No cluster is involved. YAML is read as 1.1,
// as Kubernetes reads it: 0440 is octal.
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { unknownFields } from "./lib/strict-fields.mjs";

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const dir = path.join(src, "deploy/kubernetes");
const results = [];
const check = (name, problems) => results.push({ name, problems: problems.filter(Boolean) });

async function schemaProblems(m) {
  let Model;
  try {
    ({ [m.kind]: Model } = await import(`kubernetes-models/${m.apiVersion}/${m.kind}`));
  } catch {
    return [`${m.apiVersion} ${m.kind}: not a Kubernetes kind`];
  }
  const problems = [...unknownFields(m)];
  try {
    new Model(m).validate();
  } catch (e) {
    problems.push(e.message);
  }
  return problems;
}

const kustomization = YAML.parse(readFileSync(path.join(dir, "kustomization.yaml"), "utf8"));
const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f) && f !== "kustomization.yaml").sort();
const listed = [...(kustomization.resources ?? [])].sort();
check("kustomization.yaml lists every manifest of deploy/kubernetes, and only those", [
  ...files.filter((f) => !listed.includes(f)).map((f) => `${f} is not in resources`),
  ...listed.filter((f) => !files.includes(f)).map((f) => `${f} is listed but missing`),
]);

const manifests = [];
for (const f of files) {
  for (const doc of YAML.parseAllDocuments(readFileSync(path.join(dir, f), "utf8"), { version: "1.1" })) {
    if (doc.errors.length) check(`${f} parses`, doc.errors.map(String));
    const m = doc.toJS();
    if (m) manifests.push({ file: f, m });
  }
}
for (const { file, m } of manifests) {
  check(`${file}: ${m.kind} ${m.metadata?.name} is valid against the Kubernetes schema`,
        await schemaProblems(m));
}

// Each checker must be able to fail: a typo deep in the securityContext and a wrong enum.
const one = (kind) => manifests.find(({ m }) => m.kind === kind)?.m;
const deployment = one("Deployment");
const typo = structuredClone(deployment);
typo.spec.template.spec.containers[0].securityContext.procMout = "Unmasked";
typo.spec.template.spec.containers[0].lifecycle.preStop.sleep.second = 5;
const typoProblems = await schemaProblems(typo);
check("the schema check refuses misspelled fields", [
  typoProblems.length === 2 ? "" : `expected 2 unknown fields, got: ${typoProblems.join("; ")}`,
]);
const badEnum = structuredClone(deployment);
badEnum.spec.template.spec.containers[0].securityContext.procMount = "Unmask";
check("the schema check refuses a value outside an enum", [
  (await schemaProblems(badEnum)).length ? "" : "procMount: Unmask was accepted",
]);

const pod = deployment.spec.template.spec;
const container = pod.containers[0];
const labels = deployment.spec.template.metadata.labels;
const selects = (selector, what) =>
  Object.entries(selector ?? {}).map(([k, v]) =>
    labels[k] === v ? "" : `${what} selects ${k}=${v}, the pod template has ${labels[k]}`);
const portMatches = (port, what) =>
  container.ports.some((p) => p.name === port || p.containerPort === port)
    ? "" : `${what} names port ${port}, which the container does not have`;
const service = one("Service"), hpa = one("HorizontalPodAutoscaler");
const pdb = one("PodDisruptionBudget"), policy = one("NetworkPolicy");

check("the selectors pick the Deployment's pods", [
  ...selects(deployment.spec.selector.matchLabels, "the Deployment"),
  ...selects(service.spec.selector, "the Service"),
  ...selects(pdb.spec.selector.matchLabels, "the PodDisruptionBudget"),
  ...selects(policy.spec.podSelector.matchLabels, "the NetworkPolicy"),
  Object.keys(service.spec.selector).length ? "" : "the Service selects every pod",
]);
check("the probes, the Service and the NetworkPolicy use the container's port", [
  portMatches(container.readinessProbe.httpGet.port, "the readiness probe"),
  portMatches(container.livenessProbe.httpGet.port, "the liveness probe"),
  container.readinessProbe.httpGet.path === "/readyz" ? "" : "readiness is not /readyz",
  container.livenessProbe.httpGet.path === "/healthz" ? "" : "liveness is not /healthz",
  ...service.spec.ports.map((p) => portMatches(p.targetPort, "the Service")),
  ...policy.spec.ingress.flatMap((r) => r.ports.map((p) => portMatches(p.port, "the NetworkPolicy"))),
]);
const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
const addr = env.MCP_EXEC_ADDR?.match(/:(\d+)$/);
check("the server listens on the container's port", [
  addr && container.ports.some((p) => p.containerPort === Number(addr[1])) ? ""
    : `MCP_EXEC_ADDR ${env.MCP_EXEC_ADDR} is not a container port`,
  ["http", "sse"].includes(env.MCP_EXEC_TRANSPORT) ? "" : "MCP_EXEC_TRANSPORT is not http",
]);
check("the HorizontalPodAutoscaler scales the Deployment", [
  hpa.spec.scaleTargetRef.kind === "Deployment" && hpa.spec.scaleTargetRef.name === deployment.metadata.name
    ? "" : "scaleTargetRef does not name the Deployment",
  deployment.spec.replicas === undefined ? "" : "the Deployment sets replicas, which a re-apply would reset",
  container.resources?.requests?.cpu ? "" : "no CPU request: CPU utilization has nothing to compare to",
]);

const readme = readFileSync(path.join(src, "README.md"), "utf8");
const settings = new Set([...readme.matchAll(/^\| `(MCP_EXEC_[A-Z0-9_]+)`(?:, `(MCP_EXEC_[A-Z0-9_]+)`)? \|/gm)]
  .flatMap((m) => [m[1], m[2]]).filter(Boolean));
check("every environment variable is a setting of README's Configuration table", [
  settings.size > 20 ? "" : `only ${settings.size} settings found in README.md`,
  ...container.env.map((e) => (settings.has(e.name) ? "" : `${e.name} is not an mcp-exec setting`)),
  env.MCP_EXEC_AUTH_TOKEN === undefined ? "" : "the token is in the environment, not a file",
]);
const tokenDir = path.posix.dirname(env.MCP_EXEC_AUTH_TOKEN_FILE ?? "");
const mount = container.volumeMounts.find((v) => v.mountPath === tokenDir);
const volume = pod.volumes.find((v) => v.name === mount?.name);
check("MCP_EXEC_AUTH_TOKEN_FILE is a file of the mounted Secret, in a mode mcp-exec accepts", [
  volume?.secret ? "" : `${tokenDir} is not a Secret volume`,
  volume?.secret?.items?.some((i) => i.path === path.posix.basename(env.MCP_EXEC_AUTH_TOKEN_FILE))
    ? "" : "the Secret does not project the token file's name",
  // Root-owned, so its group may read it (0440): the group is the server's, through fsGroup.
  [0o400, 0o440].includes(volume?.secret?.defaultMode) ? "" : "the Secret's mode lets others read it",
  volume?.secret?.defaultMode === 0o400 || pod.securityContext.fsGroup === pod.securityContext.runAsGroup
    ? "" : "mode 0440 needs fsGroup equal to the server's group",
]);

const sc = container.securityContext;
const profileName = sc.seccompProfile?.localhostProfile;
const profileOf = (p) => JSON.parse(readFileSync(path.join(src, p), "utf8"));
const names = (p) => new Set(p.syscalls.filter((r) => r.action === "SCMP_ACT_ALLOW").flatMap((r) => r.names));
const server = profileOf("packaging/seccomp/" + path.posix.basename(profileName ?? "none"));
const sandbox = profileOf("seccomp-profiles/default.json");
const serverNames = names(server);
check("the container's securityContext is what the sandbox needs and nothing more", [
  pod.hostUsers === false ? "" : "hostUsers is not false",
  sc.procMount === "Unmasked" && pod.hostUsers === false ? "" : "procMount Unmasked needs hostUsers: false",
  sc.privileged === false ? "" : "the container is privileged",
  sc.allowPrivilegeEscalation === false ? "" : "allowPrivilegeEscalation is not false",
  JSON.stringify(sc.capabilities) === JSON.stringify({ drop: ["ALL"] }) ? "" : "capabilities are not drop: [ALL]",
  sc.readOnlyRootFilesystem === true ? "" : "the root filesystem is writable",
  pod.securityContext.runAsNonRoot === true && pod.securityContext.runAsUser > 0 ? "" : "the server runs as root",
  sc.seccompProfile?.type === "Localhost" ? "" : "the seccomp profile is not Localhost",
]);
check("the server's seccomp profile allows all the sandbox's profile does, and the set-up's syscalls", [
  ...[...names(sandbox)].filter((n) => !serverNames.has(n)).map((n) => `${n} is not allowed`),
  ...["clone3", "unshare", "mount", "umount2", "pivot_root", "sethostname"]
    .filter((n) => !serverNames.has(n)).map((n) => `${n} is not allowed`),
  server.syscalls.some((r) => r.names.includes("clone3") && r.action !== "SCMP_ACT_ALLOW")
    ? "clone3 has a rule other than allow" : "",
  server.defaultAction === "SCMP_ACT_ERRNO" ? "" : "the default action is not an errno",
]);

console.log(`1..${results.length}`);
results.forEach(({ name, problems }, i) => {
  console.log(`${problems.length ? "not ok" : "ok"} ${i + 1} - ${name}`);
  for (const p of problems) console.log(`# ${p}`);
});
process.exitCode = results.some((r) => r.problems.length) ? 1 : 0;
