#ifndef GRAPHSTORE_CLIENT_LOADER_LOG_H_
#define GRAPHSTORE_CLIENT_LOADER_LOG_H_

// The Loader's logger ("loader", on stderr unless the program set one up).

#include <memory>

#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace graphstore::client {

inline std::shared_ptr<spdlog::logger> LoaderLog() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::get("loader");
    return l != nullptr ? l : spdlog::stderr_color_mt("loader");
  }();
  return logger;
}

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_LOADER_LOG_H_
