#pragma once
// Small file helpers for tests: read a whole file or its lines, write one.

#include <filesystem>
#include <string>
#include <vector>

namespace tessel::testkit {

// The whole file, bytes as they are ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);

// The file's non-empty lines (none when it cannot be read).
std::vector<std::string> read_lines(const std::filesystem::path& path);

// Replaces the file with `text`, creating its parent directories.
void write_file(const std::filesystem::path& path, const std::string& text);

}  // namespace tessel::testkit
