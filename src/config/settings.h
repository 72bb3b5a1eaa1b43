// The table of settings: every MCP_EXEC_* variable once, with its flag, type, default, help and
// the commands that take it. The environment (ApplyEnv), the flags and their --help
// (cli/config_flags.cc), the man page (from --help) and the README's table of settings
// (SettingsMarkdownTable) are all read from it.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace mcpexec::config {

struct Config;

// How a setting's text is read.
enum class SettingType {
  kBytes,       // digits with an optional k, m or g suffix (ParseBytes), at least `min`
  kInt,         // a whole number in [min, max]
  kDecimal,     // a decimal number in [min, max]
  kSwitch,      // "1" on; "0" or "" off; its flag takes no value
  kChoice,      // one of `choices`
  kText,        // anything, the empty text included
  kNonEmpty,    // any text but the empty one (paths, addresses)
  kModuleList,  // comma-separated dotted module names (ParseModuleList)
  kNameList,    // comma-separated environment names (ParseEnvironmentList)
};

// Which commands take a setting's flag (the environment variable is read by every command).
enum class SettingScope {
  kAll,    // run, serve and doctor
  kServe,  // serve only
  // serve only; `run` has an --engine of its own, with these choices but auto and its own
  // default (cli/run_command.cc's RunEngineChoices), since a one-shot run has nothing to keep
  // warm.
  kServeAndRunEngine,
};

// What a setting's text parsed to, for Setting::store.
struct SettingValue {
  uint64_t bytes = 0;
  long long integer = 0;
  double decimal = 0;
  bool on = false;
  size_t choice = 0;  // index into Setting::choices
  std::string text;   // the text itself, for every type
  std::vector<std::string> list;
};

struct Setting {
  std::string_view env = "";   // "MCP_EXEC_MAX_OUTPUT_BYTES"
  std::string_view flag = "";  // "--max-output-bytes"
  SettingType type = SettingType::kText;
  // The text the default parses from; "" for an empty text, a switch that is off, or a value
  // computed at start-up (`computed_default`).
  std::string_view default_text = "";
  // How --help and the README show a default that is not a literal ("CPUs"); "" otherwise.
  std::string_view computed_default = "";
  std::string_view help = "";  // --help's text, without the default or the variable, appended
  std::string_view doc = "";   // the README's meaning (markdown)
  SettingScope scope = SettingScope::kAll;
  double min = 0;  // kInt and kDecimal: the range; kBytes: the least accepted (0: none)
  double max = 0;
  std::string_view choices = "";     // kChoice: "stdio|http|sse", in the order of its enum
  std::string_view min_reason = "";  // kBytes with a min: why ("or Python cannot start")
  void (*store)(Config&, const SettingValue&) = nullptr;
};

// Every setting, in the order the README and --help list them.
std::span<const Setting> Settings();

// The setting of a variable, or nullptr.
const Setting* FindSetting(std::string_view env);

// Parses `text` as `setting` says and stores it into `config`. The error names the variable and
// what it accepts: "MCP_EXEC_CPUS: '0' is not a decimal number in [0.01, 1024]".
Result<void> ApplySetting(const Setting& setting, const std::string& text, Config& config);

// The choices of a kChoice setting, in order.
std::vector<std::string> SettingChoices(const Setting& setting);

// The default as --help and the README show it ("1m", "CPUs"), or "" when there is none to show
// (an empty text, a switch).
std::string ShownDefault(const Setting& setting);

// The flag's --help text: the help, then "(default X)" when there is one, then "(VAR)" (or
// "(VAR=1)" for a switch), which tools/cli_help.py reads back for the man page and completion.
std::string FlagHelp(const Setting& setting);

// The README's table of settings, in markdown, between and excluding its markers.
std::string SettingsMarkdownTable();

// The README's markers around that table.
inline constexpr std::string_view kReadmeTableBegin = "<!-- settings:begin -->";
inline constexpr std::string_view kReadmeTableEnd = "<!-- settings:end -->";

}  // namespace mcpexec::config
