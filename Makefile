# dthrottle - distributed packet throttler for edge hosts.
#
#   make          build everything into build/ (agent: build/agent), in parallel, as any user;
#                 installs nothing: names the Debian packages missing (make deps installs them)
#   make build/agent  one program only (build/unit_tests, build/pktgen...; DEVELOPING.md)
#   make test     install what is missing, build, then run every test suite (root: BPF, XDP, netns)
#   make test-kernel  the BPF and netns suites on Debian 12's stock kernel (6.1), booted
#                 under qemu (KVM if it works, else TCG): over an hour on TCG; installs qemu and
#                 busybox, unpacks linux-image-amd64 into build/kernel (writes nothing else)
#   make demo     install what it needs, build the agent and pktgen only, throttle real
#                 packets on a built-in lab of network namespaces (chart: build/demo.png)
#   make plot     redraw build/demo.png from the last demo's build/demo.dat
#   make bench    per-packet cost vs a baseline program, agent cost per period, under attack
#   make bench-cluster  40 real agents in namespaces, mesh and hub: accuracy, CPU, report bytes
#   make deps     install missing Debian packages (apt-get; scripts/deps.sh has the list)
#   make install  the agent as $(PREFIX)/sbin/dthrottle-agent, the systemd units
#                 dthrottle@.service and dthrottle-crowdsec@.service (docs/crowdsec.md),
#                 /etc/dthrottle/eth0.conf.example (DESTDIR, PREFIX)
#   make uninstall
#   make man      the man pages (pandoc, from man/*.md) into build/man/
#   make deb      build/dthrottle_VERSION_amd64.deb (debhelper; lintian's output in build/lintian.txt)
#
#   ARCH=arm64    cross-compiles on amd64 (aarch64-linux-gnu-g++, multiarch :arm64 -dev packages,
#                 which `make deps ARCH=arm64` installs) into build/arm64/, never mixed with
#                 build/: `make deb ARCH=arm64` gives build/dthrottle_VERSION_arm64.deb,
#                 `make test-kernel ARCH=arm64` boots Debian's arm64 kernel under
#                 qemu-system-aarch64 (docs/arm64.md). Plain make and make test need none of it.
#   make test-deb install that package on this machine, run it, purge it, find nothing left

VERSION   := 0.1.0
CLANG     ?= clang
BPFTOOL   ?= bpftool
CXX       ?= g++
CLANGXX   ?= clang++
PKG_CONFIG ?= pkg-config
include mk/arch.mk
OBJ       := $(BUILD)/obj

BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -Wall -Werror \
              -Iinclude -Ibpf -I$(ARCH_INC)
CXXFLAGS   ?= -O2 -g
CXXFLAGS   += -std=c++20 -Wall -Wextra -Werror -MMD -MP -Iinclude -Iagent -I$(BUILD) \
              -DDTHROTTLE_VERSION='"$(VERSION)"'
# libxdp (--attach xdp-multi) only in the programs that use the dataplane (--as-needed).
LDLIBS     := -Wl,--push-state,--as-needed -lxdp -Wl,--pop-state -lbpf -lelf -lz -lzmq -lsodium -lcpp-httplib -lhiredis -lcap -lnftables -lpthread
# Debian's cpp-httplib is a compiled library: its header must see the feature macros
# the library was built with (they change class layouts; TLS itself is never used).
HTTPLIB_CFLAGS = $(or $(shell $(PKG_CONFIG) --cflags cpp-httplib),$(error $(PKG_CONFIG) knows no cpp-httplib: run make deps$(if $(CROSS), ARCH=$(ARCH))))
GTEST_LIBS := -lgtest -lgtest_main -lpthread

