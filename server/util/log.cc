#include "server/util/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace graphstore {

std::shared_ptr<spdlog::logger> Logger(const std::string& component) {
  const std::string name = "graphstore." + component;
  if (auto existing = spdlog::get(name)) return existing;
  try {
    auto logger = spdlog::stderr_color_mt(name);
    logger->set_level(spdlog::get_level());
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ [%n] %v");
    return logger;
  } catch (const spdlog::spdlog_ex&) {
    return spdlog::get(name);  // created concurrently by another thread
  }
}

bool SetLogLevel(const std::string& level) {
  const auto l = spdlog::level::from_str(level);
  if (l == spdlog::level::off && level != "off") return false;
  spdlog::set_level(l);
  return true;
}

}  // namespace graphstore
