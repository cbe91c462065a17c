// image_ref_error(): an OCI image reference as a JobSpec's `image` may give it
// ([registry[:port]/]name[:tag][@algorithm:hex]), checked before it reaches podman.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "tessel/api/job.hpp"

namespace tessel::api {

namespace {
bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// A path component of an image name: [a-z0-9]+ joined by '.', '_', '__' or runs of '-'.
bool name_component(std::string_view c) {
  if (c.empty() || !lower_alnum(c.front()) || !lower_alnum(c.back())) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    if (lower_alnum(c[i])) continue;
    if (c[i] == '-') continue;  // Runs of '-' are allowed; ends were checked.
    if (c[i] == '.' && lower_alnum(c[i + 1])) continue;
    if (c[i] == '_' && (lower_alnum(c[i + 1]) || (c[i + 1] == '_' && lower_alnum(c[i + 2])))) {
      if (c[i + 1] == '_') ++i;
      continue;
    }
    return false;
  }
  return true;
}

// A registry host: letters, digits, '.' and '-' (each label starting and ending with a
// letter or digit), then an optional :port.
bool registry_host(std::string_view h) {
  const size_t colon = h.find(':');
  std::string_view host = h.substr(0, colon);
  if (colon != std::string_view::npos) {
    std::string_view port = h.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return false;
  }
  if (host.empty()) return false;
  for (size_t i = 0; i < host.size(); ++i) {
    const char c = host[i];
    const bool alnum = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (alnum) continue;
    if ((c != '.' && c != '-') || i == 0 || i + 1 == host.size()) return false;
    if (c == '.' && !std::isalnum(static_cast<unsigned char>(host[i + 1]))) return false;
  }
  return std::isalnum(static_cast<unsigned char>(host.back())) != 0;
}
}  // namespace

std::string image_ref_error(std::string_view ref) {
  const std::string like =
      " (like vault.habana.ai/gaudi-docker/1.17.0/ubuntu22.04/habanalabs/pytorch-installer-2.3.1:latest)";
  if (ref.empty()) return "must not be empty";
  if (ref.size() > 512) return "longer than 512 characters";
  std::string_view name = ref;
  if (const size_t at = name.find('@'); at != std::string_view::npos) {
    const std::string_view digest = name.substr(at + 1);
    const size_t colon = digest.find(':');
    const std::string_view algo = digest.substr(0, colon);
    const std::string_view hex = colon == std::string_view::npos ? std::string_view{} : digest.substr(colon + 1);
    if (algo.empty() || algo.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+._-") != std::string_view::npos ||
        hex.size() < 32 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
      return "has a digest that is not ALGORITHM:HEX (sha256:...)";
    name = name.substr(0, at);
  }
  const size_t slash = name.rfind('/');
  const size_t colon = name.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    const std::string_view tag = name.substr(colon + 1);
    const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
    if (tag.empty() || tag.size() > 128 || !word(tag[0]) ||
        !std::all_of(tag.begin(), tag.end(), [&](char c) { return word(c) || c == '.' || c == '-'; }))
      return "has a tag that is not 1 to 128 of letters, digits, '_', '.' and '-'" + like;
    name = name.substr(0, colon);
  }
  if (name.empty()) return "has no name" + like;
  size_t pos = 0;
  if (const size_t first = name.find('/'); first != std::string_view::npos) {
    const std::string_view head = name.substr(0, first);
    if (head.find_first_of(".:") != std::string_view::npos || head == "localhost") {
      if (!registry_host(head)) return "has a registry host that is not HOST[:PORT]" + like;
      pos = first + 1;
    }
  }
  for (;;) {
    const size_t next = name.find('/', pos);
    const std::string_view c = name.substr(pos, next == std::string_view::npos ? next : next - pos);
    if (!name_component(c))
      return "has a name component '" + std::string(c.substr(0, 64)) +
             "' that is not lowercase letters and digits joined by '.', '_' or '-'" + like;
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  return "";
}

}  // namespace tessel::api
