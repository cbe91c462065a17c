// A stand-in for hl-smi (FAKE_SMI_HABANA=1) or nvidia-smi (FAKE_SMI_HABANA=0).
//
// Prints the rows of the fixture CSV named by $FAKE_HL_SMI_FIXTURE
// ($FAKE_NVIDIA_SMI_FIXTURE) for the requested fields and format, like the real tool:
//   hl-smi -Q a,b -f csv[,noheader][,nounits]    (also --query-aip=, --format=, -L)
//   nvidia-smi --query-gpu=a,b --format=csv[,noheader][,nounits]    (also -L)
// The mode comes from the file named by $FAKE_HL_SMI_MODE_FILE when it exists (so a
// test can change the behaviour of a tool a running agent calls), else from
// $FAKE_HL_SMI_MODE, else "normal":
//   normal   print the fixture
//   hang     never return (until killed)
//   fail     print an error on stderr and exit 3
//   garbage  print rows that are not the requested CSV, exit 0
//   crash    die of SIGSEGV
//
// hl-smi only: -L prints "Firmware [SPI] Version" from the fixture's optional
// "firmware" column (not a -Q field). `-n link` prints each card's port link state, like the real port
// query: the file named by $FAKE_HL_SMI_LINK_FIXTURE as is when set, else for each
// card of the fixture a header "[index] AIP (accelN) <bus_id>" and ports 0..2 UP,
// except the ports named DOWN by $FAKE_HL_SMI_PORTS_DOWN ("module:port,...",
// e.g. "5:1" puts port 1 of module 5 down). `-n link -i BUS` (as the agent calls it,
// once per card) prints only that card: its ports without a header, or the fixture's
// block for BUS. The mode applies to this call too.

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "fake_mode.hpp"
#include "tessel/agent/smi_render.hpp"
#include "tessel/agent/smi_text.hpp"

namespace smi = tessel::agent::smi;

