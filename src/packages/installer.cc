#include "packages/installer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/call_steps.h"
#include "base/unique_fd.h"
#include "engine/engine.h"
#include "packages/digest.h"
#include "packages/index_channel.h"
#include "packages/layer_tree.h"
#include "sandbox/plan.h"

namespace mcpexec::packages {

// tools/embed-bytes of src/packages/installer_driver.py.
extern const unsigned char kInstallerDriver[];
extern const size_t kInstallerDriverSize;

namespace {

using nlohmann::json;

// pip's temporary files and the wheels' bytecode need room beside the layer itself.
constexpr uint64_t kInstallerSlackBytes = 64ull << 20;
constexpr size_t kDriverAnswerBytes = 1 << 20;

bool PlainName(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max || s.front() == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' ||
           c == '-' || c == '+' || c == '!';
  });
}

std::string Tail(const std::string& text, size_t n) {
  return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

// The driver's answer, checked: it ran beside pip and the wheels, so none of it is trusted but
// as far as it is checked here. Each wheel's sha256 is the supervisor's own: of the wheelhouse's
// file (`wheelhouse_fd`), or the one the channel checked against the index when it served it.
Result<std::vector<Installed>> ReadAnswer(const std::string& out, int wheelhouse_fd,
                                          const IndexChannel* channel,
                                          const InstallerOptions& options) {
  const json answer = json::parse(out, nullptr, false);
  if (!answer.is_object()) {
    return MakeError(ErrorCode::kInternal, "the package installer gave no answer");
  }
  if (answer.contains("error")) {
    const std::string error = answer["error"].is_string() ? answer["error"].get<std::string>()
                                                          : std::string("(unreadable)");
    return MakeError(ErrorCode::kInvalidArgument, Tail(error, 4000));
  }
  if (!answer.contains("packages") || !answer["packages"].is_array() ||
      answer["packages"].size() > options.max_packages) {
    return MakeError(ErrorCode::kInternal, "the package installer's answer is malformed");
  }
  std::vector<Installed> installed;
  for (const json& item : answer["packages"]) {
    if (!item.is_object()) return MakeError(ErrorCode::kInternal, "malformed installer answer");
    auto field = [&item](const char* key, size_t max, std::string& out) -> Result<void> {
      if (!item.contains(key) || !item[key].is_string()) {
        return MakeError(ErrorCode::kInternal, "malformed installer answer");
      }
      out = item[key].get<std::string>();
      if (!PlainName(out, max)) {
        return MakeError(ErrorCode::kInternal, "the package installer named \"" +
                                                   Tail(out, 80) + "\", which is not plain");
      }
      return Ok();
    };
    Installed one;
    MCPEXEC_RETURN_IF_ERROR(field("name", 200, one.name));
    MCPEXEC_RETURN_IF_ERROR(field("version", 100, one.version));
    MCPEXEC_RETURN_IF_ERROR(field("file", 250, one.file));
    if (one.file.size() < 5 || one.file.substr(one.file.size() - 4) != ".whl") {
      return MakeError(ErrorCode::kInvalidArgument,
                       "\"" + one.name + "\" (" + one.file + ") is not a wheel: mcp-exec "
                       "installs wheels only");
    }
    if (channel != nullptr) {
      one.sha256 = channel->Verified(one.file);
      if (one.sha256.empty()) {
        return MakeError(ErrorCode::kInternal, "the package installer named " + one.file +
                                                   ", which the index's channel did not serve");
      }
    } else {
      MCPEXEC_ASSIGN_OR_RETURN(one.sha256, Sha256OfFile(wheelhouse_fd, one.file));
    }
    installed.push_back(std::move(one));
  }
  std::sort(installed.begin(), installed.end(),
            [](const Installed& a, const Installed& b) { return a.name < b.name; });
  return installed;
}

// What the installer's run came to: the resolved set, or why there is none.
Result<std::vector<Installed>> ResolvedSet(const sandbox::RunResult& run,
                                            const InstallerOptions& options, int wheelhouse_fd,
                                            const IndexChannel* channel) {
  switch (run.outcome) {
    case sandbox::Outcome::kTimedOut:
      return MakeError(ErrorCode::kDeadlineExceeded,
                       "installing the packages took longer than "
                       "MCP_EXEC_PACKAGE_INSTALL_TIMEOUT_S (" +
                           std::to_string(options.timeout.count()) + " s)");
    case sandbox::Outcome::kCancelled:
      return MakeError(ErrorCode::kUnavailable, "cancelled while the packages were installed");
    default: break;
  }
  if (run.outcome == sandbox::Outcome::kOomKilled || run.oom_killed) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the package installer ran out of memory (MCP_EXEC_MEMORY_MAX): the "
                     "packages are too large for this server");
  }
  if (run.outcome != sandbox::Outcome::kExited || run.exit_code != 0 || run.truncated) {
    return MakeError(ErrorCode::kInternal,
                     "the package installer failed (" + std::string(OutcomeName(run.outcome)) +
                         ", exit " + std::to_string(run.exit_code) +
                         "): " + Tail(run.stderr_data, 2000));
  }
  return ReadAnswer(run.stdout_data, wheelhouse_fd, channel, options);
}

