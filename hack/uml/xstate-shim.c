// xstate-shim: LD_PRELOAD library for User-mode Linux (linux.uml) on hosts whose XSAVE area is
// larger than the buffer UML hands to ptrace.
//
// Why: UML 6.1 saves and restores each guest task's FPU state with
// PTRACE_GETREGSET/PTRACE_SETREGSET(NT_X86_XSTATE) using a fixed buffer of about 2.7 KB. On CPUs
// with AMX the host kernel's XSAVE layout is ~11 KB, and the host rejects smaller SET requests
// (EFAULT), so every guest process dies with "ptrace set fp regs failed, errno = 14".
//
// What: this library overrides ptrace(). For NT_X86_XSTATE requests whose buffer is smaller than
// the host size it keeps a full-size shadow buffer per UML buffer address (UML has one buffer per
// guest task):
//   GET: fetch the full state into the shadow, copy UML's prefix out;
//   SET: lay UML's prefix over the shadow, set the full size.
// Every other request goes straight to the raw syscall (keeping glibc's PEEK* convention). On
// hosts where UML's buffer is large enough (no AMX) it only forwards calls.
//
// Memory comes from mmap, never the stack: UML kernel stacks are small (16 KiB) and ptrace is
// called on them. Built by dev/internal/uml at test time with
//   gcc -O2 -shared -fPIC -o xstate-shim.so xstate-shim.c
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define QUERY_SIZE (64 * 1024) // larger than any XSAVE layout today
#define SLOTS 512              // shadow buffers kept; older ones are evicted

struct shadow {
	void *key;          // UML's buffer address (identifies a guest task)
	unsigned char *buf; // host-size shadow of the full XSAVE area
};

static struct shadow *slots;  // SLOTS entries, mmap'ed on first use
static size_t host_size;      // host XSAVE regset size; 0 = not queried yet
static int shim_disabled;     // set when the query failed: forward everything
static struct iovec full_iov; // full-size request handed to the kernel (not on the stack)

static long raw_ptrace(long req, pid_t pid, void *addr, void *data)
{
	return syscall(SYS_ptrace, req, pid, addr, data);
}

static void *map_bytes(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

// query_host_size asks the host for the full NT_X86_XSTATE size of a stopped tracee.
static void query_host_size(pid_t pid)
{
	unsigned char *big = map_bytes(QUERY_SIZE);
	struct iovec *iov = map_bytes(sizeof(*iov));
	if (big == NULL || iov == NULL) {
		shim_disabled = 1;
		return;
	}
	iov->iov_base = big;
	iov->iov_len = QUERY_SIZE;
	if (raw_ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, iov) != 0 || iov->iov_len == 0) {
		shim_disabled = 1;
		return;
	}
	host_size = iov->iov_len;
	slots = map_bytes(sizeof(struct shadow) * SLOTS);
	if (slots == NULL)
		shim_disabled = 1;
	munmap(big, QUERY_SIZE);
}

// shadow_for returns the shadow buffer for key and whether it already held state for key.
static unsigned char *shadow_for(void *key, int *fresh)
{
	size_t h = ((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull;
	size_t i, start = h % SLOTS;
	for (i = 0; i < SLOTS; i++) {
		struct shadow *s = &slots[(start + i) % SLOTS];
		if (s->key == key) {
			*fresh = 0;
			return s->buf;
		}
		if (s->key == NULL) {
			s->buf = map_bytes(host_size);
			if (s->buf == NULL)
				return NULL;
			s->key = key;
			*fresh = 1;
			return s->buf;
		}
	}
	// Table full: evict the home slot, reusing its buffer.
	slots[start].key = key;
	*fresh = 1;
	return slots[start].buf;
}

static long xstate(long req, pid_t pid, struct iovec *iov)
{
	size_t want = iov->iov_len;
	int fresh = 0;
	unsigned char *sh = shadow_for(iov->iov_base, &fresh);
	struct iovec *full;
	long rc;

	if (sh == NULL)
		return raw_ptrace(req, pid, (void *)NT_X86_XSTATE, iov);
	full = &full_iov;
	full->iov_base = sh;
	full->iov_len = host_size;

	if (req == PTRACE_GETREGSET) {
		rc = raw_ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, full);
		if (rc != 0)
			return rc;
		memcpy(iov->iov_base, sh, want);
		iov->iov_len = want;
		return 0;
	}
	// SET: a shadow that never saw a GET for this task starts from the tracee's current state.
	if (fresh) {
		rc = raw_ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, full);
		if (rc != 0)
			return rc;
		full->iov_len = host_size;
	}
	memcpy(sh, iov->iov_base, want);
	return raw_ptrace(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, full);
}

long ptrace(enum __ptrace_request request, ...)
{
	va_list ap;
	pid_t pid;
	void *addr, *data;
	long req = (long)request, ret = 0, rc;

	va_start(ap, request);
	pid = va_arg(ap, pid_t);
	addr = va_arg(ap, void *);
	data = va_arg(ap, void *);
	va_end(ap);

	if ((req == PTRACE_GETREGSET || req == PTRACE_SETREGSET) &&
	    (uintptr_t)addr == NT_X86_XSTATE && data != NULL && !shim_disabled) {
		if (host_size == 0)
			query_host_size(pid);
		if (!shim_disabled && ((struct iovec *)data)->iov_len < host_size)
			return xstate(req, pid, (struct iovec *)data);
		return raw_ptrace(req, pid, addr, data);
	}

	// glibc convention for PTRACE_PEEKTEXT/PEEKDATA/PEEKUSER: the word is the return value.
	if (req >= PTRACE_PEEKTEXT && req <= PTRACE_PEEKUSER) {
		rc = raw_ptrace(req, pid, addr, &ret);
		if (rc < 0)
			return rc;
		errno = 0;
		return ret;
	}
	return raw_ptrace(req, pid, addr, data);
}
