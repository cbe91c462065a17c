#pragma once
// Crash-safe small files for the agent's state dir.
//
// write_file_durable(path, data): writes `path.tmp`, fsyncs it, renames it over
// `path` and fsyncs the parent directory, so after a crash `path` holds either
// the old or the new contents, never a torn mix. Not safe against two writers
// of the same path at once (each task file has one writer).
// Every file is created mode 0600 (they hold jobs' env and commands), unless a caller
// asks for another mode (write_file_atomic).

#include <string>

#include "tessel/base/result.hpp"

namespace tessel::agent {

Status write_file_durable(const std::string& path, const std::string& data);
// Same temp + rename (readers never see a torn file) without fsync: for files that
// only matter while this boot lasts (a machine crash ends the processes they describe).
// `mode`: the new file's mode (set exactly, whatever the umask).
Status write_file_atomic(const std::string& path, const std::string& data, unsigned mode = 0600);
// Appends `line` + '\n' to `path` (created when missing) and fdatasyncs it.
Status append_line_durable(const std::string& path, const std::string& line);
// Creates `path` (and parents) as a directory and fsyncs its parent.
Status make_dir_durable(const std::string& path);
// Creates `path`, writes a few bytes, fdatasyncs and removes it: whether the file
// system under it takes writes now. The error is `unavailable` with the bare errno
// text ("No space left on device"); the file is removed in every case.
Status write_probe(const std::string& path);
// Reads a whole file; errors say why ("open: No such file or directory").
Result<std::string> read_small_file(const std::string& path, size_t max_bytes = 1 << 20);
// "what: <strerror(errno)>" with the code errno names: ENOENT not_found, EACCES and
// EPERM permission_denied, EEXIST conflict, any other (EIO, ENOSPC, EROFS, ...)
// unavailable. The errors of the functions above carry these codes.
Error errno_error(const std::string& what);

}  // namespace tessel::agent
