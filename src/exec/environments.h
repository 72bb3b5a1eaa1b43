// Environments (docs/environments.md): the read-only images a call chooses among. "default" is
// the configured rootfs; every other environment NAME is the image EnvironmentsDir()/NAME. Each
// image says what it is in /usr/share/mcp-exec/environment/: name, hash, packages.json,
// preload.txt and env.txt. This module finds the images a server offers and reads that; it
// starts nothing (environment_engines.h does).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "config/config.h"

namespace mcpexec::exec {

inline constexpr const char* kDefaultEnvironment = "default";
// Inside an image.
inline constexpr const char* kEnvironmentMetadataDir = "/usr/share/mcp-exec/environment";

// An importable top-level package of an image, as packages.json lists it.
struct Package {
  std::string name;
  std::string version;
  bool operator==(const Package&) const = default;
};

// An environment as its image describes it.
struct Environment {
  std::string name;
  std::string image;                 // the host directory of its rootfs
  bool has_metadata = false;         // false only for "default" built before images had it
  std::string hash;                  // the recipe's hash; "" without metadata
  std::vector<Package> packages;     // importable top-level packages; empty without metadata
  std::vector<std::string> preload;  // modules a warm interpreter imports first
  std::vector<std::string> env;      // KEY=VALUE added to the program's environment
};

// The environments a server offers, in the order it lists them, and the one a call gets when it
// names none.
struct Offer {
  std::vector<Environment> environments;
  std::string default_name = kDefaultEnvironment;

  // The environment `name`, or nullptr when it is not offered.
  const Environment* Find(const std::string& name) const;
  std::vector<std::string> Names() const;
  // "default, data": for messages.
  std::string NameList() const;
};

// The directory of the images other than "default": MCP_EXEC_ENVIRONMENTS_DIR, or else
// `environments` beside the rootfs as configured, its symlinks unresolved (build/rootfs ->
// build/environments; /var/lib/mcp-exec/rootfs -> /var/lib/mcp-exec/environments).
std::string EnvironmentsDir(const config::Config& config);

// packages.json: a JSON array of {"name", "version"} objects, both non-empty strings.
Result<std::vector<Package>> ParsePackages(const std::string& text);
// preload.txt: one dotted module name a line; blank lines and `#` comments ignored.
Result<std::vector<std::string>> ParsePreload(const std::string& text);
// env.txt: KEY=VALUE lines, each acceptable to the sandbox (sandbox::ExtraEnvProblem); blank
// lines and `#` comments ignored.
Result<std::vector<std::string>> ParseEnvFile(const std::string& text);

// Reads the image `image` of the environment `name`. "default" keeps config.preload, and an
// image of it without the metadata directory is fine (no package list); any other environment
// needs its metadata, whose `name` must be `name`. kNotFound when the image or its metadata is
// missing; kInvalidArgument when the metadata is unreadable or malformed. Messages name the file.
Result<Environment> ReadEnvironment(const std::string& name, const std::string& image,
                                    const config::Config& config);

// The image of the environment `name`: the configured rootfs for "default", else
// EnvironmentsDir()/NAME.
std::string EnvironmentImage(const config::Config& config, const std::string& name);

// The environments this configuration offers: MCP_EXEC_ENVIRONMENTS, or "default" and every
// image in EnvironmentsDir(). An environment other than "default" whose image is missing or
// invalid is left out, with a warning in `warnings` naming the image and the fix; an error when
// that leaves MCP_EXEC_DEFAULT_ENVIRONMENT unoffered, or "default"'s metadata is malformed.
Result<Offer> DiscoverEnvironments(const config::Config& config,
                                   std::vector<std::string>& warnings);
// DiscoverEnvironments without its check that MCP_EXEC_DEFAULT_ENVIRONMENT is offered: for
// `mcp-exec run --environment NAME`, which needs only the one it names. An error only when
// "default"'s metadata is malformed.
Result<Offer> FindEnvironments(const config::Config& config, std::vector<std::string>& warnings);

// The fix for an environment whose image is missing or invalid.
std::string BuildFix(const std::string& name);

}  // namespace mcpexec::exec