AGENT_SRCS := $(wildcard agent/*/*.cpp)
SIM_SRCS   := $(wildcard tools/scenario/*.cpp tools/sim/*.cpp)
BENCH_SRCS := $(wildcard tools/bench/*.cpp)
PKTGEN_SRCS := $(wildcard tools/pktgen/*.cpp)
AGENT_OBJS := $(AGENT_SRCS:%.cpp=$(OBJ)/%.o)
UNIT_SRCS  := $(wildcard tests/unit/*.cpp)
BPFT_SRCS  := $(wildcard tests/bpf/*.cpp)
BPF_HDRS   := $(wildcard bpf/*.h) $(wildcard include/dthrottle/*.h) $(wildcard include/dthrottle/abi/*.h)

PROGRAMS := $(BUILD)/agent $(BUILD)/unit_tests $(BUILD)/bpf_tests $(BUILD)/pktgen $(BUILD)/bench \
            $(if $(CROSS),,$(BUILD)/fuzz_report) $(BUILD)/fuzz_make_seeds \
            $(BUILD)/simulate $(BUILD)/query_bench $(BUILD)/query_serve $(BUILD)/strict_bench \
            $(BUILD)/verifier_stats

.PHONY: all check-deps deps deps-demo test test-kernel demo bench clean install uninstall
.SECONDARY:
# The programs build in parallel, one job a CPU, unless the caller gave -j itself (make's
# flags are known in a recipe only, not while the Makefile is read).
JOBS = $$(case " $$MAKEFLAGS " in *" -j"*|*jobserver*) ;; *) echo -j$$(nproc 2>/dev/null || echo 1) ;; esac)
all: check-deps
	@$(MAKE) --no-print-directory $(JOBS) $(PROGRAMS)

# Plain make installs nothing, so it runs as any user: it names the Debian packages the build
# lacks (and the command that installs them) before a compiler error would.
check-deps:
	@scripts/deps.sh --check build $(DEPS_CROSS)

# Installing is for the targets a newcomer runs as root (test, demo, bench...), before they build.
deps:
	@scripts/deps.sh all $(DEPS_CROSS)

deps-demo:
	@scripts/deps.sh demo

# --- BPF objects and their skeletons ------------------------------------------------
$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst .,_,$*)_bpf > $@.tmp && mv $@.tmp $@

# Bench only: dt_xdp with one part of the admitted path left out (bpf/ablate.h), each built
# from the same source, read by `bench ablate` from build/ablate/ at run time.
ABLATE_PARTS := CLOCK BOUND CONFIG POLICY COUNTERS CALL KEY TOUCH PASSED PCPU SCREEN CAPTURE OWNER FLOOR
ABLATE_OBJS := $(ABLATE_PARTS:%=$(BUILD)/ablate/%.bpf.o)
$(BUILD)/ablate/%.bpf.o: bpf/dthrottle.bpf.c $(BPF_HDRS)
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -DDT_ABLATE=DT_ABLATE_$* -c $< -o $@

# Only the objects that include a skeleton wait for it (and rebuild when it changes);
# any other object is untouched by a BPF edit.
$(OBJ)/agent/dataplane/dataplane.o $(OBJ)/agent/dataplane/dataplane_multi.o $(OBJ)/tests/bpf/bpf_fixture.o \
  $(OBJ)/tests/bpf/test_map_catalog.o \
  $(OBJ)/tests/bpf/test_pin_layout.o: $(BUILD)/dthrottle.skel.h
$(OBJ)/tools/bench/programs.o: $(BUILD)/dthrottle.skel.h $(BUILD)/bench.skel.h
$(OBJ)/tools/bench/multi.o: $(BUILD)/dthrottle.skel.h

# --- C++ ------------------------------------------------------------------------
$(OBJ)/%.o: %.cpp | $(BUILD)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

$(OBJ)/agent/metrics/metrics.o: CXXFLAGS += $(HTTPLIB_CFLAGS)
$(OBJ)/agent/crowdsec/lapi_client.o $(OBJ)/tests/unit/test_crowdsec_bouncer.o: CXXFLAGS += $(HTTPLIB_CFLAGS)
# Tools and tests may use the simulator (tools/sim); the agent may not.
$(OBJ)/tools/%.o $(OBJ)/tests/%.o: CXXFLAGS += -Itools

$(BUILD)/libdtagent.a: $(AGENT_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

# The cluster simulator: a library of its own for build/simulate and its tests.
$(BUILD)/libdtsim.a: $(SIM_SRCS:%.cpp=$(OBJ)/%.o)
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/agent: $(OBJ)/agent/main.o $(BUILD)/libdtagent.a
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/unit_tests: $(UNIT_SRCS:%.cpp=$(OBJ)/%.o) $(BUILD)/libdtsim.a $(BUILD)/libdtagent.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(GTEST_LIBS) $(LDLIBS)

$(BUILD)/bpf_tests: $(BPFT_SRCS:%.cpp=$(OBJ)/%.o) $(BUILD)/libdtagent.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(GTEST_LIBS) $(LDLIBS)

$(BUILD)/pktgen: $(PKTGEN_SRCS:%.cpp=$(OBJ)/%.o) $(BUILD)/libdtagent.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bench: $(BENCH_SRCS:%.cpp=$(OBJ)/%.o) $(BUILD)/libdtagent.a | $(ABLATE_OBJS)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/simulate: $(OBJ)/tools/simulate.o $(OBJ)/tools/simulate_options.o $(BUILD)/libdtsim.a $(BUILD)/libdtagent.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/query_bench: $(OBJ)/tools/query_bench.o $(BUILD)/libdtagent.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/query_serve: $(OBJ)/tools/query_serve.o $(BUILD)/libdtagent.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/strict_bench: $(OBJ)/tools/strict_bench.o $(BUILD)/libdtagent.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# What the kernel's verifier spends on each program of a BPF object (docs/internals.md).
$(BUILD)/verifier_stats: tools/verifier/verifier_stats.c | $(BUILD)
	$(CC) -O2 -g -Wall -Wextra -Werror -o $@ $< -lbpf

# The report decoder under libFuzzer with ASan and UBSan (clang).
FUZZ_FLAGS := -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
              -Iinclude -Iagent
FUZZ_SRCS  := agent/cluster_core/peer_decode.cpp agent/cluster_core/peer_encode.cpp agent/common/address.cpp \
  agent/common/report_types.cpp agent/bans/ban_types.cpp agent/common/parse_values.cpp
$(BUILD)/fuzz_report: tests/fuzz/fuzz_report.cpp $(FUZZ_SRCS) agent/cluster_core/peer_protocol.h agent/cluster_core/peer_wire.h | $(BUILD)
	$(CLANGXX) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_report.cpp $(FUZZ_SRCS)

$(BUILD)/fuzz_make_seeds: $(OBJ)/tests/fuzz/make_seeds.o $(BUILD)/libdtagent.a
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD):
	@mkdir -p $@

# --- Top-level jobs ---------------------------------------------------------------
test: deps
	@$(MAKE) --no-print-directory all
	@tests/run_all.sh

# The same suites on the distribution's kernel: tests/kernel/run.sh boots it over a
# read-only view of / (DT_KERNEL_SUITES=bpf,test_rules picks suites; see its header).
test-kernel: deps
	@$(MAKE) --no-print-directory all
	@scripts/kernel-deps.sh $(ARCH)
	@tests/kernel/run.sh $(ARCH)

# The demo needs the agent and the packet generator only, not the tests, benches and fuzzers,
# nor the packages only they need (deps-demo: the agent's build and the lab's tools).
demo: deps-demo
	@$(MAKE) --no-print-directory $(JOBS) $(BUILD)/agent $(BUILD)/pktgen
	@scripts/demo.sh

# The demo's chart, redrawn from its data (e.g. after editing scripts/plot.gnuplot).
.PHONY: plot
plot:
	@test -f $(BUILD)/demo.dat || { echo "plot: no $(BUILD)/demo.dat: run make demo first" >&2; exit 1; }
	@command -v gnuplot >/dev/null || { echo "plot: gnuplot is missing: run make deps" >&2; exit 1; }
	@gnuplot -e "data='$(BUILD)/demo.dat'; out='$(BUILD)/demo.png'" scripts/plot.gnuplot
	@echo "chart: $(BUILD)/demo.png"

bench: deps
	@$(MAKE) --no-print-directory all
	@$(BUILD)/bench
	@$(BUILD)/query_bench
	@$(BUILD)/strict_bench
	@echo; echo "Global accuracy: the 3-host lab (admitted / global budget per source, alone and as a cluster)"
	@scripts/demo.sh
	@$(MAKE) --no-print-directory bench-cluster

# 40 agents in network namespaces (a few minutes; root), under the netns lock the suites use.
.PHONY: bench-cluster
bench-cluster: deps
	@$(MAKE) --no-print-directory all
	@flock /tmp/dthrottle-netns.lock tests/netns/bench_cluster.sh

clean:
	rm -rf $(BUILD)

# --- Install (PREFIX=/usr/local; DESTDIR stages into a directory) ------------------------
# The unit goes where systemd looks for units of PREFIX (/usr/local/lib/systemd/system
# is on its path); configuration stays in /etc/dthrottle whatever PREFIX is.
PREFIX  ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
UNITDIR ?= $(PREFIX)/lib/systemd/system
CONFDIR ?= /etc/dthrottle

UNITS := $(patsubst packaging/%.in,%,$(wildcard packaging/*.service.in))
# MANDOC=1 (the package, which installs the man pages): the units' Documentation= lines
# (@MANDOC@) are kept; without it they are dropped, since systemd-analyze verify checks
# that the pages they name are there.
MANDOC_SED := $(if $(filter 1,$(MANDOC)),-e 's|^@MANDOC@||',-e '/^@MANDOC@/d')
install: $(BUILD)/agent
	install -D -m 0755 $(BUILD)/agent $(DESTDIR)$(SBINDIR)/dthrottle-agent
	install -d -m 0755 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(CONFDIR)
	# Every unit: the agent's template, the hub's, the CrowdSec bouncer's (packaging/*.service.in).
	for unit in $(UNITS); do \
		sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@CONFDIR@|$(CONFDIR)|g' $(MANDOC_SED) packaging/$$unit.in \
			> $(DESTDIR)$(UNITDIR)/$$unit && chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit || exit 1; \
	done
	install -m 0644 packaging/dthrottle.conf.example $(DESTDIR)$(CONFDIR)/eth0.conf.example
	@echo "next: systemctl daemon-reload; cp $(CONFDIR)/eth0.conf.example $(CONFDIR)/eth0.conf;" \
	      "systemctl enable --now dthrottle@eth0"

# Removes what install put there; the operators' $(CONFDIR)/*.conf stay.
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/dthrottle-agent $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS)) \
	      $(DESTDIR)$(CONFDIR)/eth0.conf.example
	-rmdir --ignore-fail-on-non-empty $(DESTDIR)$(CONFDIR)

# --- Man pages and the Debian package ---------------------------------------------------
# One Markdown source each (man/NAME.SECTION.md); tests/packaging checks dthrottle-agent(8)
# against every subcommand's --help.
# Architecture-independent: always build/man, whatever ARCH is.
MAN_PAGES := $(patsubst man/%.md,build/man/%,$(wildcard man/*.md))
MAN_DATE  := $(shell git log -1 --format=%cs 2>/dev/null)
.PHONY: man deb test-deb
man: $(MAN_PAGES)
build/man/%: man/%.md
	@command -v pandoc >/dev/null || { echo "man: pandoc is missing: run make deps" >&2; exit 1; }
	@mkdir -p $(dir $@)
	pandoc -s -f markdown-smart -t man -M footer="dthrottle $(VERSION)" -M date="$(MAN_DATE)" $< -o $@

# Built from a copy of the tree in build/deb (scripts/make_deb.sh); lintian in build/lintian.txt.
deb:
	@$(if $(CROSS),scripts/deps.sh $(DEPS_CROSS))
	@scripts/make_deb.sh $(VERSION) $(ARCH)

# Installs the package on this machine, runs it, purges it and finds nothing left (root).
ifeq ($(CROSS),)
test-deb: deb
	@scripts/test_deb.sh build/dthrottle_$(VERSION)_$(ARCH).deb
else
test-deb:
	@echo "test-deb: installs the package on this machine, which is $(NATIVE_ARCH), not $(ARCH):" \
	      "make test-kernel ARCH=$(ARCH) runs the $(ARCH) programs in a guest" >&2; exit 1
endif

# The compiler's dependency files are in $(OBJ) only: not those of another ARCH's build/ARCH/
# nor of make deb's copy (nor the *.d directories of a guest's root in build/ARCH/rootfs).
-include $(shell find $(OBJ) -name '*.d' -type f 2>/dev/null)
