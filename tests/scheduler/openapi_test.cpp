// api/openapi.yaml stays true: every route the scheduler serves is documented, and
// every documented path and method is served.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "harness.hpp"

namespace tessel::scheduler::testing {
namespace {

// "/v1/jobs/{id}" -> "/v1/jobs/{}": capture names may differ between the two.
std::string normalize(const std::string& path) {
  static const std::regex capture(R"(\{[^}]*\})");
  std::string out = std::regex_replace(path, capture, "{}");
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// "METHOD /path" for each operation under `paths:`: a path is a key at two spaces of
// indentation, its methods keys at four.
std::set<std::string> documented_operations(const std::string& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << file;
  static const std::regex path_line(R"(^  (/\S*):\s*$)");
  static const std::regex method_line(R"(^    (get|put|post|delete|patch|head|options):)");
  std::set<std::string> out;
  std::string line;
  std::string path;
  bool in_paths = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != ' ' && line[0] != '#') in_paths = line.rfind("paths:", 0) == 0;
    if (!in_paths) continue;
    std::smatch m;
    if (std::regex_match(line, m, path_line)) {
      path = normalize(m[1]);
    } else if (!path.empty() && std::regex_search(line, m, method_line)) {
      std::string method = m[1];
      for (char& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      out.insert(method + " " + path);
    }
  }
  return out;
}

TEST(OpenApi, EveryRouteIsDocumentedAndEveryDocumentedOperationIsServed) {
  Harness h;
  std::set<std::string> served;
  for (const std::string& route : h.service->routes()) {
    const auto space = route.find(' ');
    served.insert(route.substr(0, space) + " " + normalize(route.substr(space + 1)));
  }
  // A redirect to /ui/, which describes it. (/ui and /ui/ are one route that tells
  // them apart, as they are one path here after normalize().)
  served.erase("GET /");
  const std::set<std::string> documented = documented_operations(std::string(TESSEL_SOURCE_DIR) + "/api/openapi.yaml");
  ASSERT_GT(documented.size(), 20U);
  for (const auto& op : served) EXPECT_TRUE(documented.count(op)) << op << " is served but not in api/openapi.yaml";
  for (const auto& op : documented) EXPECT_TRUE(served.count(op)) << op << " is in api/openapi.yaml but not served";
}

}  // namespace
}  // namespace tessel::scheduler::testing
