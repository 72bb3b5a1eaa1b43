#include "exec/arguments.h"

#include <array>
#include <cmath>

#include "exec/files.h"

namespace mcpexec::exec {
namespace {

using nlohmann::json;

Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message));
}

Error WrongType(const ArgumentSpec& self) {
  return Invalid(std::string(self.name) + " " + self.must);
}

json StringSchema(const char* description) {
  return {{"type", "string"}, {"description", description}};
}

// code

json CodeSchema(const config::Config&, const Offer&) { return StringSchema("Python 3 source to run as main.py"); }

Result<void> ReadCode(const ArgumentSpec& self, const json& value, ExecArguments& out) {
  if (!value.is_string()) return WrongType(self);
  out.request.code = value.get<std::string>();
  return Ok();
}

Result<void> CheckCode(const config::Config&, const ExecRequest& request) {
  if (request.code.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Invalid("code is empty");
  }
  return Ok();
}

// timeout_s

json TimeoutSchema(const config::Config& c, const Offer&) {
  return {{"type", "integer"},
          {"description", "Wall-clock limit in seconds (default " +
                              std::to_string(c.default_timeout_s) + ", clamped to 1.." +
                              std::to_string(c.max_timeout_s) + ")"}};
}

Result<void> ReadTimeout(const ArgumentSpec& self, const json& value, ExecArguments& out) {
  // Integral floats (10.0) are accepted: some clients send every number as a double.
  if (value.is_number_integer()) {
    out.request.timeout_s = value.get<long long>();
    return Ok();
  }
  if (!value.is_number_float()) return WrongType(self);
  const double t = value.get<double>();
  if (!std::isfinite(t) || std::floor(t) != t || std::fabs(t) >= 1e9) return WrongType(self);
  out.request.timeout_s = static_cast<long long>(t);
  return Ok();
}

std::string TimeoutBound(const config::Config& c) {
  return "at most " + std::to_string(c.max_timeout_s) + " s";
}

// stdin

json StdinSchema(const config::Config&, const Offer&) { return StringSchema("Text given on standard input"); }

Result<void> ReadStdin(const ArgumentSpec& self, const json& value, ExecArguments& out) {
  if (!value.is_string()) return WrongType(self);
  out.request.stdin_data = value.get<std::string>();
  return Ok();
}

Result<void> CheckStdin(const config::Config& c, const ExecRequest& request) {
  if (request.stdin_data.size() > c.max_stdin_bytes) {
    return Invalid("stdin is " + std::to_string(request.stdin_data.size()) +
                   " bytes, over the limit of " + std::to_string(c.max_stdin_bytes) +
                   " (MCP_EXEC_MAX_STDIN_BYTES)");
  }
  return Ok();
}

std::string StdinBound(const config::Config& c) { return "up to " + ByteCount(c.max_stdin_bytes); }

// files

json FilesSchema(const config::Config&, const Offer&) {
  return {
      {"type", "array"},
      {"description", "Files written under /tmp (the working directory) before the program starts"},
      {"items",
       {{"type", "object"},
        {"properties",
         {{"path", StringSchema("Relative to /tmp, e.g. data/input.csv; directories are created")},
          {"content", {{"type", "string"}}},
          {"encoding", {{"type", "string"}, {"enum", {"utf-8", "base64"}}, {"default", "utf-8"}}}}},
        {"required", {"path", "content"}},
        {"additionalProperties", false}}}};
}

Result<void> ReadFiles(const ArgumentSpec&, const json& value, ExecArguments& out) {
  MCPEXEC_ASSIGN_OR_RETURN(out.request.files, ParseInputFiles(value));
  return Ok();
}

Result<void> CheckFiles(const config::Config& c, const ExecRequest& request) {
  return ValidateInputFiles(c, request.files);
}

std::string FilesBound(const config::Config& c) {
  return "up to " + std::to_string(c.max_input_files) + " files of at most " +
         ByteCount(c.max_input_file_bytes) + " each";
}

// session

json SessionSchema(const config::Config&, const Offer&) {
  return StringSchema(
      "Omit for a fresh sandbox, discarded after the run. \"new\": run in a new session, whose "
      "state stays for later calls; a handle an earlier call returned: run in that session");
}

Result<void> ReadSession(const ArgumentSpec& self, const json& value, ExecArguments& out) {
  if (!value.is_string() || value.get_ref<const std::string&>().empty()) return WrongType(self);
  out.session.present = true;
  out.session.handle = value.get<std::string>();
  out.session.open = out.session.handle == "new";
  return Ok();
}

// environment

json EnvironmentSchema(const config::Config&, const Offer& offer) {
  std::vector<std::string> names = offer.Names();
  if (names.empty()) names.push_back(kDefaultEnvironment);
  return {{"type", "string"},
          {"enum", names},
          {"description", "The image the program runs in, which decides what it can import "
                          "(the description lists each one's packages); default \"" +
                              (offer.environments.empty() ? std::string(kDefaultEnvironment)
                                                          : offer.default_name) +
                              "\". A session keeps the one it was opened in"}};
}

