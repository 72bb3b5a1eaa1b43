#include "exec/environments.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/sys.h"
#include "sandbox/spec.h"

namespace mcpexec::exec {
namespace {

Error InvalidMetadata(std::string message) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message));
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The lines of a metadata text file that say something: blanks trimmed, `#` comments and empty
// lines left out, each with its 1-based number.
std::vector<std::pair<size_t, std::string>> MeaningfulLines(const std::string& text) {
  std::vector<std::pair<size_t, std::string>> lines;
  size_t start = 0, number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    lines.emplace_back(number, line.substr(first, line.find_last_not_of(" \t") - first + 1));
  }
  return lines;
}

Result<std::string> ReadMetadata(const std::string& dir, const char* file) {
  auto text = ReadFile(dir + "/" + file);
  if (!text.ok()) {
    return InvalidMetadata("cannot read " + dir + "/" + file + ": " + text.error().message);
  }
  return std::move(*text);
}

std::string OneLine(const std::string& text) {
  const auto lines = MeaningfulLines(text);
  return lines.size() == 1 ? lines[0].second : "";
}

// The name of the directory `image` resolves to; "" when it does not resolve.
std::string TreeName(const std::string& image) {
  std::error_code ec;
  const std::filesystem::path tree = std::filesystem::canonical(image, ec);
  return ec ? "" : tree.filename().string();
}

// The recipe hash an image's own directory name states: tools/build-rootfs names its trees
// rootfs-HASH16 ("default") and env-NAME-HASH16, and links build/rootfs and
// build/environments/NAME to them. "" when the image is not such a tree (an operator's own).
std::string HashInImageName(const std::string& image, const std::string& name) {
  const std::string tree = TreeName(image);
  const std::string prefix = name == kDefaultEnvironment ? "rootfs-" : "env-" + name + "-";
  if (!tree.starts_with(prefix) || tree.size() != prefix.size() + 16) return "";
  const std::string hash = tree.substr(prefix.size());
  if (hash.find_first_not_of("0123456789abcdef") != std::string::npos) return "";
  return hash;
}

}  // namespace

const Environment* Offer::Find(const std::string& name) const {
  for (const Environment& e : environments) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::vector<std::string> Offer::Names() const {
  std::vector<std::string> names;
  for (const Environment& e : environments) names.push_back(e.name);
  return names;
}

std::string Offer::NameList() const {
  std::string list;
  for (const Environment& e : environments) list += (list.empty() ? "" : ", ") + e.name;
  return list;
}

std::string EnvironmentsDir(const config::Config& config) {
  if (!config.environments_dir.empty()) return config.environments_dir;
  std::string rootfs = config.rootfs;
  while (rootfs.size() > 1 && rootfs.back() == '/') rootfs.pop_back();
  const size_t slash = rootfs.rfind('/');
  if (slash == std::string::npos) return "environments";
  return rootfs.substr(0, slash + 1) + "environments";
}

std::string BuildFix(const std::string& name) {
  return "build it with `mcp-exec env build " + name + "` (tools/build-rootfs --environment " +
         name + " in a checkout), or leave it out of MCP_EXEC_ENVIRONMENTS";
}

Result<std::vector<Package>> ParsePackages(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return InvalidMetadata("is not a JSON array");
  std::vector<Package> packages;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& p = j[i];
    auto text_of = [&p](const char* key) -> std::string {
      if (!p.is_object() || !p.contains(key) || !p[key].is_string()) return "";
      return p[key].get<std::string>();
    };
    Package package{text_of("name"), text_of("version")};
    if (package.name.empty() || package.version.empty()) {
      return InvalidMetadata("entry " + std::to_string(i) +
                             " is not {\"name\": TEXT, \"version\": TEXT}");
    }
    packages.push_back(std::move(package));
  }
  return packages;
}

Result<std::vector<std::string>> ParsePreload(const std::string& text) {
  std::vector<std::string> modules;
  for (const auto& [number, line] : MeaningfulLines(text)) {
    auto parsed = config::ParseModuleList(line);
    if (!parsed.ok() || parsed->size() != 1) {
      return InvalidMetadata("line " + std::to_string(number) + ": \"" + line +
                             "\" is not one module name (letters, digits, _ and dots)");
    }
    modules.push_back(parsed->front());
  }
  return modules;
}

Result<std::vector<std::string>> ParseEnvFile(const std::string& text) {
  if (text.find('\0') != std::string::npos) return InvalidMetadata("holds a NUL byte");
  std::vector<std::string> vars;
  for (const auto& [number, line] : MeaningfulLines(text)) {
    if (std::string problem = sandbox::ExtraEnvProblem(line); !problem.empty()) {
      return InvalidMetadata("line " + std::to_string(number) + ": " + problem);
    }
    vars.push_back(line);
  }
  return vars;
}

