// simulate_options.h - the command line of build/simulate: what its options set, and the
// value parsers main needs once every option is read (hosts and clients known).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cli/options.h"
#include "sim/cluster_sim.h"

namespace dt::sim {

// What the options set; the value parsers end the program on a bad value.
struct SimArgs {
  Scenario s;
  std::vector<std::string> bursts, partitions;
  std::string offsets, pattern, recovery, example;
  Ns timeline = 0;
  std::set<std::string> given;  // "--hosts", ...: the options given
  dt::AdaptiveParams adaptive;
  double recovery_add = 200;
  bool all_rows = false;          // --all-rows
  uint64_t mixed = 0;             // --mixed-clients N
  std::string spray;              // --spray N@D
  std::string join;               // --join H@T
  std::string early = "quarter";  // --early-report D|off (default: a quarter period)
};

// N clients offering rate x 0.01 .. rate x 50, geometrically spread (client i of N).
std::vector<Client> mixed_clients(uint64_t n, double rate);

// "N@D": N clients with one request each, evenly over [0, D), appended.
void add_spray(const std::string &spec, std::vector<Client> *clients);

// Fills *args from argv. Returns -1 to go on, else the exit code (help printed, or the error).
int parse_simulate_args(int argc, char **argv, SimArgs *args);

// Prints "simulate: MSG" and the hint, exits 2.
[[noreturn]] void usage_error(const std::string &msg);
std::vector<std::string> split(const std::string &s, char sep);
// A duration; "0" (with or without a unit) too when zero_ok. `what` names the option in errors.
Ns parse_time(const std::string &s, bool zero_ok, const char *what);
// A whole number in [min, max]; `what` names the option in errors.
uint64_t parse_whole(const std::string &s, uint64_t min, uint64_t max, const char *what);
// "I:K@T": client I also sends K requests at once at time T.
void parse_client_burst(const std::string &s, std::vector<Client> *clients);
// "A-B:0|1,2": a partition of `hosts` hosts.
Partition parse_partition(const std::string &s, size_t hosts);

}  // namespace dt::sim
