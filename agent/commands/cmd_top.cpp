// cmd_top.cpp - `agent top`: `agent stats` as rates, refreshed every interval.
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "cli/cli.h"
#include "commands/commands.h"
#include "commands/stats_view.h"
#include "common/program_name.h"

namespace dt {

int cmd_top(int argc, char **argv) {
  TopOptions opt;
  if (int code = parse_top_command(argc, argv, &opt); code >= 0) return code;
  std::string err;
  PinnedMaps maps;
  StatsSnapshot prev, cur;
  if (!maps.open(opt.pin_dir, &err) || !read_snapshot(maps, opt.pin_dir, &prev, &err)) {
    fprintf(stderr, "%s: %s\n", command_name("top").c_str(), err.c_str());
    return 1;
  }
  // Redraw in place only for a person at a terminal; a pipe or file gets plain frames.
  const bool tty = isatty(STDOUT_FILENO);
  for (uint64_t frame = 0; opt.count == 0 || frame < opt.count; frame++) {
    // Each frame is due one interval after the previous read, so the time spent
    // reading and printing does not make the frames drift.
    const uint64_t due = prev.taken_ns + opt.interval_ns;
    const timespec ts{static_cast<time_t>(due / 1'000'000'000), static_cast<long>(due % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
    if (!read_snapshot(maps, opt.pin_dir, &cur, &err)) {
      fprintf(stderr, "%s: %s\n", command_name("top").c_str(), err.c_str());
      return 1;
    }
    const std::string text = render_top(compute_top(prev, cur), cur.policy, opt.pin_dir, opt.top);
    if (tty) fputs("\033[H\033[2J", stdout);  // cursor home, clear screen
    else if (frame > 0) fputs("\n", stdout);
    fputs(text.c_str(), stdout);
    fflush(stdout);
    std::swap(prev, cur);
  }
  return 0;
}

}  // namespace dt