Result<Environment> ReadEnvironment(const std::string& name, const std::string& image,
                                    const config::Config& config) {
  const bool is_default = name == kDefaultEnvironment;
  Environment env;
  env.name = name;
  env.image = image;
  if (is_default) env.preload = config.preload;
  if (!IsDirectory(image)) {
    return MakeError(ErrorCode::kNotFound, "its image " + image + " is not built");
  }
  const std::string dir = image + kEnvironmentMetadataDir;
  if (!IsDirectory(dir)) {
    if (is_default) return env;
    return MakeError(ErrorCode::kNotFound, "its image " + image + " has no " +
                                               kEnvironmentMetadataDir +
                                               " (not an environment image, or built halfway)");
  }
  auto fail = [&](const char* file, const Error& error) {
    return InvalidMetadata("its image's " + std::string(kEnvironmentMetadataDir) + "/" + file +
                           " (in " + image + ") " + error.message);
  };
  MCPEXEC_ASSIGN_OR_RETURN(std::string name_text, ReadMetadata(dir, "name"));
  MCPEXEC_ASSIGN_OR_RETURN(std::string hash_text, ReadMetadata(dir, "hash"));
  MCPEXEC_ASSIGN_OR_RETURN(std::string packages_text, ReadMetadata(dir, "packages.json"));
  MCPEXEC_ASSIGN_OR_RETURN(std::string preload_text, ReadMetadata(dir, "preload.txt"));
  MCPEXEC_ASSIGN_OR_RETURN(std::string env_text, ReadMetadata(dir, "env.txt"));
  // The image of "default" is whatever MCP_EXEC_ROOTFS names, so its own name is not checked.
  if (!is_default && OneLine(name_text) != name) {
    return fail("name",
                InvalidMetadata("says \"" + OneLine(name_text) + "\", not \"" + name + "\""));
  }
  env.hash = OneLine(hash_text);
  if (env.hash.empty()) return fail("hash", InvalidMetadata("is not one line"));
  // A tree whose name and metadata disagree was changed after its build, or copied over: what
  // it holds is not what its recipe made.
  if (const std::string named = HashInImageName(image, name);
      !named.empty() && !env.hash.starts_with(named)) {
    return fail("hash", InvalidMetadata("is " + env.hash.substr(0, 16) +
                                        "…, but the image's tree is " + TreeName(image) +
                                        ": the image is corrupt or was replaced, rebuild it"));
  }
  auto packages = ParsePackages(packages_text);
  if (!packages.ok()) return fail("packages.json", packages.error());
  env.packages = std::move(*packages);
  auto preload = ParsePreload(preload_text);
  if (!preload.ok()) return fail("preload.txt", preload.error());
  // "default" preloads MCP_EXEC_PRELOAD, as before environments.
  if (!is_default) env.preload = std::move(*preload);
  auto vars = ParseEnvFile(env_text);
  if (!vars.ok()) return fail("env.txt", vars.error());
  env.env = std::move(*vars);
  env.has_metadata = true;
  return env;
}

std::string EnvironmentImage(const config::Config& config, const std::string& name) {
  return name == kDefaultEnvironment ? config.rootfs : EnvironmentsDir(config) + "/" + name;
}

Result<Offer> FindEnvironments(const config::Config& config, std::vector<std::string>& warnings) {
  const std::string dir = EnvironmentsDir(config);
  std::vector<std::string> names = config.environments;
  if (names.empty()) {
    names.push_back(kDefaultEnvironment);
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name == kDefaultEnvironment || !IsDirectory(entry.path().string())) continue;
      if (!config::IsEnvironmentName(name)) {
        warnings.push_back("the directory " + entry.path().string() +
                           " is not offered: its name is not an environment name (1 to 32 of "
                           "a-z, 0-9, _ and -)");
        continue;
      }
      found.push_back(name);
    }
    std::sort(found.begin(), found.end());
    names.insert(names.end(), found.begin(), found.end());
  }
  Offer offer;
  offer.default_name = config.default_environment;
  for (const std::string& name : names) {
    const std::string image = EnvironmentImage(config, name);
    auto env = ReadEnvironment(name, image, config);
    if (env.ok()) {
      offer.environments.push_back(std::move(*env));
      continue;
    }
    // The rootfs itself missing is the sandbox's error, with its own fix (Compile); malformed
    // metadata in it is this one's.
    if (name == kDefaultEnvironment && env.error().code != ErrorCode::kNotFound) {
      return MakeError(env.error().code, "the environment \"default\" (MCP_EXEC_ROOTFS): " +
                                             env.error().message +
                                             ": rebuild it with tools/build-rootfs");
    }
    if (name == kDefaultEnvironment) {
      Environment bare;
      bare.name = name;
      bare.image = image;
      bare.preload = config.preload;
      offer.environments.push_back(std::move(bare));
      continue;
    }
    warnings.push_back("the environment \"" + name + "\" is not offered: " + env.error().message +
                       "; " + BuildFix(name));
  }
  return offer;
}

Result<Offer> DiscoverEnvironments(const config::Config& config,
                                   std::vector<std::string>& warnings) {
  MCPEXEC_ASSIGN_OR_RETURN(Offer offer, FindEnvironments(config, warnings));
  if (offer.Find(offer.default_name) == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the default environment \"" + offer.default_name +
                         "\" (MCP_EXEC_DEFAULT_ENVIRONMENT) is not offered" +
                         (offer.environments.empty() ? "" : " (offered: " + offer.NameList() + ")") +
                         ": " + BuildFix(offer.default_name) +
                         ", or choose another with MCP_EXEC_DEFAULT_ENVIRONMENT");
  }
  return offer;
}

}  // namespace mcpexec::exec
