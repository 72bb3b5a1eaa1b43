#include "cli/env_command.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "config/config.h"

namespace mcpexec::cli {
namespace {

using nlohmann::json;

// The bytes a tree takes on disk, each hard-linked file once (as du counts it), without
// crossing into another filesystem.
std::set<std::pair<dev_t, ino_t>>* g_seen = nullptr;
uint64_t g_bytes = 0;

int AddOne(const char*, const struct stat* st, int type, FTW*) {
  if (type == FTW_NS) return 0;
  if (st->st_nlink > 1 && !S_ISDIR(st->st_mode) &&
      !g_seen->insert({st->st_dev, st->st_ino}).second) {
    return 0;
  }
  g_bytes += static_cast<uint64_t>(st->st_blocks) * 512;
  return 0;
}

std::optional<uint64_t> DiskBytes(const std::string& tree) {
  std::set<std::pair<dev_t, ino_t>> seen;
  g_seen = &seen;
  g_bytes = 0;
  // The image is usually reached through a symlink (build/environments/NAME): follow that one.
  char resolved[PATH_MAX];
  if (realpath(tree.c_str(), resolved) == nullptr) return std::nullopt;
  const int rc = nftw(resolved, AddOne, 64, FTW_PHYS | FTW_MOUNT);
  g_seen = nullptr;
  if (rc != 0) return std::nullopt;
  return g_bytes;
}

std::string HumanBytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  } else {
    std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  }
  return text;
}

// The environments the rootfs tool has a recipe for (`--list`), one name a line; empty, with a
// note on stderr, when the tool cannot say.
std::vector<std::string> RecipeNames(const std::string& tool) {
  std::vector<std::string> names;
  if (access(tool.c_str(), X_OK) != 0) return names;
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return names;
  const pid_t pid = fork();
  if (pid < 0) {
    close(out[0]);
    close(out[1]);
    return names;
  }
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO);
    execl(tool.c_str(), tool.c_str(), "--list", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return names;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string name = text.substr(start, end - start);
    if (config::IsEnvironmentName(name)) names.push_back(std::move(name));
    start = end + 1;
  }
  return names;
}

json StatusJson(const EnvStatus& s) {
  json j = {{"name", s.name},     {"image", s.image},       {"offered", s.offered},
            {"built", s.built},   {"problem", s.problem},   {"hash", nullptr},
            {"packages", nullptr}, {"disk_bytes", nullptr}};
  if (s.environment) {
    j["hash"] = s.environment->hash.empty() ? json() : json(s.environment->hash);
    j["packages"] = s.environment->has_metadata ? json(s.environment->packages.size()) : json();
  }
  if (s.disk_bytes) j["disk_bytes"] = *s.disk_bytes;
  return j;
}

