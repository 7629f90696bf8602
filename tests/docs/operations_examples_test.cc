// The grpcurl examples of docs/operations.md ("Inspecting a server with grpcurl") run as
// written, in bash, against real graphstored processes: the demo server the section starts
// (the generator's flags taken from the docs) and a MovieLens server for the block that says
// so. grpcurl itself is the stand-in of tests/docs/grpcurl.cc, which learns the protocol from
// the server's reflection as grpcurl does. A command passes when it exits 0 and prints what the
// docs show under it (`#   ...` lines); one shown failing (`#   ERROR: Code: X  Message: M`)
// must fail with that code and message; `VAR=$(... | jq -r .field)` must set VAR.

#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/daemon.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::Daemon;
using testing::TempDir;

const char kSection[] = "## Inspecting a server with grpcurl";

// One command of a bash block (its continuation lines joined), with the lines the docs show
// as its output.
struct Command {
  std::string text;
  std::vector<std::string> shown;
};

struct Block {
  std::string prose;  // what the docs say between the previous block and this one
  std::vector<Command> commands;
};

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

// Whether `s` ends inside a single-quoted string (a '#' after a blank, outside quotes, starts a
// comment to the end of its line: "node's" there opens nothing).
bool OpenQuote(const std::string& s) {
  bool open = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!open && s[i] == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\n')) {
      i = s.find('\n', i);
      if (i == std::string::npos) break;
      continue;
    }
    open ^= s[i] == '\'';
  }
  return open;
}

// The bash blocks of the section.
std::vector<Block> SectionBlocks(const std::string& doc) {
  std::istringstream in(doc);
  std::string line;
  bool in_section = false, in_block = false;
  std::vector<Block> blocks;
  std::string prose;
  std::string pending;  // a command whose continuation lines are still coming
  while (std::getline(in, line)) {
    if (!in_block && line.rfind("## ", 0) == 0) {
      if (in_section) break;
      in_section = line == kSection;
      continue;
    }
    if (!in_section) continue;
    if (!in_block) {
      if (line == "```bash") {
        in_block = true;
        blocks.push_back({prose, {}});
        prose.clear();
      } else {
        prose += line + "\n";
      }
      continue;
    }
    if (line == "```") {
      in_block = false;
      continue;
    }
    auto& commands = blocks.back().commands;
    if (pending.empty()) {
      const std::string t = Trim(line);
      if (t.empty()) continue;
      if (t[0] == '#') {
        if (!commands.empty() && t.rfind("#   ", 0) == 0) commands.back().shown.push_back(Trim(t.substr(1)));
        continue;
      }
    }
    pending += line + "\n";
    const std::string t = Trim(line);
    if (OpenQuote(pending) || (!t.empty() && t.back() == '\\')) continue;
    commands.push_back({pending, {}});
    pending.clear();
  }
  return blocks;
}

// `s` in single quotes for bash.
std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The bash script that runs `commands` against `address`, checking each as the header says.
std::string Script(const std::vector<Command>& commands, const std::string& address, const std::string& out_dir) {
  const std::string stand_in = std::filesystem::absolute("tests/docs").string();
  std::ostringstream s;
  s << "set -uo pipefail\n"
    << "export PATH=" << Quoted(stand_in) << ":\"$PATH\"\n"
    << "ADDR=" << address << "\n"
    << "O=" << Quoted(out_dir) << "\n"
    << "fail() { echo \"command $1 of the docs: $2\"; echo '--- stdout'; cat \"$O/out.$1\"; "
       "echo '--- stderr'; cat \"$O/err.$1\"; exit 1; }\n";
  const std::regex error_line(R"(ERROR: Code: (\w+)\s+Message: (.*))");
  const std::regex assignment(R"(^\s*([A-Z_][A-Z0-9_]*)=\$\()");
  for (size_t k = 0; k < commands.size(); ++k) {
    const Command& c = commands[k];
    s << "echo " << Quoted("$ " + Trim(c.text)) << "\n";
    std::smatch m;
    const bool fails = !c.shown.empty() && std::regex_match(c.shown[0], m, error_line);
    if (fails) {
      s << "if { " << c.text << "} > \"$O/out." << k << "\" 2> \"$O/err." << k << "\"; then fail " << k
        << " 'succeeded where the docs show an error'; fi\n";
      s << "grep -qF -- " << Quoted("Code: " + m[1].str()) << " \"$O/err." << k << "\" || fail " << k
        << " 'another code than the docs show'\n";
      s << "grep -qF -- " << Quoted("Message: " + Trim(m[2].str())) << " \"$O/err." << k << "\" || fail " << k
        << " 'another message than the docs show'\n";
    } else {
      s << "{ " << c.text << "} > \"$O/out." << k << "\" 2> \"$O/err." << k << "\" || fail " << k
        << " \"exit status $?\"\n";
      for (const auto& shown : c.shown) {
        s << "grep -qF -- " << Quoted(shown) << " \"$O/out." << k << "\" || fail " << k << " "
          << Quoted("does not print " + shown) << "\n";
      }
      std::smatch a;
      if (std::regex_search(c.text, a, assignment)) {
        const std::string var = a[1].str();
        s << "[ -n \"$" << var << "\" ] && [ \"$" << var << "\" != null ] || fail " << k << " "
          << Quoted("left " + var + " unset") << "\n";
      }
    }
    s << "cat \"$O/out." << k << "\"\n";
  }
  return s.str();
}

