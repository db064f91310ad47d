// SPDX-License-Identifier: GPL-2.0
/*
 * opinfo_guard.c - a kprobe that makes ksmbd's opinfo_put(NULL) a no-op.
 *
 * Theory of operation: every Debian 6.1 kernel tried (6.1.170 to 6.1.192)
 * has a ksmbd whose smb2_open() ends with opinfo_put(opinfo) even when the
 * open got no oplock and opinfo is NULL, which is the case for every
 * directory: a client's first open, that of the share's root, Oopses at
 * opinfo_put+0x5 and the server is gone. Upstream fixed this by testing
 * for NULL in opinfo_put() itself. This module does the same from outside:
 * a kprobe on opinfo_put's first instruction looks at the first argument
 * (rdi on x86-64) and, when it is NULL, moves the instruction pointer to
 * an empty function, so that opinfo_put returns at once to its caller; a
 * non-NULL argument runs the real function untouched. It is the technique
 * of the kernel's fail_function (override_function_with_return), without
 * needing CONFIG_FUNCTION_ERROR_INJECTION on this symbol.
 *
 * Built by tests/guest/build.sh against the kernel's own linux-headers,
 * downloaded and unpacked in the fixture's cache, never installed.
 */
#include <linux/kprobes.h>
#include <linux/module.h>

/**
 * guard_return() - where a NULL call of opinfo_put() is sent instead.
 *
 * Reached with the caller's return address on the stack (the kprobe fires
 * before opinfo_put has pushed anything), so its ret goes back to the
 * caller of opinfo_put.
 */
static noinline notrace void guard_return(void)
{
	asm volatile("");
}

/**
 * guard_pre() - the kprobe's handler, run before opinfo_put's first insn.
 * @p: the kprobe.
 * @regs: the registers at the probe.
 *
 * Return: 0 to let opinfo_put run (non-NULL argument); 1 after moving the
 * instruction pointer, which tells kprobes not to single-step the probed
 * instruction.
 */
static int guard_pre(struct kprobe *p, struct pt_regs *regs)
{
	if (regs->di)
		return 0;
	regs->ip = (unsigned long)guard_return;
	return 1;
}

static struct kprobe guard_probe = {
	.symbol_name = "opinfo_put",
	.pre_handler = guard_pre,
};

/**
 * guard_init() - arm the probe; fails (and the module with it) when ksmbd,
 * which holds opinfo_put, is not loaded.
 *
 * Return: 0 or register_kprobe()'s error.
 */
static int __init guard_init(void)
{
	return register_kprobe(&guard_probe);
}

/**
 * guard_exit() - disarm the probe.
 */
static void __exit guard_exit(void)
{
	unregister_kprobe(&guard_probe);
}

module_init(guard_init);
module_exit(guard_exit);
MODULE_DESCRIPTION("smbsplice test guests: ksmbd opinfo_put(NULL) guard");
MODULE_LICENSE("GPL");
