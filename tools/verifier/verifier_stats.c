// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * verifier_stats - what the kernel's verifier spends on each program of a BPF object:
 * loads the object (pinning off: nothing under /sys/fs/bpf) with the verifier's
 * statistics (log level 4) and prints, per program, the instructions processed (the
 * figure the verifier's 1,000,000-instruction budget is about), the states (total,
 * peak, most at one instruction) and the verification time, then the whole load's wall
 * time: what every agent start pays. If the kernel refuses the object, it is loaded
 * again at log level 1 and the end of the refused program's log says why.
 *
 *   verifier_stats OBJECT              the table
 *   verifier_stats OBJECT --log PROG   and PROG's whole log at level 2 (every
 *                                      instruction on every path: for a heat map)
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_BYTES (16u << 20)  /* per program: level 1 keeps the path being checked */
#define FULL_LOG_BYTES ((1u << 30) - 1)  /* the most the kernel takes */
#define MAX_PROGS 16

static char logs[MAX_PROGS][LOG_BYTES];

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

/* Loads `path` with every program's log at `level` (PROG `full`'s at level 2|4 into
 * `full_log`): 0 or a negative errno; the load's wall time in *seconds. */
static int load(const char *path, int level, const char *full, char *full_log, double *seconds)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	struct bpf_program *prog;
	struct bpf_map *map;
	double t0;
	int n = 0, rc;

	if (!obj) {
		fprintf(stderr, "verifier_stats: cannot open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	bpf_object__for_each_map(map, obj)
		bpf_map__set_pin_path(map, NULL);
	bpf_object__for_each_program(prog, obj) {
		if (n >= MAX_PROGS) {
			fprintf(stderr, "verifier_stats: more than %d programs\n", MAX_PROGS);
			exit(1);
		}
		logs[n][0] = 0;
		if (full && strcmp(bpf_program__name(prog), full) == 0) {
			bpf_program__set_log_level(prog, 2 | 4);
			bpf_program__set_log_buf(prog, full_log, FULL_LOG_BYTES);
		} else {
			bpf_program__set_log_level(prog, level);
			bpf_program__set_log_buf(prog, logs[n], LOG_BYTES);
		}
		n++;
	}
	t0 = seconds_now();
	rc = bpf_object__load(obj);
	*seconds = seconds_now() - t0;
	bpf_object__close(obj);
	return rc;
}

/* The names of the object's programs, in order, into names[] (the logs' order). */
static int program_names(const char *path, char names[MAX_PROGS][64])
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	struct bpf_program *prog;
	int n = 0;

	if (!obj)
		return 0;
	bpf_object__for_each_program(prog, obj)
		if (n < MAX_PROGS)
			snprintf(names[n++], 64, "%s", bpf_program__name(prog));
	bpf_object__close(obj);
	return n;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : NULL, *full = NULL;
	char names[MAX_PROGS][64], *full_log = NULL;
	double seconds, again;
	int n, i, rc;

	if (argc == 4 && strcmp(argv[2], "--log") == 0)
		full = argv[3];
	else if (argc != 2) {
		fprintf(stderr, "usage: %s OBJECT [--log PROG]\n", argv[0]);
		return 2;
	}
	if (full && !(full_log = calloc(1, FULL_LOG_BYTES))) {
		fprintf(stderr, "verifier_stats: no memory for a %u-byte log\n", FULL_LOG_BYTES);
		return 1;
	}
	n = program_names(path, names);
	rc = load(path, 4, full, full_log, &seconds);
	printf("%-16s %10s %8s %8s %8s %10s\n", "program", "insns", "states", "peak", "max/insn", "verify_us");
	for (i = 0; i < n; i++) {
		const char *log = full && strcmp(names[i], full) == 0 ? full_log : logs[i];

		printf("%-16s %10ld %8ld %8ld %8ld %10ld\n", names[i], log_number(log, "processed "),
		       log_number(log, "total_states "), log_number(log, "peak_states "),
		       log_number(log, "max_states_per_insn "), log_number(log, "verification time "));
	}
	printf("load: %.3f s (%s)\n", seconds, rc ? strerror(-rc) : "ok");
	if (full)
		fputs(full_log, stdout);
	if (!rc)
		return 0;
	/* Refused: again at level 1, whose log ends with the reason. */
	load(path, 1 | 4, NULL, NULL, &again);
	for (i = 0; i < n; i++) {
		const char *tail = logs[i] + strlen(logs[i]);
		int lines = 0;

		if (!strstr(logs[i], "processed ") || strstr(logs[i], "is safe for any args") == tail)
			continue;
		while (tail > logs[i] && lines < 25)
			lines += *--tail == '\n';
		printf("-- the end of %s's log (level 1):\n%s", names[i], tail);
	}
	return 1;
}
