// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * verifier_stats - what the kernel's verifier spends on each program of a BPF object:
 * loads the object (pinning off: nothing under /sys/fs/bpf) with the verifier's
 * statistics (log level 4) and prints, per program, the instructions processed, the
 * states (total, peak, most at one instruction) and the verification time, then the
 * whole load's wall time. The figures the verifier's 1,000,000-instruction budget is
 * about; the time is what every agent start pays.
 *
 *   verifier_stats OBJECT [--log PROG]   (--log: print PROG's whole log at level 2|4:
 *                                          every instruction on every path, for a heat map)
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_BYTES (1u << 20)
#define MAX_PROGS 64

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The value after `what` in the verifier's log (-1 if absent). */
static long log_number(const char *log, const char *what)
{
	const char *p = strstr(log, what);

	return p ? strtol(p + strlen(what), NULL, 10) : -1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : NULL, *full = NULL;
	static char logs[MAX_PROGS][LOG_BYTES / 16];
	size_t full_bytes = (1u << 30) - 1;  /* the most the kernel takes */
	char *full_log = NULL;
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	double t0, t1;
	int n = 0, rc;

	if (argc == 4 && strcmp(argv[2], "--log") == 0)
		full = argv[3];
	else if (argc != 2) {
		fprintf(stderr, "usage: %s OBJECT [--log PROG]\n", argv[0]);
		return 2;
	}
	if (full && !(full_log = calloc(1, full_bytes))) {
		fprintf(stderr, "no memory for a %zu-byte log\n", full_bytes);
		return 1;
	}
	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	bpf_object__for_each_map(map, obj)
		bpf_map__set_pin_path(map, NULL);
	bpf_object__for_each_program(prog, obj) {
		if (n >= MAX_PROGS)
			break;
		if (full && strcmp(bpf_program__name(prog), full) == 0) {
			bpf_program__set_log_level(prog, 2 | 4);
			bpf_program__set_log_buf(prog, full_log, full_bytes);
		} else {
			bpf_program__set_log_level(prog, 4);
			bpf_program__set_log_buf(prog, logs[n], sizeof(logs[n]));
		}
		n++;
	}
	t0 = seconds_now();
	rc = bpf_object__load(obj);
	t1 = seconds_now();
	printf("%-16s %10s %8s %8s %8s %10s\n", "program", "insns", "states", "peak", "max/insn", "verify_us");
	n = 0;
	bpf_object__for_each_program(prog, obj) {
		const char *log = logs[n++];

		if (full && strcmp(bpf_program__name(prog), full) == 0)
			log = full_log;
		printf("%-16s %10ld %8ld %8ld %8ld %10ld\n", bpf_program__name(prog), log_number(log, "processed "),
		       log_number(log, "total_states "), log_number(log, "peak_states "),
		       log_number(log, "max_states_per_insn "), log_number(log, "verification time "));
	}
	printf("load: %.3f s (%s)\n", t1 - t0, rc ? strerror(-rc) : "ok");
	if (full)
		fputs(full_log, stdout);
	bpf_object__close(obj);
	return rc ? 1 : 0;
}
