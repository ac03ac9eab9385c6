// parts.h - the parts of `bench`, each printing its own table (main.cpp runs them in order).
#pragma once

namespace dt::bench {

void print_machine();      // machine.cpp: CPU, kernel, BPF JIT
void per_packet_part();    // packet.cpp: Part 1, `bench packet`
void hook_part();          // hook.cpp: Part 1b, `bench hook`
void prefix_flood_part();  // flood.cpp: Part 1c, `bench flood`
void lists_part();         // lists.cpp: Part 1d, `bench lists`
void match_part();         // match.cpp: Part 1e, `bench match`
void capture_part();       // capture.cpp: Part 1f, `bench capture`
void ablate_part();        // ablate.cpp: Part 1g, `bench ablate`
void syncookie_part();     // cookie.cpp: Part 1h, `bench cookies`
void multi_part();         // multi.cpp: Part 1i, `bench multi`
void per_period_part();    // period.cpp: Part 2, `bench period`
void report_codec_part();  // report.cpp: Part 3, `bench report`
void under_attack_part();  // attack.cpp: Part 4, `bench attack`

}  // namespace dt::bench
