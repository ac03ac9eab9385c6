# mk/arch.mk - the architecture the build is for (included by the Makefile).
#
# ARCH is a Debian architecture name (amd64, arm64); it defaults to this machine's. When it is
# another one the build is a cross build: the GNU toolchain of that triplet
# (aarch64-linux-gnu-g++ from g++-aarch64-linux-gnu), the libraries and headers of Debian's
# multiarch :ARCH -dev packages, and its own directory build/ARCH/, so the two builds' objects
# never mix. The BPF object is built by the same clang -target bpf either way, against the
# UAPI headers of ARCH's triplet (asm/ types from linux-libc-dev:ARCH).
NATIVE_ARCH := $(or $(shell dpkg --print-architecture 2>/dev/null),amd64)
ARCH        ?= $(NATIVE_ARCH)
TRIPLET_amd64 := x86_64-linux-gnu
TRIPLET_arm64 := aarch64-linux-gnu
TRIPLET     := $(or $(TRIPLET_$(ARCH)),$(error ARCH=$(ARCH): dthrottle builds for amd64 or arm64))
ARCH_INC    := /usr/include/$(TRIPLET)

ifeq ($(ARCH),$(NATIVE_ARCH))
CROSS       :=
BUILD       := build
else
CROSS       := $(TRIPLET)-
BUILD       := build/$(ARCH)
# Not ?=: make's built-in CXX, CC and AR would win. A command-line CXX=... still does.
CXX         := $(CROSS)g++
CC          := $(CROSS)gcc
AR          := $(CROSS)ar
# Only ARCH's .pc files (cpp-httplib's feature macros are ARCH's build of the library).
PKG_CONFIG  := PKG_CONFIG_LIBDIR=/usr/lib/$(TRIPLET)/pkgconfig:/usr/share/pkgconfig pkg-config
# scripts/deps.sh's group of the cross toolchain and ARCH's -dev packages.
DEPS_CROSS  := cross-$(ARCH)
endif
