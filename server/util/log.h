#ifndef GRAPHSTORE_SERVER_UTIL_LOG_H_
#define GRAPHSTORE_SERVER_UTIL_LOG_H_

// Named spdlog loggers, one per component ("core", "service", "main"), all to stderr.

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

namespace graphstore {

/// The logger of a component, created on first use with the process-wide level.
std::shared_ptr<spdlog::logger> Logger(const std::string& component);

/// Sets the level of every logger ("trace", "debug", "info", "warn", "error", "off").
bool SetLogLevel(const std::string& level);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_LOG_H_
