#include "exec/files.h"

#include <set>

#include "base/base64.h"
#include "base/utf8.h"

namespace mcpexec::exec {
namespace {

using nlohmann::json;

std::string Entry(size_t index, const json& path) {
  std::string name = "files[" + std::to_string(index) + "]";
  if (path.is_string()) name += " (" + json(RepairUtf8(path.get<std::string>())).dump() + ")";
  return name;
}

Error Invalid(const std::string& entry, const std::string& why) {
  return MakeError(ErrorCode::kInvalidArgument, entry + ": " + why);
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// By extension. Image types are left out: those come from the bytes, so that a file named
// .png that is not one is not announced as an image.
std::string MimeFromName(std::string_view path) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".csv", "text/csv"},           {".tsv", "text/tab-separated-values"},
      {".json", "application/json"},  {".jsonl", "application/jsonl"},
      {".txt", "text/plain"},         {".md", "text/markdown"},
      {".html", "text/html"},         {".htm", "text/html"},
      {".xml", "application/xml"},    {".svg", "image/svg+xml"},
      {".py", "text/x-python"},       {".yaml", "application/yaml"},
      {".yml", "application/yaml"},   {".pdf", "application/pdf"},
      {".zip", "application/zip"},    {".gz", "application/gzip"},
      {".parquet", "application/vnd.apache.parquet"},
  };
  const std::string lower = Lower(path);
  for (const auto& [ext, type] : kTypes) {
    if (EndsWith(lower, ext)) return type;
  }
  return "";
}

bool IsText(std::string_view data) {
  return data.find('\0') == std::string_view::npos && RepairUtf8(data) == data;
}

std::string SkipReason(const config::Config& c, const sandbox::OutputFile& f,
                       const sandbox::OutputLimits& limits) {
  switch (f.skip) {
    case sandbox::OutputSkip::kNone: return "";
    case sandbox::OutputSkip::kNotRegular: return "not a regular file (" + f.type + ")";
    case sandbox::OutputSkip::kTooLarge:
      return "larger than MCP_EXEC_MAX_OUTPUT_FILE_BYTES (" +
             std::to_string(c.max_output_file_bytes) + " bytes)";
    case sandbox::OutputSkip::kTooMany:
      return "past MCP_EXEC_MAX_OUTPUT_FILES (" + std::to_string(c.max_output_files) + ")";
    case sandbox::OutputSkip::kUnreadable: return "unreadable: its mode, or a lease on it, keeps the server out";
    case sandbox::OutputSkip::kChanged:
      return "changed while the server read it: a link, another kind of file or nothing took "
             "its place";
    case sandbox::OutputSkip::kTooDeep:
      return "a directory deeper than " + std::to_string(limits.max_depth) + " levels";
  }
  return "";
}

}  // namespace

Result<std::vector<sandbox::InputFile>> ParseInputFiles(const json& files) {
  if (!files.is_array()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "files must be an array of {path, content, encoding}");
  }
  std::vector<sandbox::InputFile> out;
  out.reserve(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const json& f = files[i];
    if (!f.is_object()) return Invalid(Entry(i, json()), "must be an object {path, content, encoding}");
    const json path = f.value("path", json());
    const std::string entry = Entry(i, path);
    for (const auto& [key, value] : f.items()) {
      if (key != "path" && key != "content" && key != "encoding") {
        return Invalid(entry, "unknown field '" + key + "' (a file has path, content, encoding)");
      }
    }
    if (!path.is_string()) return Invalid(entry, "path is required and must be a string");
    const json content = f.value("content", json());
    if (!content.is_string()) return Invalid(entry, "content is required and must be a string");
    const json encoding = f.value("encoding", json("utf-8"));
    if (encoding != "utf-8" && encoding != "base64") {
      return Invalid(entry, "encoding must be \"utf-8\" (the default) or \"base64\"");
    }
    sandbox::InputFile file{path.get<std::string>(), {}};
    if (encoding == "base64") {
      auto bytes = Base64Decode(content.get_ref<const std::string&>());
      if (!bytes) return Invalid(entry, "content is not valid base64 (RFC 4648, with padding)");
      file.content = std::move(*bytes);
    } else {
      file.content = content.get<std::string>();
    }
    out.push_back(std::move(file));
  }
  return out;
}

Result<void> ValidateInputFiles(const config::Config& c,
                                const std::vector<sandbox::InputFile>& files) {
  if (files.size() > c.max_input_files) {
    return MakeError(ErrorCode::kInvalidArgument,
                     std::to_string(files.size()) + " input files, over the limit of " +
                         std::to_string(c.max_input_files) + " (MCP_EXEC_MAX_INPUT_FILES)");
  }
  std::set<std::string_view> paths;
  uint64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const sandbox::InputFile& f = files[i];
    const std::string entry = Entry(i, json(f.path));
    if (std::string problem = sandbox::WorkspacePathProblem(f.path); !problem.empty()) {
      return Invalid(entry, problem);
    }
    if (!paths.insert(f.path).second) return Invalid(entry, "the path is given twice");
    if (f.content.size() > c.max_input_file_bytes) {
      return Invalid(entry, std::to_string(f.content.size()) + " bytes, over the limit of " +
                                std::to_string(c.max_input_file_bytes) +
                                " (MCP_EXEC_MAX_INPUT_FILE_BYTES)");
    }
    total += f.content.size();
  }
  if (total > c.workspace_bytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the input files hold " + std::to_string(total) +
                         " bytes, more than the workspace's " + std::to_string(c.workspace_bytes) +
                         " (MCP_EXEC_WORKSPACE_BYTES)");
  }
  // A file and a directory of the same name ("a" and "a/b") cannot both be made.
  for (const std::string_view p : paths) {
    for (size_t slash = p.find('/'); slash != std::string_view::npos;
         slash = p.find('/', slash + 1)) {
      if (paths.count(p.substr(0, slash)) != 0) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "input file " + json(RepairUtf8(p.substr(0, slash))).dump() +
                             " is also a directory of " + json(RepairUtf8(p)).dump());
      }
    }
  }
  return Ok();
}