Result<void> ReadEnvironmentArg(const ArgumentSpec& self, const json& value, ExecArguments& out) {
  if (!value.is_string() || value.get_ref<const std::string&>().empty()) return WrongType(self);
  out.environment = value.get<std::string>();
  return Ok();
}

// packages

json PackagesSchema(const config::Config& c, const Offer&) {
  json schema = {{"type", "array"}, {"items", {{"type", "string"}}}};
  if (c.wheelhouse.empty() && c.package_index.empty()) {
    schema["description"] = "Off on this server (the operator has set no package source)";
  } else {
    schema["maxItems"] = c.max_packages;
    schema["description"] =
        "Python packages to add to the environment for this run (or the session it opens): "
        "requirements such as \"tabulate\" or \"python-dateutil==2.8.2\", no URLs. They come "
        "from the operator's package source, wheels only, and are installed outside the sandbox; "
        "the run still has no network. The first call for a set installs it (seconds), later "
        "ones reuse it; the result's packages field lists what was added";
  }
  return schema;
}

Result<void> ReadPackages(const ArgumentSpec& self, const json& value, ExecArguments& out) {
  if (!value.is_array()) return WrongType(self);
  for (const json& item : value) {
    if (!item.is_string()) return WrongType(self);
    out.packages.push_back(item.get<std::string>());
  }
  return Ok();
}

const std::array<ArgumentSpec, 7> kArguments = {{
    {"code", true, "must be a string", CodeSchema, ReadCode, CheckCode, nullptr},
    {"timeout_s", false, "must be a whole number of seconds", TimeoutSchema, ReadTimeout, nullptr,
     TimeoutBound},
    {"stdin", false, "must be a string", StdinSchema, ReadStdin, CheckStdin, StdinBound},
    // ParseInputFiles words a value of the wrong type, and each entry's faults.
    {"files", false, nullptr, FilesSchema, ReadFiles, CheckFiles, FilesBound},
    {"session", false, "must be \"new\" or a handle an earlier call returned", SessionSchema,
     ReadSession, nullptr, nullptr},
    // Whether the server offers it is the tool's check (ExecTool::Call): the offer is not the
    // configuration's.
    {"environment", false, "must be the name of an offered environment", EnvironmentSchema,
     ReadEnvironmentArg, nullptr, nullptr},
    // Whether packages are on, and each requirement, are the tool's checks (ExecTool::Call).
    {"packages", false, "must be an array of requirement strings, as [\"tabulate\"]",
     PackagesSchema, ReadPackages, nullptr, nullptr},
}};

const ArgumentSpec* Find(std::string_view name) {
  for (const ArgumentSpec& a : kArguments) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

std::string Names() {
  std::string names;
  for (const ArgumentSpec& a : kArguments) names += std::string(names.empty() ? "" : ", ") + a.name;
  return names;
}

}  // namespace

std::span<const ArgumentSpec> Arguments() { return kArguments; }

std::string ArgumentBound(const char* name, const config::Config& config) {
  const ArgumentSpec* a = Find(name);
  return a != nullptr && a->bound != nullptr ? a->bound(config) : "";
}

json InputSchema(const config::Config& config, const Offer& offer) {
  json properties = json::object();
  json required = json::array();
  for (const ArgumentSpec& a : kArguments) {
    properties[a.name] = a.schema(config, offer);
    if (a.required) required.push_back(a.name);
  }
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

Result<ExecArguments> ReadArguments(const json& arguments) {
  // The server checks this too, but a tool must answer every input with a result.
  if (!arguments.is_object()) return Invalid("arguments must be an object");
  ExecArguments out;
  for (const ArgumentSpec& a : kArguments) {
    const auto it = arguments.find(a.name);
    if (it == arguments.end() || it->is_null()) {
      if (a.required) return Invalid(std::string(a.name) + " is required");
      continue;
    }
    MCPEXEC_RETURN_IF_ERROR(a.read(a, *it, out));
  }
  for (const auto& [key, value] : arguments.items()) {
    if (Find(key) == nullptr) {
      return Invalid("unknown argument '" + key + "' (exec takes " + Names() + ")");
    }
  }
  return out;
}

Result<ValidRequest> ValidateRequest(const config::Config& config, ExecRequest request) {
  for (const ArgumentSpec& a : kArguments) {
    if (a.check != nullptr) MCPEXEC_RETURN_IF_ERROR(a.check(config, request));
  }
  return ValidRequest(std::move(request));
}

std::string ByteCount(uint64_t n) {
  if (n % (1u << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n % (1u << 10) == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

}  // namespace mcpexec::exec
