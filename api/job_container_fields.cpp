// JobSpec's container fields: the image, its pull policy, mounts and /dev/shm size.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "job_fields.hpp"

namespace tessel::api {

using nlohmann::json;

namespace {

// A path inside a mount: absolute, at most 4096 bytes, none of ',' ':' NUL or newlines
// (podman's mount syntax), no "." or ".." component.
std::string mount_path_error(const std::string& p) {
  if (p.empty() || p[0] != '/') return "must be an absolute path";
  if (p.size() > 4096) return "longer than 4096 characters";
  if (p.find_first_of(std::string(",:\n\r\0", 5)) != std::string::npos)
    return "may not contain ',', ':', NUL or line breaks";
  size_t pos = 0;
  while (pos < p.size()) {
    const size_t next = std::min(p.find('/', pos + 1), p.size());
    const std::string_view part(p.data() + pos + 1, next - pos - 1);
    if (part == "." || part == "..") return "may not contain '.' or '..' components";
    pos = next;
  }
  return "";
}

bool under(std::string_view path, std::string_view dir) {
  return path == dir || (path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/');
}

// One of `mounts`: {"source", "target", "read_only"}; the first problem, with its path.
std::optional<FieldError> read_mount(const json& m, const std::string& path, Mount& out) {
  if (!m.is_object()) return FieldError{path, path + R"(: must be an object {"source": ..., "target": ...})"};
  FieldReader r(m, path);
  r.required_string("source", out.source, 4096);
  r.required_string("target", out.target, 4096);
  r.optional_bool("read_only", out.read_only);
  if (r.has("source"))
    if (std::string why = mount_path_error(out.source); !why.empty()) r.fail("source", why);
  if (r.has("target")) {
    std::string t = out.target;
    while (t.size() > 1 && t.back() == '/') t.pop_back();
    if (std::string why = mount_path_error(out.target); !why.empty()) {
      r.fail("target", why);
    } else if (t == "/") {
      r.fail("target", "may not be /");
    } else if (under(t, "/proc") || under(t, "/sys") || under(t, "/dev")) {
      r.fail("target", "may not be under /proc, /sys or /dev");
    }
    out.target = t;
  }
  return r.finish_field();
}

}  // namespace

void read_container_fields(FieldReader& r, const json& j, JobSpec& s) {
  r.optional_string("image", s.image, 512);
  if (r.has("image"))
    if (std::string why = image_ref_error(s.image); !why.empty()) r.fail("image", why);
  if (r.has("image_pull")) {
    std::string pull;
    r.optional_string("image_pull", pull, 16);
    if (pull == "always")
      s.image_pull_always = true;
    else if (pull != "missing")
      r.fail("image_pull", "must be \"missing\" or \"always\"");
  }
  if (r.has("mounts")) {
    const json& ms = j["mounts"];
    if (!ms.is_array()) {
      r.fail("mounts", "must be an array of {\"source\", \"target\", \"read_only\"}");
    } else if (ms.size() > kMaxMounts) {
      r.fail("mounts", "more than " + std::to_string(kMaxMounts) + " mounts");
    } else {
      for (size_t i = 0; i < ms.size(); ++i) {
        Mount m;
        const std::string path = "mounts[" + std::to_string(i) + "]";
        if (auto e = read_mount(ms[i], path, m)) return r.fail(e->field, e->message.substr(e->field.size() + 2));
        for (const Mount& o : s.mounts)
          if (o.target == m.target) return r.fail(path + ".target", "is also the target of another mount");
        if (!s.workdir.empty() && m.target == s.workdir)
          return r.fail(path + ".target", "is the workdir, which is mounted there already");
        s.mounts.push_back(std::move(m));
      }
    }
  }
  std::optional<int64_t> shm;
  r.optional_int("shm_size_mib", shm, 1, kMaxShmSizeMib);
  s.shm_size_mib = shm.value_or(0);
  if (s.image.empty()) {
    for (const char* field : {"image_pull", "mounts", "shm_size_mib"})
      if (r.has(field)) return r.fail(field, "needs an image");
  }
}

}  // namespace tessel::api
