// describe(): the message of an exception thrown by LibTorch/c10d, without
// c10's multi-line C++ backtrace, on one line. For the adapters that turn
// LibTorch exceptions into Errors.
#pragma once

#include <exception>
#include <string>

#include <c10/util/Exception.h>

namespace tessel::workers {

inline std::string describe(const std::exception& e) {
  std::string s;
  if (auto* c10 = dynamic_cast<const c10::Error*>(&e)) {
    s = c10->what_without_backtrace();
  } else {
    s = e.what();
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (auto& ch : s)
    if (ch == '\n') ch = ' ';
  return s;
}

}  // namespace tessel::workers