int List(const config::Config& config, const std::string& tool, bool as_json) {
  const std::vector<EnvStatus> all = GatherEnvStatus(config, RecipeNames(tool));
  if (as_json) {
    json j = json::array();
    for (const EnvStatus& s : all) j.push_back(StatusJson(s));
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("%-12s %-9s %-10s %-16s %8s  %s\n", "NAME", "OFFERED", "SIZE", "HASH", "PACKAGES",
              "IMAGE");
  for (const EnvStatus& s : all) {
    const std::string size = s.disk_bytes ? HumanBytes(*s.disk_bytes) : "-";
    std::string hash = "-", packages = "-";
    if (s.environment && !s.environment->hash.empty()) hash = s.environment->hash.substr(0, 16);
    if (s.environment && s.environment->has_metadata) {
      packages = std::to_string(s.environment->packages.size());
    }
    std::printf("%-12s %-9s %-10s %-16s %8s  %s\n", s.name.c_str(), s.offered ? "yes" : "no",
                size.c_str(), hash.c_str(), packages.c_str(), s.image.c_str());
    if (!s.problem.empty()) std::printf("  %s\n", s.problem.c_str());
  }
  return 0;
}

int Show(const config::Config& config, const std::string& name, bool as_json) {
  auto env = exec::ReadEnvironment(name, exec::EnvironmentImage(config, name), config);
  if (!env.ok()) {
    std::cerr << "mcp-exec env show: environment \"" << name << "\": " << env.error().message
              << "; " << exec::BuildFix(name) << "\n";
    return 1;
  }
  if (as_json) {
    json packages = json::array();
    for (const exec::Package& p : env->packages) {
      packages.push_back({{"name", p.name}, {"version", p.version}});
    }
    json j = {{"name", env->name},       {"image", env->image},     {"hash", env->hash},
              {"packages", packages},    {"preload", env->preload}, {"env", env->env},
              {"metadata", env->has_metadata}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("environment %s\nimage       %s\n", env->name.c_str(), env->image.c_str());
  if (!env->has_metadata) {
    std::printf("(this image was built before images described themselves: rebuild it with "
                "`mcp-exec env build %s` for its package list)\n",
                name.c_str());
  } else {
    std::printf("hash        %s\n", env->hash.c_str());
  }
  std::string preload;
  for (const std::string& m : env->preload) preload += (preload.empty() ? "" : ", ") + m;
  std::printf("preload     %s\n", preload.empty() ? "-" : preload.c_str());
  for (const std::string& v : env->env) std::printf("env         %s\n", v.c_str());
  if (env->has_metadata) {
    std::printf("packages    %zu\n", env->packages.size());
    for (const exec::Package& p : env->packages) {
      std::printf("  %-24s %s\n", p.name.c_str(), p.version.c_str());
    }
  }
  return 0;
}

// Replaces this process with the rootfs tool, whose output is the build's progress and whose
// exit status is the command's.
int Build(const config::Config& config, const std::string& tool, const std::string& name,
          bool force) {
  const std::string out = exec::EnvironmentImage(config, name);
  std::vector<std::string> args = {tool, "--environment", name, "--out", out};
  if (force) args.push_back("--force");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execv(tool.c_str(), argv.data());
  std::cerr << "mcp-exec env build: cannot run the rootfs tool " << tool << ": "
            << std::strerror(errno)
            << " (in a checkout it is tools/build-rootfs, installed it is mcp-exec-build-rootfs "
               "from the Debian package)\n";
  return 1;
}

}  // namespace

CLI::App* AddEnvCommand(CLI::App& app, EnvOptions& options) {
  CLI::App* env = app.add_subcommand(
      "env", "The environments: the images a call chooses among (docs/environments.md)");
  env->require_subcommand(1);
  env->fallthrough();  // the configuration flags after the subcommand too
  AddConfigFlags(env, Command::kServe, options.config);
  options.list = env->add_subcommand(
      "list", "Each environment a recipe or an image names: offered, size, hash, packages");
  options.list->add_flag("--json", options.json, "one JSON array, an object per environment");
  options.show = env->add_subcommand(
      "show", "What a program in the environment can import, with versions; its preloads");
  options.show->add_option("name", options.name, "the environment")->required();
  options.show->add_flag("--json", options.json, "one JSON object");
  options.build = env->add_subcommand(
      "build", "Build (or find up to date) the environment's image, showing the build's progress");
  options.build->add_option("name", options.name, "the environment")->required();
  options.build->add_flag("--force", options.force, "rebuild even if the image is up to date");
  env->footer("The configuration flags and MCP_EXEC_* variables are those of `serve`, so that "
              "these see what a server with the same settings offers.");
  return env;
}

std::vector<EnvStatus> GatherEnvStatus(const config::Config& config,
                                       const std::vector<std::string>& recipe_names) {
  std::vector<std::string> warnings;
  auto offer = exec::DiscoverEnvironments(config, warnings);
  std::vector<std::string> names = {exec::kDefaultEnvironment};
  auto add = [&names](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  if (offer.ok()) {
    for (const std::string& name : offer->Names()) add(name);
  }
  for (const std::string& name : config.environments) add(name);
  // The images the offer left out (corrupt, malformed) are listed too, with why.
  std::vector<std::string> images;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(exec::EnvironmentsDir(config), ec)) {
    const std::string name = entry.path().filename().string();
    if (config::IsEnvironmentName(name) && entry.is_directory(ec)) images.push_back(name);
  }
  std::sort(images.begin(), images.end());
  for (const std::string& name : images) add(name);
  for (const std::string& name : recipe_names) add(name);
  std::vector<EnvStatus> all;
  for (const std::string& name : names) {
    EnvStatus s;
    s.name = name;
    s.image = exec::EnvironmentImage(config, name);
    s.offered = offer.ok() && offer->Find(name) != nullptr;
    auto env = exec::ReadEnvironment(name, s.image, config);
    if (env.ok()) {
      s.built = true;
      s.environment = std::move(*env);
      s.disk_bytes = DiskBytes(s.image);
      if (!s.offered && !config.environments.empty()) {
        s.problem = "built, not in MCP_EXEC_ENVIRONMENTS";
      }
    } else {
      s.problem = env.error().message + "; " + exec::BuildFix(name);
    }
    if (!offer.ok() && s.problem.empty()) s.problem = offer.error().message;
    all.push_back(std::move(s));
  }
  return all;
}

int EnvCommand(const std::string& default_rootfs, const std::string& build_tool,
               const EnvOptions& options) {
  auto config = ResolveConfig(default_rootfs, config::ProcessEnv(), options.config);
  if (!config.ok()) {
    std::cerr << "mcp-exec env: invalid configuration: " << config.error().message << "\n";
    return 2;
  }
  const bool named = options.show->parsed() || options.build->parsed();
  if (named && !config::IsEnvironmentName(options.name)) {
    std::cerr << "mcp-exec env: \"" << options.name
              << "\" is not an environment name (1 to 32 of a-z, 0-9, _ and -, starting with a "
                 "letter or digit)\n";
    return 2;
  }
  if (options.list->parsed()) return List(*config, build_tool, options.json);
  if (options.show->parsed()) return Show(*config, options.name, options.json);
  return Build(*config, build_tool, options.name, options.force);
}

}  // namespace mcpexec::cli
