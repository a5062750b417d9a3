/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --follow-forks and -- COMMAND: whether the current task descends from a
 * process, for the programs that select by process (owners, uprobes).
 */
#ifndef XDPCAP_ANCESTRY_H
#define XDPCAP_ANCESTRY_H

#include <linux/bpf.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

/* Just the members read here; CO-RE relocates them against the running
 * kernel's BTF. */
struct task_struct {
	int tgid;
	struct task_struct *real_parent;
} __attribute__((preserve_access_index));

#define MAX_ANCESTORS 32

static __always_inline int descends_from(__u32 pid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	/* A bounded loop: the verifier walks it (Linux 5.3 and later). */
	for (int i = 0; i < MAX_ANCESTORS; i++) {
		if (!task)
			return 0;
		const int tgid = BPF_CORE_READ(task, tgid);
		if ((__u32)tgid == pid)
			return 1;
		if (tgid <= 1)
			return 0;
		task = BPF_CORE_READ(task, real_parent);
	}
	return 0;
}

#endif /* XDPCAP_ANCESTRY_H */
