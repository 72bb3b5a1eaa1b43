#include "cli/config_flags.h"

#include "config/settings.h"
#include "log/log.h"

namespace mcpexec::cli {
namespace {

log::Level LogLevelOf(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::kDebug:
      return log::Level::kDebug;
    case config::LogLevel::kInfo:
      return log::Level::kInfo;
    case config::LogLevel::kWarn:
      return log::Level::kWarn;
    case config::LogLevel::kError:
      return log::Level::kError;
  }
  return log::Level::kInfo;
}

}  // namespace

void AddConfigFlags(CLI::App* app, Command command, ConfigFlags& flags) {
  for (const config::Setting& setting : config::Settings()) {
    if (setting.scope != config::SettingScope::kAll && command != Command::kServe) continue;
    const std::string var(setting.env);
    if (setting.type == config::SettingType::kSwitch) {
      app->add_flag_callback(
          std::string(setting.flag), [&flags, var] { flags.values[var] = "1"; },
          config::FlagHelp(setting));
      continue;
    }
    app->add_option_function<std::string>(
        std::string(setting.flag),
        [&flags, var](const std::string& value) { flags.values[var] = value; },
        config::FlagHelp(setting));
  }
}

Result<config::Config> ResolveConfig(const std::string& default_rootfs,
                                     const config::EnvLookup& env, const ConfigFlags& flags) {
  config::Config c = config::Defaults(default_rootfs);
  MCPEXEC_RETURN_IF_ERROR(config::ApplyEnv(env, c));
  auto from_flags = [&flags](const std::string& var) -> std::optional<std::string> {
    auto it = flags.values.find(var);
    if (it == flags.values.end()) return std::nullopt;
    return it->second;
  };
  MCPEXEC_RETURN_IF_ERROR(config::ApplyEnv(from_flags, c));
  MCPEXEC_RETURN_IF_ERROR(config::Validate(c));
  log::SetMinimumLevel(LogLevelOf(c.log_level));
  return c;
}

}  // namespace mcpexec::cli
