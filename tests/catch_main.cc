// Catch2 entry point for every test binary. Besides the console report, it writes a JUnit
// file to $XML_OUTPUT_FILE (set by `bazel test`) with one <testcase> per TEST_CASE, so that
// .ci/run can count individual test cases rather than binaries.

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

class JunitListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  bool assertionEnded(const Catch::AssertionStats& stats) override {
    if (!stats.assertionResult.isOk()) {
      const auto& r = stats.assertionResult;
      failure_ += r.getSourceInfo().file;
      failure_ += ":" + std::to_string(r.getSourceInfo().line) + ": " + r.getExpressionInMacro() +
                  " with expansion " + r.getExpandedExpression() + " " + r.getMessage() + "\n";
    }
    return true;
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    cases_.push_back({stats.testInfo.name, stats.totals.assertions.failed > 0 ||
                                               stats.totals.testCases.failed > 0,
                      failure_});
    failure_.clear();
  }

  void testRunEnded(const Catch::TestRunStats&) override {
    const char* path = std::getenv("XML_OUTPUT_FILE");
    if (path == nullptr || *path == '\0') return;
    int failed = 0;
    for (const auto& c : cases_) failed += c.failed;
    std::ofstream out(path);
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"catch2\" tests=\""
        << cases_.size() << "\" failures=\"" << failed << "\">\n";
    for (const auto& c : cases_) {
      out << "  <testcase name=\"" << XmlEscape(c.name) << "\"";
      if (c.failed) {
        out << "><failure message=\"failed\">" << XmlEscape(c.detail) << "</failure></testcase>\n";
      } else {
        out << "/>\n";
      }
    }
    out << "</testsuite>\n</testsuites>\n";
  }

 private:
  struct Case {
    std::string name;
    bool failed;
    std::string detail;
  };
  std::vector<Case> cases_;
  std::string failure_;
};

}  // namespace

CATCH_REGISTER_LISTENER(JunitListener)

int main(int argc, char** argv) { return Catch::Session().run(argc, argv); }