// Runs `commands` against the daemon; the script's output goes to the test's log.
void RunCommands(const std::vector<Command>& commands, const Daemon& d) {
  TempDir out;
  const std::string script = out / "commands.sh";
  testing::WriteFile(script, Script(commands, d.address(), out.path()));
  const int status = testing::RunCommand("bash " + script + " > " + (out / "log") + " 2>&1");
  const std::string log = testing::ReadFile(out / "log");
  std::cout << log;  // the transcript, for the test's log
  INFO(log);
  INFO("daemon log:\n" << d.Log());
  REQUIRE(status == 0);
}

// The value of --flag=value in `command` ("" when absent).
std::string FlagValue(const std::string& command, const std::string& flag) {
  std::smatch m;
  if (!std::regex_search(command, m, std::regex("--" + flag + "=(\\S+)"))) return "";
  return m[1].str();
}

// The flags of `command` after its program, without the ones named in `drop` and without a
// trailing '&'.
std::vector<std::string> Flags(const std::string& command, const std::vector<std::string>& drop) {
  std::istringstream in(command);
  std::string word;
  std::vector<std::string> flags;
  in >> word;  // the program
  while (in >> word) {
    if (word == "&" || word == "\\") continue;
    bool dropped = false;
    for (const auto& d : drop) dropped |= word.rfind("--" + d + "=", 0) == 0;
    if (!dropped) flags.push_back(word);
  }
  return flags;
}

std::string Joined(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += " " + Quoted(w);
  return s;
}

struct Sections {
  std::vector<Command> setup;      // the block that makes the demo dataset and starts a server
  std::vector<Command> demo;       // every other block but MovieLens', in the docs' order
  std::vector<Command> movielens;  // the block whose prose converts MovieLens
  std::string movielens_command;   // that conversion, from the prose
  int grpcurl_commands = 0;        // every command of the section that runs grpcurl
};

Sections ReadSections() {
  const std::string doc = testing::ReadFile("docs/operations.md");
  REQUIRE(!doc.empty());
  Sections s;
  for (const Block& b : SectionBlocks(doc)) {
    bool setup = false;
    for (const auto& c : b.commands) {
      setup |= c.text.find("graphstore-generate") != std::string::npos;
      s.grpcurl_commands += c.text.find("grpcurl ") != std::string::npos;
    }
    std::smatch m;
    if (setup) {
      s.setup = b.commands;
    } else if (std::regex_search(b.prose, m, std::regex(R"(`(graphstore-movielens\s[^`]*)`)"))) {
      s.movielens = b.commands;
      s.movielens_command = m[1].str();
    } else {
      s.demo.insert(s.demo.end(), b.commands.begin(), b.commands.end());
    }
  }
  return s;
}

// Whether the last of `commands` asks the server to exit.
bool EndsWithExit(const std::vector<Command>& commands) {
  return !commands.empty() && commands.back().text.find("GraphStore/Exit") != std::string::npos;
}

TEST_CASE("the section holds a demo server, its commands and a MovieLens block, every command grpcurl or set-up",
          "[docs]") {
  const Sections s = ReadSections();
  REQUIRE(s.setup.size() == 3);  // generate, start, ADDR
  CHECK(s.demo.size() >= 20);
  CHECK(s.movielens.size() >= 3);
  CHECK(!s.movielens_command.empty());
  for (const auto* commands : {&s.demo, &s.movielens}) {
    for (const auto& c : *commands) {
      INFO(c.text);
      CHECK(c.text.find("grpcurl -plaintext ") != std::string::npos);
    }
  }
  CHECK(static_cast<size_t>(s.grpcurl_commands) == s.demo.size() + s.movielens.size());
  // The demo server's commands end by asking it to exit; nothing may come after.
  CHECK(EndsWithExit(s.demo));
}

TEST_CASE("the grpcurl examples run against the demo server the docs start", "[docs]") {
  const Sections s = ReadSections();
  REQUIRE(s.setup.size() == 3);
  TempDir dir;
  const std::string data = dir / "demo";
  std::string generate, start;
  for (const auto& c : s.setup) {
    if (c.text.find("graphstore-generate") != std::string::npos) generate = c.text;
    if (c.text.find("graphstored") != std::string::npos) start = c.text;
  }
  REQUIRE(!FlagValue(generate, "out").empty());
  REQUIRE(FlagValue(start, "partition") == FlagValue(generate, "out"));
  REQUIRE(testing::RunCommand("tools/graphstore-generate" + Joined(Flags(generate, {"out"})) +
                              " --out=" + Quoted(data) + " > " + Quoted(dir / "generate.log") + " 2>&1") == 0);
  Daemon d(data, Flags(start, {"partition", "port", "port_file"}));
  RunCommands(s.demo, d);
  // The section ends by asking the server to exit.
  REQUIRE(EndsWithExit(s.demo));
  CHECK(d.WaitExit(30) == 0);
}

TEST_CASE("the MovieLens grpcurl examples run against the converted ml-100k", "[docs][movielens]") {
  const Sections s = ReadSections();
  REQUIRE(!s.movielens_command.empty());
  TempDir dir;
  const std::string data = dir / "ml100k";
  const std::string input = FlagValue(s.movielens_command, "input");
  REQUIRE(input.find("ml-100k") != std::string::npos);
  REQUIRE(testing::RunCommand("tools/graphstore-movielens" + Joined(Flags(s.movielens_command, {"input", "out"})) +
                              " --input=" + Quoted(testing::SharedDataPath("ml-100k")) + " --out=" + Quoted(data) +
                              " > " + Quoted(dir / "convert.log") + " 2>&1") == 0);
  Daemon d(data);
  RunCommands(s.movielens, d);
  CHECK(d.Stop(SIGTERM) == 0);
}

}  // namespace
}  // namespace graphstore
