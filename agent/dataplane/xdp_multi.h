// xdp_multi.h - --attach xdp-multi: dt_xdp as one program of libxdp's dispatcher.
//
// libxdp (the library behind xdp-loader, xdp-filter and others) shares an interface's XDP
// hook through a dispatcher program that calls each of its programs in turn, by run priority
// (lower first), and goes on to the next one while a program returns one of its chain-call
// actions. Each program is loaded as an extension (freplace, BPF_PROG_TYPE_EXT) of one of
// the dispatcher's slots, and libxdp pins the dispatcher and its links under
// /sys/fs/bpf/xdp/: a program stays attached when the process that attached it dies.
//
// dthrottle joins at run priority kXdpMultiPriority with XDP_PASS as its only chain-call
// action: what it admits goes on to the next program, what it drops (or answers, XDP_TX)
// ends there. A kernel that refuses extension programs cannot run the dispatcher; libxdp
// would then attach the program alone instead, which this mode never accepts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct bpf_object;
struct xdp_program;

namespace dt {

inline constexpr unsigned kXdpMultiPriority = 50;  // libxdp's default; xdp-filter runs at 10
inline constexpr const char *kXdpProgName = "dt_xdp";

// Why --attach xdp-multi cannot work on this kernel ("" if it can): a probe load of an
// extension program, the kind the dispatcher needs.
std::string xdp_multi_refusal();

// The ids of the dt_xdp programs in the dispatcher of ifindex (a previous agent's).
std::vector<uint32_t> xdp_multi_ours(int ifindex);

// Attaches obj's (not yet loaded) dt_xdp to the dispatcher of ifindex (libxdp makes one if
// the hook is free), beside the dt_xdp programs that were there before (their ids in
// *previous): the caller makes the new one the owner of the frames, then detaches those
// (xdp_multi_retire), so the new one enforces before the old ones go. False with a
// sentence in *err; never leaves the program attached without a dispatcher. With frags,
// dt_xdp declares multi-buffer support (the dispatcher has it if every program in it does).
bool xdp_multi_attach(bpf_object *obj, int ifindex, const std::string &iface, bool frags, xdp_program **out,
                      std::vector<uint32_t> *previous, std::string *err);
// Detaches the previous dt_xdp programs xdp_multi_attach found, saying so.
void xdp_multi_retire(int ifindex, const std::string &iface, const std::vector<uint32_t> &previous);

// Detaches the given programs from the dispatcher of ifindex (the dispatcher goes with the
// last one); returns how many were detached.
int xdp_multi_detach_ids(int ifindex, const std::vector<uint32_t> &ids);
// Detaches prog (ours) and frees it.
void xdp_multi_detach(xdp_program *prog, int ifindex);
void xdp_multi_close(xdp_program *prog);

}  // namespace dt
