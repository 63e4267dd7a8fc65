// SPDX-License-Identifier: GPL-2.0
/*
 * hil-exit CODE - ends the arm64 hardware-in-loop guest's QEMU with an exit status the host trusts.
 *
 * The arm64 twin of the x86_64 rig's isa-debug-exit: an Arm semihosting SYS_EXIT (operation 0x18,
 * `hlt #0xf000`) with the reason ADP_Stopped_ApplicationExit and the subcode (CODE << 1) | 1, so
 * QEMU exits with 1 (the guest's 0: all passed) or 3 (the guest's 1: a check failed), the same
 * statuses as on x86_64. A power-off or a kernel panic ends QEMU with 0, which no guest code can
 * produce here. QEMU must run with `-semihosting-config enable=on,userspace=on` (the call comes
 * from user space); without it the instruction is undefined, the program dies of SIGILL and /init
 * falls back to a power-off, which the host counts as a rig failure.
 *
 * Freestanding (no C library in the cross toolchain, none needed): scripts/hil/run.sh builds it with
 * aarch64-linux-gnu-gcc -nostdlib -static.
 */
#define SEMIHOSTING_SYS_EXIT 0x18UL
#define ADP_STOPPED_APPLICATION_EXIT 0x20026UL

void hil_exit_main(unsigned long *stack);

/* The kernel starts a static program with argc, then the argv pointers, at the stack pointer. */
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	mov x0, sp\n"
	"	bl hil_exit_main\n"
	"1:	b 1b\n");

static void semihosting_exit(unsigned long subcode)
{
	unsigned long block[2] = { ADP_STOPPED_APPLICATION_EXIT, subcode };
	register unsigned long operation __asm__("x0") = SEMIHOSTING_SYS_EXIT;
	register unsigned long parameters __asm__("x1") = (unsigned long)block;

	__asm__ volatile("hlt #0xf000" : "+r"(operation) : "r"(parameters) : "memory");
}

/* Leaves the process with `status` (exit_group), for when semihosting returned after all. */
static void process_exit(unsigned long status)
{
	register unsigned long number __asm__("x8") = 94; /* __NR_exit_group */
	register unsigned long argument __asm__("x0") = status;

	__asm__ volatile("svc #0" : : "r"(number), "r"(argument) : "memory");
}

void hil_exit_main(unsigned long *stack)
{
	unsigned long argc = stack[0];
	const char *text = argc == 2 ? (const char *)stack[2] : "";
	unsigned long code = 0;

	/* A decimal code: 0 is a pass, anything else a failure (and a usage error is 1). */
	if (argc != 2 || text[0] < '0' || text[0] > '9')
		code = 1;
	else
		for (; *text >= '0' && *text <= '9'; text++)
			code = code * 10 + (unsigned long)(*text - '0');
	if (code > 127)
		code = 1;
	semihosting_exit((code << 1) | 1);
	process_exit(125);
}
