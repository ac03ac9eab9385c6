// machine.cpp - the header of every bench run: date, CPU, kernel and whether the BPF JIT is on.
#include <bpf/libbpf.h>
#include <sys/utsname.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>

#include "bench/parts.h"

namespace dt::bench {

namespace {

std::string first_line_with(const char *path, const char *prefix) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

std::string read_trimmed(const char *path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s.empty() ? "unknown" : s;
}

}  // namespace

void print_machine() {
  char date[64];
  time_t t = time(nullptr);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
  utsname u{};
  uname(&u);
  const std::string jit = read_trimmed("/proc/sys/net/core/bpf_jit_enable");
  printf("dthrottle bench, %s\n", date);
  printf("  CPU     %s (%d possible CPUs)\n", first_line_with("/proc/cpuinfo", "model name").c_str(),
         libbpf_num_possible_cpus());
  printf("  kernel  %s %s %s\n", u.sysname, u.release, u.version);
  printf("  BPF JIT %s\n", jit == "0" ? "OFF (figures are the interpreter's!)" : ("on (" + jit + ")").c_str());
}

}  // namespace dt::bench
