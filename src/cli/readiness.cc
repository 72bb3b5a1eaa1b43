#include "cli/readiness.h"

#include <sys/stat.h>

#include <cerrno>
#include <string_view>

#include "base/result.h"

namespace mcpexec::cli {
namespace {

std::string Missing(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + ErrnoName(errno);
}

// lstat: the interpreter is usually a symlink whose target is only right inside the sandbox.
std::string RootfsProblem(const sandbox::LaunchPlan& plan) {
  const std::string& rootfs = plan.Spec().rootfs;
  struct stat st;
  if (stat(rootfs.c_str(), &st) != 0) return Missing("rootfs", rootfs);
  if (!S_ISDIR(st.st_mode)) return "rootfs " + rootfs + " is not a directory";
  const std::string python = rootfs + plan.ExecPath();
  if (lstat(python.c_str(), &st) != 0) return Missing("interpreter", python);
  return {};
}

}  // namespace

std::vector<mcp::NotReady> JudgeReadiness(const ReadinessFacts& facts) {
  std::vector<mcp::NotReady> failing;
  if (!facts.rootfs_problem.empty()) failing.push_back({"rootfs", facts.rootfs_problem});
  if (!facts.limits_problem.empty()) failing.push_back({"limits", facts.limits_problem});
  const engine::EngineState& e = facts.engine;
  const bool cold = std::string_view(e.name) == "cold";
  if (!cold && e.ready == 0 && !(e.zygote && e.zygote_alive)) {
    failing.push_back({"engine", e.zygote ? "no sandbox ready and no live zygote"
                                          : std::string("no sandbox ready in the ") + e.name});
  }
  return failing;
}

ReadinessFacts GatherReadiness(const sandbox::LaunchPlan& plan, const engine::Engine& engine) {
  ReadinessFacts facts;
  facts.rootfs_problem = RootfsProblem(plan);
  if (Result<void> usable = plan.Limits().CheckUsable(); !usable.ok()) {
    facts.limits_problem = usable.error().message;
  }
  facts.engine = engine.State();
  return facts;
}

}  // namespace mcpexec::cli
