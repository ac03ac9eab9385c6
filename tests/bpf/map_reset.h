// map_reset.h - put every map of a loaded BPF object back as a fresh load leaves it.
//
// The BPF tests load the dthrottle object once per process (its verification is most of
// a load's cost: about a second natively, tens of seconds under qemu's TCG) and reset
// its maps before each test instead: arrays zeroed, hash maps and tries emptied, the
// map-in-map slots cleared, the ring buffers drained. The object has no global data
// sections (.data/.bss/.rodata); a map type this file does not know is an error, so a
// new kind of map cannot leak one test's state into the next unnoticed.
#pragma once

#include <string>

struct bpf_object;

namespace dt::test {

// Resets every map of `obj`. Returns "" on success, or what could not be reset.
std::string reset_object_maps(bpf_object *obj);

}  // namespace dt::test
