#pragma once
// What every fake vendor tool shares: its environment (variables named
// <PREFIX>FIXTURE, <PREFIX>MODE, <PREFIX>MODE_FILE) and how it picks its mode.

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace fake_tool {

inline std::string env(const std::string& prefix, const std::string& suffix) {
  const char* v = std::getenv((prefix + suffix).c_str());
  return v ? v : "";
}

inline bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

// The mode from the file named by <PREFIX>MODE_FILE when it exists (so a test can
// change a tool a running agent calls), else <PREFIX>MODE, else "normal";
// surrounding blanks and newlines do not count.
inline std::string mode(const std::string& prefix) {
  std::string text;
  const std::string file = env(prefix, "MODE_FILE");
  if (file.empty() || !read_file(file, text)) text = env(prefix, "MODE");
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "normal";
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

}  // namespace fake_tool
