#include "tessel/agent/device_program.hpp"

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace tessel::agent {

namespace {

// One struct bpf_insn.
uint64_t insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  uint64_t out = 0;
  static_assert(sizeof i == sizeof out);
  std::memcpy(&out, &i, sizeof out);
  return out;
}

constexpr uint8_t kLdxW = BPF_LDX | BPF_MEM | BPF_W;
constexpr uint8_t kAndK = BPF_ALU64 | BPF_AND | BPF_K;
constexpr uint8_t kJneK = BPF_JMP | BPF_JNE | BPF_K;
constexpr uint8_t kMovK = BPF_ALU64 | BPF_MOV | BPF_K;
constexpr uint8_t kExit = BPF_JMP | BPF_EXIT;

long bpf(int cmd, bpf_attr& attr) { return ::syscall(__NR_bpf, cmd, &attr, sizeof attr); }

}  // namespace

std::vector<uint64_t> device_program(const std::vector<DeviceRule>& deny) {
  // r1: struct bpf_cgroup_dev_ctx {u32 access_type; u32 major; u32 minor;}
  std::vector<uint64_t> p = {
      insn(kLdxW, 2, 1, 0, 0),       // r2 = access_type
      insn(kAndK, 2, 0, 0, 0xffff),  // r2 = its device type (BPF_DEVCG_DEV_*)
      insn(kLdxW, 3, 1, 4, 0),       // r3 = major
      insn(kLdxW, 4, 1, 8, 0),       // r4 = minor
  };
  for (const DeviceRule& r : deny) {
    const int32_t type = r.type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR;
    p.push_back(insn(kJneK, 2, 0, 4, type));  // Not this rule: on to the next.
    p.push_back(insn(kJneK, 3, 0, 3, static_cast<int32_t>(r.major)));
    p.push_back(insn(kJneK, 4, 0, 2, static_cast<int32_t>(r.minor)));
    p.push_back(insn(kMovK, 0, 0, 0, 0));  // Denied.
    p.push_back(insn(kExit, 0, 0, 0, 0));
  }
  p.push_back(insn(kMovK, 0, 0, 0, 1));  // Allowed.
  p.push_back(insn(kExit, 0, 0, 0, 0));
  return p;
}

Status attach_device_program(const std::string& dir, const std::vector<DeviceRule>& deny) {
  const std::vector<uint64_t> prog = device_program(deny);
  static const char kLicense[] = "GPL";
  bpf_attr load{};
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.insn_cnt = static_cast<uint32_t>(prog.size());
  load.insns = reinterpret_cast<uintptr_t>(prog.data());
  load.license = reinterpret_cast<uintptr_t>(kLicense);
  int prog_fd = static_cast<int>(bpf(BPF_PROG_LOAD, load));
  if (prog_fd < 0) {  // Again with the verifier's log, for the message.
    const int first = errno;
    std::vector<char> log(1 << 16);
    load.log_buf = reinterpret_cast<uintptr_t>(log.data());
    load.log_size = static_cast<uint32_t>(log.size());
    load.log_level = 1;
    prog_fd = static_cast<int>(bpf(BPF_PROG_LOAD, load));
    if (prog_fd >= 0) ::close(prog_fd);
    log.back() = 0;
    const std::string verifier(log.data());
    return Error{std::string("loading the device program: ") + std::strerror(first) +
                 (verifier.empty() ? "" : ": " + verifier.substr(0, 512))};
  }
  const int cg_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cg_fd < 0) {
    Error e{"open " + dir + ": " + std::strerror(errno)};
    ::close(prog_fd);
    return e;
  }
  bpf_attr attach{};
  attach.target_fd = static_cast<uint32_t>(cg_fd);
  attach.attach_bpf_fd = static_cast<uint32_t>(prog_fd);
  attach.attach_type = BPF_CGROUP_DEVICE;
  attach.attach_flags = BPF_F_ALLOW_MULTI;
  const long rc = bpf(BPF_PROG_ATTACH, attach);
  const int err = errno;
  ::close(cg_fd);
  ::close(prog_fd);
  if (rc != 0) return Error{"attaching the device program to " + dir + ": " + std::strerror(err)};
  return ok_status();
}

}  // namespace tessel::agent
