// Files in and out of `exec` as the tool contract has them: the `files` argument checked
// against the configuration, and what /tmp/outputs held, reported and shaped as MCP content.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "config/config.h"
#include "sandbox/workspace_files.h"

namespace mcpexec::exec {

// Parses the `files` argument: an array of {path, content, encoding}, encoding "utf-8" (the
// default) or "base64". Messages name the entry: `files[2] ("data/x.bin"): ...`. The paths are
// ValidateInputFiles's to check, as for files that came another way (`run --input`).
Result<std::vector<sandbox::InputFile>> ParseInputFiles(const nlohmann::json& files);

// The configured limits (MCP_EXEC_MAX_INPUT_FILES, MCP_EXEC_MAX_INPUT_FILE_BYTES, the workspace)
// and the paths: each valid and named once.
Result<void> ValidateInputFiles(const config::Config& config,
                                const std::vector<sandbox::InputFile>& files);

sandbox::OutputLimits OutputLimitsFor(const config::Config& config);

// "image/png", "image/jpeg", "image/gif" or "image/webp" from the first bytes, else "".
std::string ImageMimeType(std::string_view data);

// The MIME type of an output file: an image type from its bytes when it was read, else from its
// name's extension; text/plain for other UTF-8 text and application/octet-stream for the rest.
std::string MimeTypeOf(std::string_view path, const sandbox::OutputFile& file);

// mcp-exec:///tmp/outputs/<path>, percent-encoded: the uri of a returned resource.
std::string OutputUri(std::string_view path);

// One entry of the result's `files`.
struct FileReport {
  std::string path;  // relative to /tmp/outputs, made valid UTF-8
  uint64_t size = 0;
  std::string mime_type;  // "" for what is not a regular file
  bool returned = false;
  std::string reason;  // why not returned
};

// Every listed output, not yet returned: skipped ones with the reason, read ones with
// `pending_reason` until a delivery returns them.
std::vector<FileReport> ReportOutputs(const config::Config& config,
                                      const sandbox::OutputCollection& outputs,
                                      const std::string& pending_reason);

// The `files` array, and `files_not_listed` / `files_walk_incomplete` when they apply.
void AddFilesJson(const std::vector<FileReport>& reports, const sandbox::OutputCollection& outputs,
                  nlohmann::json& result);

// The reason a read file was not returned over MCP: the result would have grown too large.
std::string ResultCapReason(const config::Config& config);

// MCP content for each read file, in order, while their serialized size fits in `budget`
// bytes: images as `image` items, the rest as embedded `resource` items (text when valid UTF-8
// without NUL, a base64 blob otherwise). Marks those returned in `reports`.
nlohmann::json OutputContent(const sandbox::OutputCollection& outputs,
                             std::vector<FileReport>& reports, size_t budget);

}  // namespace mcpexec::exec