namespace {

#if FAKE_SMI_HABANA
const char* const kEnvPrefix = "FAKE_HL_SMI_";
const smi::Dialect& dialect() { return smi::hl_smi_dialect(); }
#else
const char* const kEnvPrefix = "FAKE_NVIDIA_SMI_";
const smi::Dialect& dialect() { return smi::nvidia_smi_dialect(); }
#endif

std::string env(const std::string& suffix) { return fake_tool::env(kEnvPrefix, suffix); }
std::string mode() { return fake_tool::mode(kEnvPrefix); }

int usage(const std::string& why) {
  std::cerr << dialect().tool << " (fake): " << why << "\n";
  return 2;
}

std::vector<std::string> split_fields(const std::string& s) {
  std::vector<std::string> out;
  for (const std::string& f : smi::split_cells(s))
    if (!f.empty()) out.push_back(f);
  return out;
}

// -L: a short listing per card, in the real tools' spirit.
void print_list(const smi::Table& t) {
  auto get = [&](const smi::Row& r, const char* field) {
    int c = t.column_of(field);
    return c < 0 ? std::string("N/A") : r.cells[c];
  };
  for (const smi::Row& r : t.rows) {
#if FAKE_SMI_HABANA
    std::cout << "[" << get(r, "index") << "] AIP (accel" << get(r, "index") << ") " << get(r, "bus_id") << "\n"
              << "\tProduct Name\t\t: " << get(r, "name") << "\n"
              << "\tSerial Number\t\t: " << get(r, "serial") << "\n"
              << "\tModule status\t\t: Operational\n"
              << "\tModule ID\t\t: " << get(r, "module_id") << "\n"
              << "\tAIP UUID\t\t: " << get(r, "uuid") << "\n";
    if (t.column_of("firmware") >= 0)  // A fixture-only column: hl-smi -Q has no firmware field.
      std::cout << "\tFirmware [SPI] Version\t: Preboot version " << get(r, "firmware") << " (fake)\n";
#else
    std::cout << "GPU " << get(r, "index") << ": " << get(r, "name") << " (UUID: " << get(r, "uuid") << ")\n";
#endif
  }
}

#if FAKE_SMI_HABANA
// -n link without a link fixture: three ports per card, all UP unless named down.
// With -i BUS only that card, without its header line, as the real per-card form.
int print_link(const smi::Table& t, const std::string& only_bus) {
  std::vector<std::pair<std::string, std::string>> down;  // (module id, port)
  for (const std::string& item : smi::split_cells(env("PORTS_DOWN"))) {
    if (item.empty()) continue;  // Unset, or a stray comma.
    const auto colon = item.find(':');
    if (colon == std::string::npos) return usage("FAKE_HL_SMI_PORTS_DOWN: want module:port, got \"" + item + "\"");
    down.emplace_back(item.substr(0, colon), item.substr(colon + 1));
  }
  const int idx = t.column_of("index"), mod = t.column_of("module_id"), bus = t.column_of("bus_id");
  if (idx < 0 || mod < 0 || bus < 0) return usage("the fixture needs index, module_id and bus_id for -n link");
  bool found = only_bus.empty();
  for (const smi::Row& r : t.rows) {
    if (!only_bus.empty() && r.cells[bus] != only_bus) continue;
    found = true;
    if (only_bus.empty())
      std::cout << "[" << r.cells[idx] << "] AIP (accel" << r.cells[idx] << ") " << r.cells[bus] << "\n";
    for (int port = 0; port < 3; ++port) {
      bool is_down = false;
      for (const auto& [m, p] : down) is_down = is_down || (m == r.cells[mod] && p == std::to_string(port));
      std::cout << "port  " << port << ":        " << (is_down ? "DOWN" : "UP") << "\n";
    }
  }
  if (!found) return usage("no card with bus id " + only_bus);
  return 0;
}

// A link fixture for -i BUS: the block whose header names BUS (header included), or
// the whole fixture when it names no card (the per-card form of one card).
std::string link_block(const std::string& fixture, const std::string& only_bus) {
  if (only_bus.empty() || fixture.find("AIP (accel") == std::string::npos) return fixture;
  std::string out;
  bool in_block = false;
  for (std::string_view line : smi::split_lines(fixture)) {
    if (line.find("AIP (accel") != std::string_view::npos) in_block = line.find(only_bus) != std::string_view::npos;
    if (in_block) out += std::string(line) + "\n";
  }
  return out;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::string fields_arg, format_arg = "csv";
  std::string nic_arg, bus_arg;
  bool have_query = false, list = false;
  std::vector<std::string> args(argv + 1, argv + argc);
#if FAKE_SMI_HABANA
  const std::string query_short = "-Q", query_long = "--query-aip";
#else
  const std::string query_short = "", query_long = "--query-gpu";
#endif
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& opt, std::string& out) -> int {  // 1 taken, 0 not this option, -1 error
      if (!opt.empty() && a == opt) {
        if (i + 1 >= args.size()) return -1;
        out = args[++i];
        return 1;
      }
      if (a.rfind(opt + "=", 0) == 0 && opt.size() > 2) {
        out = a.substr(opt.size() + 1);
        return 1;
      }
      return 0;
    };
    int r;
    if ((r = value(query_short, fields_arg)) || (r = value(query_long, fields_arg))) {
      if (r < 0) return usage("missing value for " + a);
      have_query = true;
    } else if ((r = value("-f", format_arg)) || (r = value("--format", format_arg))) {
      if (r < 0) return usage("missing value for " + a);
#if FAKE_SMI_HABANA
    } else if ((r = value("-n", nic_arg)) || (r = value("-i", bus_arg))) {
      if (r < 0) return usage("missing value for " + a);
      if (!nic_arg.empty() && nic_arg != "link") return usage("only -n link is supported");
#endif
    } else if (a == "-L" || a == "--list-aips" || a == "--list-gpus") {
      list = true;
    } else {
      return usage("unknown argument \"" + a + "\"");
    }
  }

  const std::string m = mode();
  if (m == "hang") {
    for (;;) ::pause();
  } else if (m == "fail") {
    std::cerr << dialect().tool << ": failed to open device (fake failure)\nsecond line of detail\n";
    return 3;
  } else if (m == "garbage") {
    std::cout << "#!@ this is not csv\n0, 1, 2\n\x01\x02 binary junk\n";
    return 0;
  } else if (m == "crash") {
    std::signal(SIGSEGV, SIG_DFL);  // Not a sanitizer's handler: die as a real crash would.
    std::raise(SIGSEGV);
    return 139;
  } else if (m != "normal") {
    return usage("unknown mode \"" + m + "\"");
  }

#if FAKE_SMI_HABANA
  if (!nic_arg.empty() && !env("LINK_FIXTURE").empty()) {
    std::string link;
    if (!fake_tool::read_file(env("LINK_FIXTURE"), link)) return usage("cannot read " + env("LINK_FIXTURE"));
    std::cout << link_block(link, bus_arg);
    return 0;
  }
#endif
  const std::string fixture_path = env("FIXTURE");
  if (fixture_path.empty()) return usage(std::string("set ") + kEnvPrefix + "FIXTURE");
  std::string text;
  if (!fake_tool::read_file(fixture_path, text)) return usage("cannot read fixture " + fixture_path);
  auto table = smi::read_fixture(dialect(), text);
  if (!table) return usage("fixture " + fixture_path + ": " + table.error().message);
  if (list) {
    print_list(*table);
    return 0;
  }
#if FAKE_SMI_HABANA
  if (!nic_arg.empty()) return print_link(*table, bus_arg);
#endif
  if (!have_query) return usage("only " + query_long + "= and -L are supported");
  auto fmt = smi::parse_format(format_arg);
  if (!fmt) return usage(fmt.error().message);
  auto out = smi::render_csv(dialect(), *table, split_fields(fields_arg), *fmt);
  if (!out) return usage(out.error().message);
  std::cout << *out;
  return 0;
}