sandbox::OutputLimits OutputLimitsFor(const config::Config& c) {
  sandbox::OutputLimits limits;
  limits.max_files = c.max_output_files;
  limits.max_file_bytes = c.max_output_file_bytes;
  return limits;
}

std::string ImageMimeType(std::string_view d) {
  if (d.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8)) return "image/png";
  if (d.substr(0, 3) == "\xff\xd8\xff") return "image/jpeg";
  if (d.substr(0, 6) == "GIF87a" || d.substr(0, 6) == "GIF89a") return "image/gif";
  if (d.size() >= 12 && d.substr(0, 4) == "RIFF" && d.substr(8, 4) == "WEBP") return "image/webp";
  return "";
}

std::string MimeTypeOf(std::string_view path, const sandbox::OutputFile& file) {
  if (file.type != "file") return "";
  const bool read = file.skip == sandbox::OutputSkip::kNone;
  if (read) {
    if (std::string image = ImageMimeType(file.data); !image.empty()) return image;
  }
  if (std::string by_name = MimeFromName(path); !by_name.empty()) return by_name;
  if (!read) return "application/octet-stream";
  return IsText(file.data) ? "text/plain" : "application/octet-stream";
}

std::string OutputUri(std::string_view path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string uri = "mcp-exec:///tmp/" + std::string(sandbox::kOutputsDir) + "/";
  for (const char ch : path) {
    const auto u = static_cast<unsigned char>(ch);
    const bool plain = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
                       u == '-' || u == '.' || u == '_' || u == '~' || u == '/';
    if (plain) {
      uri += ch;
    } else {
      uri += '%';
      uri += kHex[u >> 4];
      uri += kHex[u & 15];
    }
  }
  return uri;
}

std::vector<FileReport> ReportOutputs(const config::Config& c,
                                      const sandbox::OutputCollection& outputs,
                                      const std::string& pending_reason) {
  const sandbox::OutputLimits limits = OutputLimitsFor(c);
  std::vector<FileReport> reports;
  reports.reserve(outputs.files.size());
  for (const sandbox::OutputFile& f : outputs.files) {
    FileReport r;
    r.path = RepairUtf8(f.path);
    r.size = f.size;
    r.mime_type = MimeTypeOf(f.path, f);
    r.reason = f.skip == sandbox::OutputSkip::kNone ? pending_reason : SkipReason(c, f, limits);
    reports.push_back(std::move(r));
  }
  return reports;
}

void AddFilesJson(const std::vector<FileReport>& reports, const sandbox::OutputCollection& outputs,
                  json& result) {
  json files = json::array();
  for (const FileReport& r : reports) {
    files.push_back({{"path", r.path},
                     {"size", r.size},
                     {"mime_type", r.mime_type.empty() ? json() : json(r.mime_type)},
                     {"returned", r.returned},
                     {"reason", r.returned ? json() : json(r.reason)}});
  }
  result["files"] = std::move(files);
  if (outputs.unlisted > 0) result["files_not_listed"] = outputs.unlisted;
  if (outputs.walk_incomplete) result["files_walk_incomplete"] = true;
}

std::string ResultCapReason(const config::Config& c) {
  return "the result would pass MCP_EXEC_MAX_RESULT_BYTES (" + std::to_string(c.max_result_bytes) +
         " bytes)";
}

json OutputContent(const sandbox::OutputCollection& outputs, std::vector<FileReport>& reports,
                   size_t budget) {
  json items = json::array();
  for (size_t i = 0; i < outputs.files.size() && i < reports.size(); ++i) {
    const sandbox::OutputFile& f = outputs.files[i];
    if (f.skip != sandbox::OutputSkip::kNone) continue;
    FileReport& r = reports[i];
    // Sizes first: an item is built only when it can fit.
    // By the bytes: an .svg is image/svg+xml by name, and text.
    const bool image = !ImageMimeType(f.data).empty();
    const bool text = !image && IsText(f.data);
    const size_t estimate = text ? f.data.size() : Base64Length(f.data.size());
    if (estimate > budget) continue;
    json item;
    if (image) {
      item = {{"type", "image"}, {"data", Base64Encode(f.data)}, {"mimeType", r.mime_type}};
    } else {
      json resource = {{"uri", OutputUri(f.path)}, {"mimeType", r.mime_type}};
      if (text) {
        resource["text"] = f.data;
      } else {
        resource["blob"] = Base64Encode(f.data);
      }
      item = {{"type", "resource"}, {"resource", std::move(resource)}};
    }
    // The text content repeats the structured result, not the files: one copy each.
    const size_t size = item.dump().size() + 1;
    if (size > budget) continue;
    budget -= size;
    items.push_back(std::move(item));
    r.returned = true;
    r.reason.clear();
  }
  return items;
}

}  // namespace mcpexec::exec