// An error with what the channel saw go wrong with the index, which is often its cause (pip
// sees only a 502).
Result<std::vector<Installed>> WithProblems(Result<std::vector<Installed>> result,
                                            const IndexChannel* channel) {
  if (result.ok() || channel == nullptr) return result;
  // The channel's words first: pip saw only their consequence (a 502, no such project).
  Error error = result.error();
  std::string problems;
  for (const std::string& problem : channel->Problems()) problems += problem + "\n";
  error.message = problems + error.message;
  return error;
}

}  // namespace

Result<Installation> Install(const sandbox::SandboxSpec& base,
                             std::shared_ptr<limits::LimitsBackend> backend,
                             const InstallerOptions& options,
                             const std::vector<Requirement>& requirements,
                             const std::string& staging, const InstallerHooks& hooks) {
  sandbox::SandboxSpec spec = base;
  spec.warm = false;
  spec.zygote = false;
  spec.preload.clear();
  spec.workspace_bytes = options.max_bytes + kInstallerSlackBytes;
  json request = {{"max_packages", options.max_packages},
                  {"max_bytes", options.max_bytes},
                  {"max_metadata_bytes", kMaxMetadataBytes},
                  {"timeout", options.timeout.count()},
                  {"requirements", json::array()}};
  UniqueFd wheelhouse;
  std::unique_ptr<IndexChannel> channel;
  const std::string channel_dir = staging + "/channel";
  struct RemoveChannelDir {
    const std::string& dir;
    ~RemoveChannelDir() { (void)RemoveTree(dir); }
  } remove_channel_dir{channel_dir};
  if (options.index != nullptr) {
    if (mkdir(channel_dir.c_str(), 0755) != 0) {
      return Errno(ErrorCode::kInternal, "mkdir " + channel_dir);
    }
    MCPEXEC_ASSIGN_OR_RETURN(channel, IndexChannel::Open(channel_dir, *options.index,
                                                         options.downloads, options.allow,
                                                         options.max_bytes));
    // The wheels come into the workspace before they are unpacked beside them.
    spec.workspace_bytes += options.max_bytes;
    spec.read_only_binds = {{options.pip_dir, kInstallerPipMount},
                            {channel_dir, kWheelhouseMount}};
    request["index"] = true;
  } else {
    wheelhouse = UniqueFd(open(options.wheelhouse.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!wheelhouse.Valid()) {
      return Errno(ErrorCode::kUnavailable, "open the wheelhouse " + options.wheelhouse);
    }
    spec.read_only_binds = {{options.pip_dir, kInstallerPipMount},
                            {options.wheelhouse, kWheelhouseMount}};
  }
  MCPEXEC_ASSIGN_OR_RETURN(auto plan, sandbox::Compile(spec, std::move(backend)));

  for (const Requirement& r : requirements) request["requirements"].push_back(r.text);
  sandbox::Program program;
  program.code.assign(reinterpret_cast<const char*>(kInstallerDriver), kInstallerDriverSize);
  program.stdin_data = request.dump();
  sandbox::RunLimits limits;
  limits.timeout = options.timeout;
  limits.max_output_bytes = kDriverAnswerBytes;
  limits.outputs.max_files = kMaxLayerFiles;
  limits.outputs.max_file_bytes = options.max_bytes;
  limits.outputs.max_listed = kMaxLayerFiles + 1;
  limits.outputs.max_entries = 2 * kMaxLayerFiles;
  limits.outputs.max_depth = 32;
  sandbox::RunHooks run_hooks;
  run_hooks.cancel_fd = hooks.cancel_fd;
  run_hooks.progress_interval = std::chrono::milliseconds(500);
  if (hooks.on_progress) {
    run_hooks.on_progress = [&hooks](std::chrono::milliseconds elapsed, size_t) {
      hooks.on_progress(elapsed);
    };
  }
  Result<sandbox::RunResult> ran = [&] {
    // The installer's sandbox is not the call's: its steps are not the call's steps.
    const CallStepsScope not_the_calls(nullptr);
    return engine::MakeColdEngine(plan)->Run(program, limits, run_hooks);
  }();
  // The sandbox is gone: a transfer the channel still makes for it ends now, and says so.
  if (channel) channel->Stop();
  MCPEXEC_ASSIGN_OR_RETURN(sandbox::RunResult run, std::move(ran));
  MCPEXEC_ASSIGN_OR_RETURN(std::vector<Installed> installed,
                           WithProblems(ResolvedSet(run, options, wheelhouse.Get(), channel.get()),
                                        channel.get()));
  Installation installation{std::move(installed)};
  if (!installation.packages.empty()) {
    const std::string site = staging + "/site";
    if (mkdir(site.c_str(), 0755) != 0) return Errno(ErrorCode::kInternal, "mkdir " + site);
    MCPEXEC_ASSIGN_OR_RETURN(installation.bytes, WriteLayerTree(run.outputs, "site", site));
  }
  return installation;
}

}  // namespace mcpexec::packages
