#include "tessel/agent/hl_smi_cards.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "tessel/agent/smi_text.hpp"
#include "tessel/base/log_safe.hpp"

namespace tessel::agent::smi {

namespace {

constexpr int kMaxPort = 255;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// The first PCI address "dddd:bb:dd.f" in the line, lower case; nullopt if none.
std::optional<std::string> find_bus_id(std::string_view line) {
  constexpr size_t kLen = 12;  // 0000:43:00.0
  for (size_t i = 0; i + kLen <= line.size(); ++i) {
    std::string_view s = line.substr(i, kLen);
    bool ok = s[4] == ':' && s[7] == ':' && s[10] == '.';
    for (size_t k : {0, 1, 2, 3, 5, 6, 8, 9, 11}) ok = ok && is_hex(s[k]);
    const bool bounded = (i == 0 || !is_hex(line[i - 1])) && (i + kLen == line.size() || !is_hex(line[i + kLen]));
    if (ok && bounded) return lower(s);
  }
  return std::nullopt;
}

struct PortLine {
  int port = 0;
  bool up = false;
};

// "port  8:   UP" -> {8, true}; nullopt when the line is not a port line; an error
// when it is one with a bad number or state.
Result<std::optional<PortLine>> read_port_line(std::string_view line) {
  line = trim(line);
  if (line.size() < 5 || lower(line.substr(0, 4)) != "port" || !std::isspace(static_cast<unsigned char>(line[4])))
    return std::optional<PortLine>();
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return Error{"no ':' after the port number"};
  auto port = parse_small_int(trim(line.substr(4, colon - 4)), kMaxPort);
  if (!port) return Error{"port number: " + port.error().message};
  const std::string state = lower(trim(line.substr(colon + 1)));
  if (state != "up" && state != "down") return Error{"state must be UP or DOWN"};
  return std::optional<PortLine>(PortLine{*port, state == "up"});
}

}  // namespace

Result<std::map<std::string, CardPorts>> parse_hl_smi_link(std::string_view text) {
  std::map<std::string, CardPorts> out;
  std::map<std::string, std::set<int>> seen;
  std::string card;  // "" until the first header.
  int line_no = 0;
  for (std::string_view line : split_lines(text)) {
    ++line_no;
    if (is_blank(line)) continue;
    auto where = [&](const std::string& what) {
      return "hl-smi -n link line " + std::to_string(line_no) + ": " + what + ": " + quote_line(line);
    };
    auto port = read_port_line(line);
    if (!port) return Error{where(port.error().message)};
    if (*port) {
      if (!seen[card].insert((*port)->port).second) return Error{where("port listed twice")};
      CardPorts& c = out[card];
      ((*port)->up ? c.up : c.down).push_back((*port)->port);
      continue;
    }
    auto bus = find_bus_id(line);
    if (!bus) return Error{where("neither a card header nor a port line")};
    if (out.count(*bus)) return Error{where("card listed twice")};
    card = *bus;
    out[card];  // A card may list no ports.
  }
  if (out.count("") && out.size() > 1) return Error{"hl-smi -n link: port lines before the first card header"};
  for (auto& [_, c] : out) {
    std::sort(c.up.begin(), c.up.end());
    std::sort(c.down.begin(), c.down.end());
  }
  return out;
}

Status merge_ports(const std::map<std::string, CardPorts>& ports, std::vector<api::Device>& devices) {
  auto apply = [](const CardPorts& p, api::Device& d) {
    d.ports_up = static_cast<int>(p.up.size());
    d.ports_total = static_cast<int>(p.up.size() + p.down.size());
    d.ports_down = p.down;
  };
  if (auto headerless = ports.find(""); headerless != ports.end()) {
    if (devices.size() != 1)
      return Error{"hl-smi -n link printed ports without naming the card, and the node has " +
                   std::to_string(devices.size()) + " cards"};
    apply(headerless->second, devices[0]);
    return ok_status();
  }
  for (const auto& entry : ports) {
    const std::string& bus = entry.first;
    auto it =
        std::find_if(devices.begin(), devices.end(), [&](const api::Device& d) { return lower(d.bus_id) == bus; });
    if (it == devices.end()) return Error{"hl-smi -n link lists card " + bus + ", which hl-smi -Q did not"};
    apply(entry.second, *it);
  }
  return ok_status();
}

std::map<std::string, std::string> parse_hl_smi_firmware(std::string_view list_text) {
  constexpr std::string_view kKey = "firmware [spi] version";
  std::map<std::string, std::string> out;
  std::string card;
  for (std::string_view line : split_lines(list_text)) {
    std::string_view t = trim(line);
    if (!t.empty() && t.front() == '[') {
      if (auto bus = find_bus_id(t)) card = *bus;
      continue;
    }
    const size_t colon = t.find(':');
    if (card.empty() || colon == std::string_view::npos || lower(trim(t.substr(0, colon))) != kKey) continue;
    std::string_view value = trim(t.substr(colon + 1));
    std::string version;
    for (size_t pos = 0; pos < value.size();) {  // The word with "fw-" in it.
      size_t end = value.find(' ', pos);
      if (end == std::string_view::npos) end = value.size();
      std::string_view word = value.substr(pos, end - pos);
      if (word.find("fw-") != std::string_view::npos) {
        version = std::string(word);
        break;
      }
      pos = end + 1;
    }
    if (version.empty()) version = std::string(trim(value.substr(0, value.find(" ("))));
    if (!version.empty() && version.size() <= 128 && printable_ascii(version)) out[card] = version;
  }
  return out;
}

}  // namespace tessel::agent::smi
