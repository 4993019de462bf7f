/*
 * polymagic emulator runtime (inlined into every emulator translation unit by
 * polymagic/codegen/emulator.py; the source hash that keys the build cache
 * therefore covers this file too).
 *
 * The generated kernels are thread-centric (Baskaran et al., seed 004 §4.3):
 * every CUDA thread runs the whole kernel body with its own threadIdx/blockIdx,
 * and __syncthreads() separates the copy-in, compute and copy-out phases.  This
 * runtime executes exactly that model on the CPU, adversarially:
 *
 *  - Blocks of a launch run one after the other in a chosen order (forward,
 *    reversed, or a seeded shuffle).  Within a block, threads run as plain
 *    sequential calls when the kernel has no barrier, else as ucontext
 *    coroutines: PM_SYNC(id) yields; a barrier phase ends when every thread has
 *    yielded or finished; the next phase runs the threads again (reshuffled in
 *    shuffle order).  Threads waiting at different barriers, or waiting while
 *    others finished, is "barrier reached under divergent control".
 *  - Every global and shared access is checked (emulate mode): the index of each
 *    dimension and the linear element offset must be in bounds; shadow state per
 *    element (pm_cell) finds races: two threads of one block touching an element
 *    in one barrier phase with at least one write, or two blocks of one launch
 *    touching a global element with at least one write.  Shared reads of elements
 *    no thread of the block wrote since the block began are errors too (reported
 *    at the end of the phase, so that a missing barrier is reported as the race
 *    it is rather than as an uninitialised read).
 *  - Global element loads/stores and launches are counted per kernel.
 *  - Warp transactions (optional, pm_entry's tx argument): the global accesses of
 *    the 32 threads of a warp (consecutive linear thread ids, x fastest) at one
 *    access site (one array reference of the generated code) form one request;
 *    its 32-byte sectors and 128-byte lines are counted (seed 003 §6.3's
 *    transactions per request).  See "warp transactions" below.
 *  - Errors format one paragraph and longjmp back to pm_entry (from a coroutine
 *    the thread first switches back to the scheduler's stack).
 *  - Interrupts: pm_guard_stop is set by the fault guard's SIGINT handler
 *    (polymagic/runtime/guard.py) while a call runs; PM_POLL() checks it before
 *    every launch, block and thread's turn in a phase, and (emulate mode) every
 *    checked global access, and ends the run like an error (pm_entry returns 2):
 *    a notebook's stop button takes effect within milliseconds, on every OpenMP
 *    thread (openmp mode: within one thread turn, which in a kernel that runs a
 *    whole loop nest in one thread is the whole run).
 *
 * PM_MODE_OPENMP selects the fast CPU target instead: blocks of a launch spread
 * over cores with "#pragma omp parallel for", scheduler state and shared buffers
 * per OS thread (_Thread_local), no shadow checks and no load/store counters.
 *
 * Shadow state: blocks and barrier phases get run-wide serial numbers (B, P);
 * a cell records the last writer (block, phase, thread), the last reader, an
 * earlier reader from another block of the same launch (rx) and a second
 * reader thread of the last reader's phase (rmp/rmt).  Because blocks run one
 * at a time and phases only increase, this is exact: a write conflicts with some
 * earlier read of the launch iff it conflicts with the last reader, rx, or rmt.
 * Only serials >= the launch's first block serial (lf) count, so no state needs
 * clearing between launches; shared buffers use lf = B (the block itself).
 */
#ifndef PM_EMU_SUPPORT_H
#define PM_EMU_SUPPORT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#ifdef PM_MODE_OPENMP
#define PM_CHECKS 0
#define PM_TLS _Thread_local
#else
#define PM_CHECKS 1
#define PM_TLS
#endif

#ifndef PM_MAX_PHASES
#define PM_MAX_PHASES 10000000LL   /* barrier phases per block before we give up */
#endif
#ifndef PM_STACK_SIZE
#define PM_STACK_SIZE (64 * 1024)  /* coroutine stack per emulated thread */
#endif
#define PM_MAXDIM 8
#define PM_MSG 2048
#define PM_UNUSED __attribute__((unused))

/* Set by the guard's SIGINT handler during a call (see "Interrupts" above). */
#define PM_GUARD_STOP_DECLARED 1
static volatile sig_atomic_t pm_guard_stop;

/* Helper macros of generated code (single evaluation of every argument, so that
 * loads inside min/max are counted and checked once; values as in CUDA). */
#define pm_min(a, b) __extension__({ __auto_type pm_a_ = (a); __auto_type pm_b_ = (b); \
                                     pm_a_ < pm_b_ ? pm_a_ : pm_b_; })
#define pm_max(a, b) __extension__({ __auto_type pm_a_ = (a); __auto_type pm_b_ = (b); \
                                     pm_a_ > pm_b_ ? pm_a_ : pm_b_; })
#define pm_floord(n, d) __extension__({ __auto_type pm_n_ = (n); __auto_type pm_d_ = (d); \
        (pm_n_ / pm_d_) - (((pm_n_ % pm_d_) != 0) && ((pm_n_ < 0) != (pm_d_ < 0))); })
#define pm_mod(a, b) __extension__({ __auto_type pm_a_ = (a); __auto_type pm_b_ = (b); \
                                     ((pm_a_ % pm_b_) + pm_b_) % pm_b_; })
#define PM_HELPER_MACROS 1

/* ---- descriptors (generated code fills these) --------------------------------- */

typedef struct pm_shared_desc {
  const char *name;
  size_t elem_size;
  int ndim;
  long long ext[PM_MAXDIM];
  long long nelem;
} pm_shared_desc;

struct pm_thread;
typedef void (*pm_body_fn)(const void *args, struct pm_thread *t);

typedef struct pm_kernel_desc {
  const char *name;
  int kid;                      /* index into the counters (Program.kernels order) */
  int has_barrier;
  int block[3];
  int nshared;
  const pm_shared_desc *shared;
  pm_body_fn body;
  int nsites;                   /* global access sites of the body (warp transactions) */
  long long dynamic_shared;     /* bytes of dynamic shared memory (0: static buffers) */
} pm_kernel_desc;

/* What a thread body sees of its block. */
typedef struct pm_blockctx {
  int bx, by, bz, nbx, nby, nbz, ntx, nty, ntz;
  void **shared;                /* one buffer per Kernel.shared entry */
} pm_blockctx;

enum { PM_RUN = 0, PM_WAIT = 1, PM_DONE = 2, PM_ERR = 3 };

typedef struct pm_thread {
  int tx, ty, tz, lin;
  const pm_blockctx *blk;
  int state, bar;
  char *stack;                  /* coroutine stack (barrier kernels only) */
  ucontext_t uc;
} pm_thread;

/* Shadow state of one element (44 bytes). */
typedef struct pm_cell {
  uint32_t wb, wp;              /* last write: block serial, phase serial */
  uint32_t rb, rp;              /* last read */
  uint32_t rx;                  /* a reader block of this launch before the last reader's block */
  uint32_t rmp;                 /* phase serial with >= 2 reader threads */
  uint32_t ab, ap;              /* last atomic update (atomicAdd/Max/Min): block, phase */
  uint16_t wt, rt, rxt, rmt;    /* threads of the above (rmt != rt) */
  uint16_t at;                  /* thread of the last atomic update */
} pm_cell;

typedef struct pm_array_info {
  const char *name;
  int ndim;
  long long ext[PM_MAXDIM];
  long long span;               /* elements the strided layout spans */
  pm_cell *shadow;
  long long esize;              /* bytes per element */
  long long base;               /* device byte offset of element 0 from its allocation */
} pm_array_info;

/* Warp transactions: the byte addresses one thread accessed at one access site
 * in the current barrier phase, its k-th execution at addr[k]. */
typedef struct pm_txbucket {
  long long *addr;
  int cap, n;                   /* occurrences allocated, used */
} pm_txbucket;

#ifndef PM_TX_MAX_BYTES
#define PM_TX_MAX_BYTES (256LL << 20)   /* bucket memory before counting gives up */
#endif

/* ---- state ---------------------------------------------------------------------- */

/* Run-wide state, written by the calling (master) thread. */
static struct {
  jmp_buf jb;                   /* pm_entry's */
  char msg[PM_MSG];
  volatile int failed;
  unsigned long long seed;
  int order;                    /* 0 forward, 1 reverse, 2 shuffle */
  long long *counters;          /* 3 per kernel: loads, stores, launches */
  int nkernels;
  pm_array_info *arrays;
  int narrays;
  const pm_kernel_desc *kd;     /* kernel of the current launch */
  long long launch_no;          /* launches so far (all kernels) */
  long long grid[3];
  long long *perm;              /* block order of the current launch (emulate) */
  long long perm_cap;
  uint32_t next_block, next_phase, lf;
  void **sh_data;               /* shared buffers (emulate: one set) */
  pm_cell **sh_shadow;
  long long *sh_cap;            /* elements of each shadow */
  size_t *sh_bytes;             /* bytes of each data buffer */
  int nsh_cap;
  /* warp transactions (emulate mode, when pm_entry gets a tx array) */
  long long *tx;                /* 6 per kernel: load requests, sectors, lines; store ... */
  const long long *tx_base;     /* per array: byte offset of element 0 (NULL: 0) */
  int tx_overflow;              /* gave up: more than PM_TX_MAX_BYTES of buckets */
  pm_txbucket *txb;             /* [(warp * nsites + site) * 32 + lane] of the running block */
  long long txb_cap;
  signed char *tx_mode;         /* per site: 0 load, 1 store, 2 both */
  int *tx_esize;                /* per site: element bytes */
  int tx_sites_cap;
  long long tx_bytes;           /* bucket memory in use */
  int tx_nt, tx_ns;             /* threads and sites of the running block */
} pm_G;

/* Scheduler state, one per OS thread (openmp) or one (emulate). */
typedef struct pm_sched {
  ucontext_t uc;                /* the scheduler's own context */
  pm_thread **threads;          /* slots, each allocated once (ucontext_t must not move) */
  int nslots;
  int *order;
  int order_cap;
  pm_thread *cur;
  const void *args;
  const pm_kernel_desc *kd;
  jmp_buf *jb;                  /* where errors go */
  int in_coroutine;
  uint64_t rng;
  long long block_lin;          /* linear id of the running block */
  long long phase_no;           /* barrier phase index within the block */
  uint32_t B, P;                /* serials of the running block and phase */
  int pend;                     /* a deferred uninitialised shared read */
  int pend_sid, pend_t, pend_nd;
  long long pend_lin, pend_idx[PM_MAXDIM];
} pm_sched;

static PM_TLS pm_sched pm_S;

/* ---- errors --------------------------------------------------------------------- */

static PM_UNUSED void pm_jump(void) {
  if (pm_S.in_coroutine && pm_S.cur) {     /* leave the coroutine stack first */
    pm_S.cur->state = PM_ERR;
    swapcontext(&pm_S.cur->uc, &pm_S.uc);
    abort();                               /* never resumed */
  }
  longjmp(*pm_S.jb, 1);
}

/* Record the (first) error message and unwind to pm_entry or the block. */
static PM_UNUSED __attribute__((noreturn, format(printf, 1, 2)))
void pm_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
#ifdef PM_MODE_OPENMP
#pragma omp critical(pm_fail)
#endif
  {
    if (!pm_G.failed) {
      int n = 0;
      if (pm_G.kd) n = snprintf(pm_G.msg, PM_MSG, "kernel %s: ", pm_G.kd->name);
      if (n < 0 || n >= PM_MSG) n = 0;
      vsnprintf(pm_G.msg + n, (size_t)(PM_MSG - n), fmt, ap);
      pm_G.failed = 1;
    }
  }
  va_end(ap);
  pm_jump();
  abort();
}

/* End the run if a SIGINT came (the message is only for the record: Python raises
 * the interrupt). */
#define PM_POLL() do { if (__builtin_expect(pm_guard_stop != 0, 0)) \
                         pm_fail("stopped by an interrupt (SIGINT)"); } while (0)

/* ---- small helpers -------------------------------------------------------------- */

static PM_UNUSED uint64_t pm_rand(uint64_t *s) {      /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static PM_UNUSED void pm_order_int(int *a, int n, int order, uint64_t *rng) {
  for (int i = 0; i < n; i++) a[i] = order == 1 ? n - 1 - i : i;
  if (order == 2)
    for (int i = n - 1; i > 0; i--) {
      int j = (int)(pm_rand(rng) % (uint64_t)(i + 1));
      int t = a[i]; a[i] = a[j]; a[j] = t;
    }
}

static PM_UNUSED void *pm_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) pm_fail("out of memory (%zu bytes)", n);
  return p;
}

static PM_UNUSED void *pm_xcalloc(size_t n, size_t s) {
  void *p = calloc(n ? n : 1, s ? s : 1);
  if (!p) pm_fail("out of memory (%zu x %zu bytes)", n, s);
  return p;
}

/* "(x,y,z)" of a linear id in a box of the given extents. */
static PM_UNUSED const char *pm_coords(char *buf, long long lin, long long nx, long long ny) {
  snprintf(buf, 64, "(%lld,%lld,%lld)", lin % nx, (lin / nx) % ny, lin / (nx * ny));
  return buf;
}

static PM_UNUSED const char *pm_thread_str(char *buf, int lin) {
  const int *b = pm_G.kd ? pm_G.kd->block : NULL;
  return b ? pm_coords(buf, lin, b[0], b[1]) : "(?)";
}

static PM_UNUSED const char *pm_block_str(char *buf, long long lin) {
  return pm_coords(buf, lin, pm_G.grid[0], pm_G.grid[1]);
}

/* Block (linear id) of a block serial of the current launch (emulate mode). */
static PM_UNUSED long long pm_block_of_serial(uint32_t serial) {
  long long pos = (long long)serial - (long long)pm_G.lf;
  return (pm_G.perm && pos >= 0) ? pm_G.perm[pos] : -1;
}

static PM_UNUSED const char *pm_index_str(char *buf, size_t cap, int nd, const long long *idx) {
  size_t n = 0;
  buf[0] = 0;
  for (int k = 0; k < nd && n + 24 < cap; k++)
    n += (size_t)snprintf(buf + n, cap - n, "[%lld]", idx[k]);
  if (nd == 0) snprintf(buf, cap, "[0]");
  return buf;
}

/* ---- race detection (emulate) ---------------------------------------------------- */

#if PM_CHECKS
static const char *const pm_mode_word[4] = {"read", "write", "read-modify-write",
                                            "atomic update"};

static __attribute__((noreturn)) void pm_race(const char *space, const char *name, long long lin,
                                              int nd, const long long *idx, int mode,
                                              const char *other_kind, uint32_t ob, int ot,
                                              int same_block) {
  char b1[64], t1[64], b2[64], t2[64], ix[256];
  pm_index_str(ix, sizeof ix, nd, idx);
  pm_fail("data race on %s %s, element %lld (%s%s): %s by block %s thread %s and %s by "
          "block %s thread %s %s. (launch %lld, barrier phase %lld of the block)",
          space, name, lin, name, ix, pm_mode_word[mode],
          pm_block_str(b1, pm_S.block_lin), pm_thread_str(t1, pm_S.cur ? pm_S.cur->lin : -1),
          other_kind, pm_block_str(b2, same_block ? pm_S.block_lin : pm_block_of_serial(ob)),
          pm_thread_str(t2, ot),
          same_block ? "in the same barrier phase (no __syncthreads() orders them)"
                     : "in the same launch (blocks of one launch are not ordered)",
          pm_G.launch_no, pm_S.phase_no);
}

/* An access that writes (a write, or an atomic update) against the cell's earlier
 * writes and reads: the conflicts every writing mode checks. */
static inline void pm_write_conflicts(pm_cell *c, uint32_t lf, int mode, const char *space,
                                      const char *name, long long lin, int nd,
                                      const long long *idx, uint32_t B, uint32_t P, int t) {
  if (c->wb >= lf) {
    if (c->wb != B) pm_race(space, name, lin, nd, idx, mode, "write", c->wb, c->wt, 0);
    if (c->wp == P && c->wt != t) pm_race(space, name, lin, nd, idx, mode, "write", B, c->wt, 1);
  }
  if (c->rb >= lf) {
    if (c->rb != B) pm_race(space, name, lin, nd, idx, mode, "read", c->rb, c->rt, 0);
    if (c->rp == P && c->rt != t) pm_race(space, name, lin, nd, idx, mode, "read", B, c->rt, 1);
    if (c->rmp == P) pm_race(space, name, lin, nd, idx, mode, "read", B, c->rmt, 1);
  }
  if (c->rx >= lf) pm_race(space, name, lin, nd, idx, mode, "read", c->rx, c->rxt, 0);
}

/* Check and record an access to one cell.  mode 0 read, 1 write, 2 both, 3 atomic
 * read-modify-write: atomic updates of one element by several threads are no race
 * (the GPU serialises them), an atomic update and any other access in one barrier
 * phase of a block, or in one launch by different blocks, are. */
static inline void pm_shadow(pm_cell *c, uint32_t lf, int mode, const char *space,
                             const char *name, long long lin, int nd, const long long *idx) {
  const uint32_t B = pm_S.B, P = pm_S.P;
  const int t = pm_S.cur->lin;
  if (mode == 3) {
    pm_write_conflicts(c, lf, mode, space, name, lin, nd, idx, B, P, t);
    c->ab = B; c->ap = P; c->at = (uint16_t)t;
    return;
  }
  if (c->ab >= lf) {
    if (c->ab != B) pm_race(space, name, lin, nd, idx, mode, "atomic update", c->ab, c->at, 0);
    if (c->ap == P && c->at != t)
      pm_race(space, name, lin, nd, idx, mode, "atomic update", B, c->at, 1);
  }
  if (mode != 1) {                                        /* a read */
    if (c->wb >= lf) {
      if (c->wb != B) pm_race(space, name, lin, nd, idx, mode, "write", c->wb, c->wt, 0);
      if (c->wp == P && c->wt != t) pm_race(space, name, lin, nd, idx, mode, "write", B, c->wt, 1);
    }
    if (c->rb >= lf && c->rb != B) { c->rx = c->rb; c->rxt = c->rt; }
    else if (c->rp == P && c->rt != t) { c->rmp = P; c->rmt = c->rt; }
    c->rb = B; c->rp = P; c->rt = (uint16_t)t;
  }
  if (mode != 0) {                                        /* a write */
    pm_write_conflicts(c, lf, mode, space, name, lin, nd, idx, B, P, t);
    c->wb = B; c->wp = P; c->wt = (uint16_t)t;
  }
}

static __attribute__((noreturn)) void pm_oob(const char *space, const char *name, int mode,
                                             long long lin, int nd, const long long *idx,
                                             const long long *ext, long long span) {
  char b1[64], t1[64], ix[256], sh[256];
  long long nelem = 1;          /* the shape's element count (span: what a strided view spans) */
  for (int d = 0; d < nd; d++) nelem *= ext[d];
  (void)span;
  pm_index_str(ix, sizeof ix, nd, idx);
  pm_index_str(sh, sizeof sh, nd, ext);
  pm_fail("out-of-bounds %s of %s %s: index %s%s (element %lld) outside the shape %s%s "
          "(%lld elements), by block %s thread %s (launch %lld, barrier phase %lld of the block)",
          pm_mode_word[mode], space, name, name, ix, lin, name, sh, nelem,
          pm_block_str(b1, pm_S.block_lin), pm_thread_str(t1, pm_S.cur ? pm_S.cur->lin : -1),
          pm_G.launch_no, pm_S.phase_no);
}

/* ---- warp transactions (emulate) ---------------------------------------------------
 *
 * Seed 003 §6.3 measures coalescing as global-memory transactions per request
 * (nvprof's gld/gst_transactions_per_request).  On the GPU a warp's 32 threads
 * execute one load/store instruction together: one request, served by as many
 * 32-byte sectors (transactions) and 128-byte cache lines as the 32 addresses
 * touch.  The emulator runs threads one after the other, so it buffers addresses:
 * every global array reference printed in a kernel is an access *site*; thread t
 * (linear id, x fastest; warp t / 32, lane t % 32) executing site s for the k-th
 * time in the current barrier phase appends its byte address to bucket
 * (warp, s, lane) at position k.  At the end of the phase (every thread at the
 * barrier or finished: the warp's threads have all executed what they will
 * before it) the k-th entries of a warp's 32 lane buckets of site s form one
 * request, and its distinct sectors/lines are counted.  This does not depend on
 * the block/thread order.
 *
 * Exact for code whose threads of a warp execute the same sequence of sites
 * (no divergence, or divergence that only switches lanes off: guards around a
 * site, loops with thread-dependent trip counts starting together).  Divergent
 * code where a lane skips an early occurrence and executes a later one (a guard
 * inside a loop that is false for some iterations of some lanes) pairs the k-th
 * executions of each lane, which the GPU may issue as different requests: the
 * counts are then an approximation.  A target of a compound assignment (+=) is a
 * load request and a store request with the same addresses (ld + st on the GPU).
 * Addresses are device byte offsets: the array's element offset times its
 * element size plus the offset of its element 0 inside its (256-byte aligned)
 * device allocation, so packed/strided buffers count as laid out.  One-thread
 * blocks count each access at once (no buffering); more than PM_TX_MAX_BYTES of
 * buffered addresses stops the counting, and pm_entry reports none (-1).
 */
#if PM_CHECKS
static void pm_tx_grow(pm_txbucket *b) {
  int cap = b->cap ? 2 * b->cap : 16;
  long long add = (long long)(cap - b->cap) * (long long)sizeof(long long);
  if (pm_G.tx_bytes + add > PM_TX_MAX_BYTES) { pm_G.tx_overflow = 1; return; }
  long long *a = (long long *)realloc(b->addr, (size_t)cap * sizeof(long long));
  if (!a) { pm_G.tx_overflow = 1; return; }
  b->addr = a;
  b->cap = cap;
  pm_G.tx_bytes += add;
}

/* es: bytes of the access (the element size, or 16 for a vector access) */
static inline void pm_tx_record(int site, int mode, const pm_array_info *a, long long lin,
                                long long es) {
  if (pm_G.tx_overflow || site < 0 || site >= pm_G.tx_ns) return;
  if (pm_G.tx_nt == 1) {                  /* one-thread blocks: every access is a request */
    long long addr = a->base + lin * a->esize, *cnt = pm_G.tx + 6 * pm_G.kd->kid;
    long long sec = 1 + ((addr + es - 1) >> 5 != addr >> 5);
    long long lines = 1 + ((addr + es - 1) >> 7 != addr >> 7);
    if (mode != 1) { cnt[0]++; cnt[1] += sec; cnt[2] += lines; }
    if (mode != 0) { cnt[3]++; cnt[4] += sec; cnt[5] += lines; }
    return;
  }
  const int t = pm_S.cur->lin;
  pm_txbucket *b = &pm_G.txb[((long long)(t >> 5) * pm_G.tx_ns + site) * 32 + (t & 31)];
  if (b->n >= b->cap) {
    pm_tx_grow(b);
    if (pm_G.tx_overflow) return;
  }
  b->addr[b->n++] = a->base + lin * a->esize;
  pm_G.tx_mode[site] = (signed char)mode;
  pm_G.tx_esize[site] = (int)es;
}

static int pm_ll_cmp(const void *x, const void *y) {
  long long a = *(const long long *)x, b = *(const long long *)y;
  return (a > b) - (a < b);
}

/* Distinct units of 2^shift bytes that the n accesses of es bytes at addr[] touch. */
static long long pm_tx_distinct(const long long *addr, int n, int es, int shift) {
  long long u[64];
  int m = 0, sorted = 1;
  for (int i = 0; i < n; i++) {
    long long lo = addr[i] >> shift, hi = (addr[i] + es - 1) >> shift;
    if (m && lo < u[m - 1]) sorted = 0;
    u[m++] = lo;
    if (hi != lo) u[m++] = hi;          /* an element straddling two units */
  }
  if (!sorted) qsort(u, (size_t)m, sizeof u[0], pm_ll_cmp);
  long long d = m > 0;
  for (int i = 1; i < m; i++) d += u[i] != u[i - 1];
  return d;
}

/* End of a barrier phase: count the requests of every warp and site (the k-th
 * executions of the site by the warp's lanes), then empty the buckets. */
static void pm_tx_flush(void) {
  if (!pm_G.tx || pm_G.tx_ns == 0 || pm_G.tx_overflow) return;
  long long *cnt = pm_G.tx + 6 * pm_G.kd->kid;
  const int ns = pm_G.tx_ns, nw = (pm_G.tx_nt + 31) / 32;
  for (long long w = 0; w < nw; w++)
    for (int s = 0; s < ns; s++) {
      pm_txbucket *lanes = &pm_G.txb[(w * ns + s) * 32];
      int kmax = 0;
      for (int l = 0; l < 32; l++) if (lanes[l].n > kmax) kmax = lanes[l].n;
      const int es = pm_G.tx_esize[s], mode = pm_G.tx_mode[s];
      for (int k = 0; k < kmax; k++) {
        long long v[32];
        int n = 0;
        for (int l = 0; l < 32; l++)
          if (k < lanes[l].n) v[n++] = lanes[l].addr[k];
        long long sec = pm_tx_distinct(v, n, es, 5);
        long long lines = pm_tx_distinct(v, n, es, 7);
        if (mode != 1) { cnt[0]++; cnt[1] += sec; cnt[2] += lines; }
        if (mode != 0) { cnt[3]++; cnt[4] += sec; cnt[5] += lines; }
      }
      for (int l = 0; l < 32; l++) lanes[l].n = 0;
    }
}

/* Buckets for a block of nt threads of kernel kd. */
static void pm_tx_setup(const pm_kernel_desc *kd, int nt) {
  pm_G.tx_ns = 0;
  pm_G.tx_nt = nt;
  if (!pm_G.tx || pm_G.tx_overflow || kd->nsites <= 0) return;
  const int ns = kd->nsites;
  long long nb = (long long)((nt + 31) / 32) * ns * 32;
  if (nb > pm_G.txb_cap) {
    pm_txbucket *b = (pm_txbucket *)realloc(pm_G.txb, (size_t)nb * sizeof *b);
    if (!b) pm_fail("out of memory (warp transaction buckets)");
    memset(b + pm_G.txb_cap, 0, (size_t)(nb - pm_G.txb_cap) * sizeof *b);
    pm_G.txb = b;
    pm_G.txb_cap = nb;
  }
  if (ns > pm_G.tx_sites_cap) {
    free(pm_G.tx_mode); free(pm_G.tx_esize);
    pm_G.tx_mode = NULL; pm_G.tx_esize = NULL; pm_G.tx_sites_cap = 0;
    pm_G.tx_mode = (signed char *)pm_xcalloc((size_t)ns, 1);
    pm_G.tx_esize = (int *)pm_xcalloc((size_t)ns, sizeof(int));
    pm_G.tx_sites_cap = ns;
  }
  for (long long i = 0; i < nb; i++) pm_G.txb[i].n = 0;
  pm_G.tx_ns = ns;
}

static void pm_tx_free(void) {
  for (long long i = 0; i < pm_G.txb_cap; i++) free(pm_G.txb[i].addr);
  free(pm_G.txb); free(pm_G.tx_mode); free(pm_G.tx_esize);
  pm_G.txb = NULL; pm_G.txb_cap = 0;
  pm_G.tx_mode = NULL; pm_G.tx_esize = NULL; pm_G.tx_sites_cap = 0;
  pm_G.tx_bytes = 0; pm_G.tx_ns = 0;
}
#endif

/* A global access: bounds, counters, shadow; returns the element offset. */
static PM_UNUSED long long pm_gacc(int aid, int site, int mode, long long lin, int nd,
                                   const long long *idx) {
  PM_POLL();
  pm_array_info *a = &pm_G.arrays[aid];
  for (int k = 0; k < nd; k++)
    if (idx[k] < 0 || idx[k] >= a->ext[k])
      pm_oob("global array", a->name, mode, lin, nd, idx, a->ext, a->span);
  if (lin < 0 || lin >= a->span)
    pm_oob("global array", a->name, mode, lin, nd, idx, a->ext, a->span);
  long long *cnt = pm_G.counters + 3 * pm_G.kd->kid;
  if (mode != 1) cnt[0]++;
  if (mode != 0) cnt[1]++;
  pm_shadow(&a->shadow[lin], pm_G.lf, mode, "global array", a->name, lin, nd, idx);
  if (pm_G.tx_ns) pm_tx_record(site, mode, a, lin, a->esize);
  return lin;
}

/* A 16-byte vector access of w elements (seed 002 §3.4: float4/double2) starting at
 * element lin (last subscript idx[nd-1]): each element is checked and counted like
 * an element access, the device address must be 16-byte aligned (a misaligned
 * vector access faults on the GPU: here it is an error, like a bounds error), and
 * the warp transaction counts see one request of 16 bytes per lane. */
static PM_UNUSED long long pm_gaccv(int aid, int site, int mode, long long lin, int w, int nd,
                                    const long long *idx) {
  pm_array_info *a = &pm_G.arrays[aid];
  long long addr = a->base + lin * a->esize;
  if (addr % 16 != 0 || w * a->esize != 16)
    pm_fail("misaligned vector %s of global array %s: element %lld (device byte offset %lld) "
            "is not 16-byte aligned", pm_mode_word[mode], a->name, lin, addr);
  long long j[PM_MAXDIM];
  for (int k = 0; k < nd && k < PM_MAXDIM; k++) j[k] = idx[k];
  for (int e = 0; e < w; e++) {
    if (nd > 0) j[nd - 1] = idx[nd - 1] + e;
    pm_gacc(aid, -1, mode, lin + e, nd, j);
  }
  if (pm_G.tx_ns) pm_tx_record(site, mode, a, lin, 16);
  return lin;
}

/* A shared access: bounds, shadow (lf = the block), deferred uninitialised reads. */
static PM_UNUSED long long pm_sacc(int sid, int mode, long long lin, int nd, const long long *idx) {
  const pm_shared_desc *d = &pm_G.kd->shared[sid];
  for (int k = 0; k < nd; k++)
    if (idx[k] < 0 || idx[k] >= d->ext[k])
      pm_oob("shared buffer", d->name, mode, lin, nd, idx, d->ext, d->nelem);
  if (lin < 0 || lin >= d->nelem)
    pm_oob("shared buffer", d->name, mode, lin, nd, idx, d->ext, d->nelem);
  pm_cell *c = &pm_G.sh_shadow[sid][lin];
  if (mode != 1 && c->wb != pm_S.B && !pm_S.pend) {
    pm_S.pend = 1;
    pm_S.pend_sid = sid;
    pm_S.pend_t = pm_S.cur->lin;
    pm_S.pend_lin = lin;
    pm_S.pend_nd = nd;
    for (int k = 0; k < nd && k < PM_MAXDIM; k++) pm_S.pend_idx[k] = idx[k];
  }
  pm_shadow(c, pm_S.B, mode, "shared buffer", d->name, lin, nd, idx);
  return lin;
}

/* A 16-byte vector access of w elements of a shared buffer (see pm_gaccv). */
static PM_UNUSED long long pm_saccv(int sid, int mode, long long lin, int w, int nd,
                                    const long long *idx) {
  const pm_shared_desc *d = &pm_G.kd->shared[sid];
  if ((lin * (long long)d->elem_size) % 16 != 0 || w * (long long)d->elem_size != 16)
    pm_fail("misaligned vector %s of shared buffer %s: element %lld is not 16-byte aligned",
            pm_mode_word[mode], d->name, lin);
  long long j[PM_MAXDIM];
  for (int k = 0; k < nd && k < PM_MAXDIM; k++) j[k] = idx[k];
  for (int e = 0; e < w; e++) {
    if (nd > 0) j[nd - 1] = idx[nd - 1] + e;
    pm_sacc(sid, mode, lin + e, nd, j);
  }
  return lin;
}

#define PM_GLD(aid, site, lin, nd, ...) pm_gacc((aid), (site), 0, (long long)(lin), (nd), (const long long[]){__VA_ARGS__})
#define PM_GST(aid, site, lin, nd, ...) pm_gacc((aid), (site), 1, (long long)(lin), (nd), (const long long[]){__VA_ARGS__})
#define PM_GUP(aid, site, lin, nd, ...) pm_gacc((aid), (site), 2, (long long)(lin), (nd), (const long long[]){__VA_ARGS__})
#define PM_GAT(aid, site, lin, nd, ...) pm_gacc((aid), (site), 3, (long long)(lin), (nd), (const long long[]){__VA_ARGS__})
#define PM_OMP_ATOMIC
#define PM_OMP_CRITICAL
#define PM_SLD(sid, lin, nd, ...) pm_sacc((sid), 0, (long long)(lin), (nd), (const long long[]){__VA_ARGS__})
#define PM_SST(sid, lin, nd, ...) pm_sacc((sid), 1, (long long)(lin), (nd), (const long long[]){__VA_ARGS__})
#define PM_SUP(sid, lin, nd, ...) pm_sacc((sid), 2, (long long)(lin), (nd), (const long long[]){__VA_ARGS__})
#define PM_GLDV(aid, site, lin, w, nd, ...) pm_gaccv((aid), (site), 0, (long long)(lin), (w), (nd), (const long long[]){__VA_ARGS__})
#define PM_GSTV(aid, site, lin, w, nd, ...) pm_gaccv((aid), (site), 1, (long long)(lin), (w), (nd), (const long long[]){__VA_ARGS__})
#define PM_SLDV(sid, lin, w, nd, ...) pm_saccv((sid), 0, (long long)(lin), (w), (nd), (const long long[]){__VA_ARGS__})
#define PM_SSTV(sid, lin, w, nd, ...) pm_saccv((sid), 1, (long long)(lin), (w), (nd), (const long long[]){__VA_ARGS__})
#else
#define PM_GLD(aid, site, lin, nd, ...) (lin)
#define PM_GST(aid, site, lin, nd, ...) (lin)
#define PM_GUP(aid, site, lin, nd, ...) (lin)
#define PM_GAT(aid, site, lin, nd, ...) (lin)
#define PM_OMP_ATOMIC _Pragma("omp atomic")
#define PM_OMP_CRITICAL _Pragma("omp critical(pm_atomic)")
#define PM_SLD(sid, lin, nd, ...) (lin)
#define PM_SST(sid, lin, nd, ...) (lin)
#define PM_SUP(sid, lin, nd, ...) (lin)
#define PM_GLDV(aid, site, lin, w, nd, ...) (lin)
#define PM_GSTV(aid, site, lin, w, nd, ...) (lin)
#define PM_SLDV(sid, lin, w, nd, ...) (lin)
#define PM_SSTV(sid, lin, w, nd, ...) (lin)
#endif

/* End of a barrier phase: report a deferred uninitialised shared read. */
static PM_UNUSED void pm_phase_end(void) {
#if PM_CHECKS
  if (pm_G.tx_ns) pm_tx_flush();
  if (pm_S.pend) {
    char b1[64], t1[64], ix[256];
    const pm_shared_desc *d = &pm_G.kd->shared[pm_S.pend_sid];
    pm_S.cur = NULL;
    pm_index_str(ix, sizeof ix, pm_S.pend_nd, pm_S.pend_idx);
    pm_fail("read of uninitialised shared memory: shared buffer %s, element %lld (%s%s), read by "
            "block %s thread %s in barrier phase %lld, but no thread of the block wrote it since "
            "the block began (a copy-in loop that misses part of the buffer, or a missing "
            "__syncthreads()?) (launch %lld)",
            d->name, pm_S.pend_lin, d->name, ix, pm_block_str(b1, pm_S.block_lin),
            pm_thread_str(t1, pm_S.pend_t), pm_S.phase_no, pm_G.launch_no);
  }
#endif
}

/* ---- threads and barriers --------------------------------------------------------- */

/* __syncthreads(): yield to the scheduler until every thread of the block is here. */
static PM_UNUSED void pm_sync(struct pm_thread *t, int id) {
  t->state = PM_WAIT;
  t->bar = id;
  swapcontext(&t->uc, &pm_S.uc);
}
#define PM_SYNC(id) pm_sync(pm_t, (id))

static void pm_trampoline(void) {
  pm_thread *t = pm_S.cur;
  pm_S.kd->body(pm_S.args, t);
  t->state = PM_DONE;
  setcontext(&pm_S.uc);
  abort();
}

/* Make sure the scheduler has n thread slots (and stacks when needed). */
static void pm_slots(int n, int stacks) {
  if (n > pm_S.nslots) {
    pm_thread **s = (pm_thread **)realloc(pm_S.threads, (size_t)n * sizeof *s);
    if (!s) pm_fail("out of memory (thread slots)");
    pm_S.threads = s;
    for (int i = pm_S.nslots; i < n; i++) {
      s[i] = (pm_thread *)calloc(1, sizeof(pm_thread));
      if (!s[i]) { pm_S.nslots = i; pm_fail("out of memory (thread slots)"); }
    }
    pm_S.nslots = n;
    int *o = (int *)realloc(pm_S.order, (size_t)n * sizeof(int));
    if (!o) pm_fail("out of memory (thread order)");
    pm_S.order = o;
    pm_S.order_cap = n;
  }
  if (stacks) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    for (int i = 0; i < n; i++) {
      pm_thread *t = pm_S.threads[i];
      if (t->stack) continue;
      /* a guard page below every stack: an overflow faults instead of corrupting */
      char *m = (char *)mmap(NULL, (size_t)(PM_STACK_SIZE + page), PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) pm_fail("out of memory (thread stacks)");
      mprotect(m, (size_t)page, PROT_NONE);
      t->stack = m + page;
      if (getcontext(&t->uc) != 0) pm_fail("getcontext failed");
    }
  }
}

/* Unmap this thread's coroutine stacks (two mappings each, with the guard page).
   Kept across runs, the stacks of every library a process ever loaded added up to
   Linux's 65530 mappings per process: dlopen then failed ("failed to map segment")
   late in the test suite.  Freed at the end of each run (and of each OpenMP launch,
   by every worker for its own thread-local scheduler). */
static void pm_free_stacks(void) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  for (int i = 0; i < pm_S.nslots; i++) {
    pm_thread *t = pm_S.threads[i];
    if (t && t->stack) {
      munmap((char *)t->stack - page, (size_t)(PM_STACK_SIZE + page));
      t->stack = NULL;
    }
  }
}

/* Run one block: every thread, phase by phase. */
static void pm_run_block(const pm_kernel_desc *kd, const void *args, pm_blockctx *blk,
                         long long block_lin) {
  const int nt = blk->ntx * blk->nty * blk->ntz;
  pm_slots(nt, kd->has_barrier);
  pm_S.kd = kd;
  pm_S.args = args;
  pm_S.block_lin = block_lin;
  pm_S.phase_no = 0;
  pm_S.pend = 0;
#if PM_CHECKS
  pm_tx_setup(kd, nt);
#endif
  for (int i = 0; i < nt; i++) {
    pm_thread *t = pm_S.threads[i];
    t->lin = i;
    t->tx = i % blk->ntx;
    t->ty = (i / blk->ntx) % blk->nty;
    t->tz = i / (blk->ntx * blk->nty);
    t->blk = blk;
    t->state = PM_RUN;
    t->bar = -1;
  }
#if PM_CHECKS
  if (pm_G.next_phase >= 0xFFFFFFF0u) pm_fail("too many barrier phases for the emulator's shadow state");
  pm_S.P = pm_G.next_phase++;
#endif
  pm_order_int(pm_S.order, nt, pm_G.order, &pm_S.rng);
  if (!kd->has_barrier) {
    for (int i = 0; i < nt; i++) {
      pm_thread *t = pm_S.threads[pm_S.order[i]];
      PM_POLL();
      pm_S.cur = t;
      kd->body(args, t);
      t->state = PM_DONE;
    }
    pm_phase_end();
    pm_S.cur = NULL;
    return;
  }
  for (int i = 0; i < nt; i++) {
    pm_thread *t = pm_S.threads[i];
    t->uc.uc_stack.ss_sp = t->stack;
    t->uc.uc_stack.ss_size = PM_STACK_SIZE;
    t->uc.uc_link = NULL;
    makecontext(&t->uc, pm_trampoline, 0);
  }
  for (;;) {
    for (int i = 0; i < nt; i++) {
      pm_thread *t = pm_S.threads[pm_S.order[i]];
      if (t->state == PM_DONE) continue;
      PM_POLL();
      t->state = PM_RUN;
      pm_S.cur = t;
      pm_S.in_coroutine = 1;
      swapcontext(&pm_S.uc, &t->uc);
      pm_S.in_coroutine = 0;
      if (t->state == PM_ERR) longjmp(*pm_S.jb, 1);
    }
    pm_phase_end();
    pm_S.cur = NULL;
    int waiting = -1, done = -1, other = -1;
    for (int i = 0; i < nt; i++) {
      pm_thread *t = pm_S.threads[i];
      if (t->state == PM_DONE) { if (done < 0) done = i; }
      else {
        if (waiting < 0) waiting = i;
        else if (t->bar != pm_S.threads[waiting]->bar && other < 0) other = i;
      }
    }
    if (waiting < 0) break;                       /* every thread finished */
    char b1[64], t1[64], t2[64];
    if (done >= 0)
      pm_fail("barrier reached under divergent control in block %s: thread %s waits at "
              "__syncthreads() #%d while thread %s has finished the kernel (barrier phase %lld, "
              "launch %lld)", pm_block_str(b1, block_lin), pm_thread_str(t1, waiting),
              pm_S.threads[waiting]->bar, pm_thread_str(t2, done), pm_S.phase_no, pm_G.launch_no);
    if (other >= 0)
      pm_fail("barrier reached under divergent control in block %s: thread %s waits at "
              "__syncthreads() #%d while thread %s waits at __syncthreads() #%d (barrier phase "
              "%lld, launch %lld)", pm_block_str(b1, block_lin), pm_thread_str(t1, waiting),
              pm_S.threads[waiting]->bar, pm_thread_str(t2, other), pm_S.threads[other]->bar,
              pm_S.phase_no, pm_G.launch_no);
    if (++pm_S.phase_no >= PM_MAX_PHASES)
      pm_fail("block %s passed %lld barrier phases; giving up (an endless loop around "
              "__syncthreads()?)", pm_block_str(b1, block_lin), (long long)PM_MAX_PHASES);
#if PM_CHECKS
    if (pm_G.next_phase >= 0xFFFFFFF0u) pm_fail("too many barrier phases for the emulator's shadow state");
    pm_S.P = pm_G.next_phase++;
#endif
    if (pm_G.order == 2) pm_order_int(pm_S.order, nt, 2, &pm_S.rng);
  }
}

/* ---- launches ---------------------------------------------------------------------- */

/* The vector copies' run-time guard: element 0 of array aid is 16-byte aligned on
 * the device (its byte offset in its 256-byte aligned allocation). */
#define PM_ALIGNED16(aid) ((pm_G.arrays[(aid)].base % 16) == 0)

static size_t pm_shared_bytes(const pm_kernel_desc *kd) {
  size_t n = 0;
  for (int s = 0; s < kd->nshared; s++) n += kd->shared[s].elem_size * (size_t)kd->shared[s].nelem;
  return n;
}

#if PM_CHECKS
/* Forget all shadow state (serial numbers about to wrap). */
static void pm_reset_shadows(void) {
  for (int a = 0; a < pm_G.narrays; a++)
    if (pm_G.arrays[a].shadow) memset(pm_G.arrays[a].shadow, 0, (size_t)pm_G.arrays[a].span * sizeof(pm_cell));
  for (int s = 0; s < pm_G.nsh_cap; s++)
    if (pm_G.sh_shadow[s]) memset(pm_G.sh_shadow[s], 0, (size_t)pm_G.sh_cap[s] * sizeof(pm_cell));
  pm_G.next_block = 1;
  pm_G.next_phase = 1;
}

/* Shared buffers (data + shadow) big enough for kernel kd. */
static void pm_shared_setup(const pm_kernel_desc *kd) {
  if (kd->nshared > pm_G.nsh_cap) {
    int n = kd->nshared;
    void **d = (void **)realloc(pm_G.sh_data, (size_t)n * sizeof *d);
    if (d) pm_G.sh_data = d;
    pm_cell **c = (pm_cell **)realloc(pm_G.sh_shadow, (size_t)n * sizeof *c);
    if (c) pm_G.sh_shadow = c;
    long long *k = (long long *)realloc(pm_G.sh_cap, (size_t)n * sizeof *k);
    if (k) pm_G.sh_cap = k;
    size_t *y = (size_t *)realloc(pm_G.sh_bytes, (size_t)n * sizeof *y);
    if (y) pm_G.sh_bytes = y;
    if (!d || !c || !k || !y) pm_fail("out of memory (shared buffers)");
    for (int s = pm_G.nsh_cap; s < n; s++) { d[s] = NULL; c[s] = NULL; k[s] = 0; y[s] = 0; }
    pm_G.nsh_cap = n;
  }
  for (int s = 0; s < kd->nshared; s++) {
    long long n = kd->shared[s].nelem;
    size_t bytes = (size_t)n * kd->shared[s].elem_size;
    if (bytes > pm_G.sh_bytes[s]) {
      free(pm_G.sh_data[s]);
      pm_G.sh_data[s] = NULL;
      pm_G.sh_bytes[s] = 0;
      pm_G.sh_data[s] = pm_xmalloc(bytes);
      pm_G.sh_bytes[s] = bytes;
    }
    if (n > pm_G.sh_cap[s]) {            /* fresh zeroed shadow: serial 0 = never touched */
      free(pm_G.sh_shadow[s]);
      pm_G.sh_shadow[s] = NULL;
      pm_G.sh_cap[s] = 0;
      pm_G.sh_shadow[s] = (pm_cell *)pm_xcalloc((size_t)n, sizeof(pm_cell));
      pm_G.sh_cap[s] = n;
    }
  }
}
#endif

#ifdef PM_MODE_OPENMP
/* One block on this OS thread; an error unwinds to here (message already recorded). */
static void pm_omp_block(const pm_kernel_desc *kd, const void *args, pm_blockctx *blk,
                         long long lin) {
  jmp_buf jb;
  pm_S.jb = &jb;
  pm_S.in_coroutine = 0;
  pm_S.cur = NULL;
  if (setjmp(jb)) return;
  pm_S.rng = pm_G.seed * 0x9E3779B97F4A7C15ULL + (uint64_t)pm_G.launch_no * 0x100000001B3ULL
             + (uint64_t)lin;
  pm_run_block(kd, args, blk, lin);
}
#endif

/* Launch kernel kd on a gx x gy x gz grid (host side of a kir.Launch). */
static PM_UNUSED void pm_launch(const pm_kernel_desc *kd, const void *args,
                                long long gx, long long gy, long long gz) {
  if (gx <= 0 || gy <= 0 || gz <= 0) return;      /* an empty launch is not a CUDA launch */
  PM_POLL();
  pm_G.kd = kd;
  pm_G.grid[0] = gx; pm_G.grid[1] = gy; pm_G.grid[2] = gz;
  pm_G.launch_no++;
  pm_G.counters[3 * kd->kid + 2]++;
  if (gx > 2147483647LL || gy > 65535 || gz > 65535)
    pm_fail("invalid launch configuration: grid (%lld,%lld,%lld) exceeds CUDA's limits "
            "(2^31-1, 65535, 65535)", gx, gy, gz);
  const int *b = kd->block;
  if (b[0] < 1 || b[1] < 1 || b[2] < 1 || b[0] > 1024 || b[1] > 1024 || b[2] > 64 ||
      (long long)b[0] * b[1] * b[2] > 1024)
    pm_fail("invalid launch configuration: block (%d,%d,%d) exceeds CUDA's limits "
            "(1024 threads, z <= 64)", b[0], b[1], b[2]);
  if (!kd->dynamic_shared && pm_shared_bytes(kd) > 48 * 1024)
    pm_fail("uses %zu bytes of static shared memory per block, more than the 48 KiB CUDA allows",
            pm_shared_bytes(kd));
  if (kd->dynamic_shared && (pm_shared_bytes(kd) > (size_t)kd->dynamic_shared ||
                             kd->dynamic_shared > 227 * 1024))
    pm_fail("uses %zu bytes of shared memory per block in %lld bytes of dynamic shared "
            "memory (at most 227 KiB)", pm_shared_bytes(kd), kd->dynamic_shared);
  const long long nb = gx * gy * gz;
#if PM_CHECKS
  if ((long long)pm_G.next_block + nb >= 0x7FFFFFFFLL || pm_G.next_phase >= 0x7FFFFFFFu) {
    pm_reset_shadows();
    if ((long long)pm_G.next_block + nb >= 0x7FFFFFFFLL)
      pm_fail("launch of %lld blocks is too large for the emulator", nb);
  }
  pm_shared_setup(kd);
  if (nb > pm_G.perm_cap) {
    free(pm_G.perm);
    pm_G.perm = NULL;
    pm_G.perm_cap = 0;
    pm_G.perm = (long long *)pm_xmalloc((size_t)nb * sizeof(long long));
    pm_G.perm_cap = nb;
  }
  uint64_t rng = pm_G.seed * 0x9E3779B97F4A7C15ULL + (uint64_t)pm_G.launch_no;
  for (long long i = 0; i < nb; i++) pm_G.perm[i] = pm_G.order == 1 ? nb - 1 - i : i;
  if (pm_G.order == 2)
    for (long long i = nb - 1; i > 0; i--) {
      long long j = (long long)(pm_rand(&rng) % (uint64_t)(i + 1));
      long long t = pm_G.perm[i]; pm_G.perm[i] = pm_G.perm[j]; pm_G.perm[j] = t;
    }
  pm_S.rng = rng ^ 0xD1B54A32D192ED03ULL;
  pm_G.lf = pm_G.next_block;
  pm_G.next_block += (uint32_t)nb;
  pm_blockctx blk;
  blk.nbx = (int)gx; blk.nby = (int)gy; blk.nbz = (int)gz;
  blk.ntx = b[0]; blk.nty = b[1]; blk.ntz = b[2];
  blk.shared = pm_G.sh_data;
  for (long long pos = 0; pos < nb; pos++) {
    long long lin = pm_G.perm[pos];
    PM_POLL();
    blk.bx = (int)(lin % gx); blk.by = (int)((lin / gx) % gy); blk.bz = (int)(lin / (gx * gy));
    pm_S.B = pm_G.lf + (uint32_t)pos;
    pm_run_block(kd, args, &blk, lin);
  }
  pm_G.kd = NULL;
#else
  jmp_buf *outer = pm_S.jb;
#pragma omp parallel
  {
    void *bufs[kd->nshared > 0 ? kd->nshared : 1];
    int ok = 1;
    for (int s = 0; s < kd->nshared; s++) {
      bufs[s] = malloc(kd->shared[s].elem_size * (size_t)kd->shared[s].nelem + 16);
      if (!bufs[s]) ok = 0;
    }
    if (!ok) {
#pragma omp critical(pm_fail)
      if (!pm_G.failed) { snprintf(pm_G.msg, PM_MSG, "kernel %s: out of memory (shared buffers)", kd->name); pm_G.failed = 1; }
    }
    pm_blockctx blk;
    blk.nbx = (int)gx; blk.nby = (int)gy; blk.nbz = (int)gz;
    blk.ntx = b[0]; blk.nty = b[1]; blk.ntz = b[2];
    blk.shared = bufs;
#pragma omp for schedule(dynamic, 1)
    for (long long lin = 0; lin < nb; lin++) {
      if (pm_G.failed || pm_guard_stop) continue; /* an error or a stop: skip the rest */
      blk.bx = (int)(lin % gx); blk.by = (int)((lin / gx) % gy); blk.bz = (int)(lin / (gx * gy));
      pm_omp_block(kd, args, &blk, lin);
    }
    for (int s = 0; s < kd->nshared; s++) free(bufs[s]);
    pm_free_stacks();
  }
  pm_S.jb = outer;
  pm_S.in_coroutine = 0;
  if (!pm_G.failed) PM_POLL();
  if (pm_G.failed) longjmp(*pm_S.jb, 1);
  pm_G.kd = NULL;
#endif
}

/* ---- arrays ------------------------------------------------------------------------ */

/* Describe global array aid (shape and strides evaluated from the size parameters). */
static PM_UNUSED void pm_array_setup(int aid, const char *name, const void *data, int ndim,
                                     const long long *ext, const long long *strides,
                                     long long esize) {
  pm_array_info *a = &pm_G.arrays[aid];
  a->name = name;
  a->esize = esize;
  a->base = pm_G.tx_base ? pm_G.tx_base[aid] : 0;
  if (ndim > PM_MAXDIM) pm_fail("array %s has more than %d dimensions", name, PM_MAXDIM);
  a->ndim = ndim;
  long long span = 1;
  for (int k = 0; k < ndim; k++) {
    a->ext[k] = ext[k];
    if (ext[k] < 0) pm_fail("array %s has a negative extent %lld in dimension %d", name, ext[k], k);
    if (strides[k] < 0) pm_fail("array %s has a negative stride in dimension %d", name, k);
  }
  for (int k = 0; k < ndim; k++) {
    if (ext[k] == 0) { span = 0; break; }
    span += (ext[k] - 1) * strides[k];
  }
  a->span = span;
  if (span > 0 && !data) pm_fail("array %s: no data pointer", name);
#if PM_CHECKS
  a->shadow = (pm_cell *)pm_xcalloc((size_t)(span > 0 ? span : 1), sizeof(pm_cell));
#endif
}

/* Convert a host integer to a kernel int parameter (CUDA passes int32). */
static PM_UNUSED int pm_to_int(long long v, const char *name, const char *kernel) {
  if (v < INT_MIN || v > INT_MAX)
    pm_fail("kernel %s: int parameter %s = %lld does not fit in a 32-bit int", kernel, name, v);
  return (int)v;
}

/* ---- entry --------------------------------------------------------------------------- */

typedef void (*pm_host_fn)(void **arrays, const long long *ints, const double *scalars);

static void pm_cleanup(void) {
  pm_free_stacks();
  for (int a = 0; a < pm_G.narrays; a++) { free(pm_G.arrays[a].shadow); pm_G.arrays[a].shadow = NULL; }
  free(pm_G.arrays);
  pm_G.arrays = NULL;
  for (int s = 0; s < pm_G.nsh_cap; s++) { free(pm_G.sh_data[s]); free(pm_G.sh_shadow[s]); }
  free(pm_G.sh_data); free(pm_G.sh_shadow); free(pm_G.sh_cap); free(pm_G.sh_bytes);
  pm_G.sh_data = NULL; pm_G.sh_shadow = NULL; pm_G.sh_cap = NULL; pm_G.sh_bytes = NULL;
  pm_G.nsh_cap = 0;
#if PM_CHECKS
  pm_tx_free();
#endif
  pm_G.tx = NULL;
  pm_G.tx_base = NULL;
  free(pm_G.perm);
  pm_G.perm = NULL;
  pm_G.perm_cap = 0;
  pm_G.kd = NULL;
  pm_S.cur = NULL;
  pm_S.in_coroutine = 0;
}

/* The body of every generated pm_entry (see polymagic/codegen/emulator.py). */
static int pm_entry_impl(pm_host_fn host, int narrays, int nkernels, void **arrays,
                         const long long *ints, const double *scalars, unsigned long long seed,
                         int order, long long *counters, const long long *base,
                         long long *tx, char *err, int errlen) {
  memset(pm_G.msg, 0, sizeof pm_G.msg);
  pm_G.failed = 0;
  pm_G.seed = seed;
  pm_G.order = order;
  pm_G.counters = counters;
  pm_G.nkernels = nkernels;
  pm_G.launch_no = 0;
  pm_G.kd = NULL;
  pm_G.next_block = 1;
  pm_G.next_phase = 1;
  pm_G.narrays = narrays;
  pm_G.arrays = NULL;
  pm_S.jb = &pm_G.jb;
  pm_S.cur = NULL;
  pm_S.in_coroutine = 0;
  for (int i = 0; i < 3 * nkernels; i++) counters[i] = 0;
  pm_G.tx = PM_CHECKS ? tx : NULL;        /* openmp: no transaction counts */
  pm_G.tx_base = base;
  pm_G.tx_overflow = 0;
  pm_G.tx_bytes = 0;
  pm_G.tx_ns = 0;
  if (tx)
    for (int i = 0; i < 6 * nkernels; i++) tx[i] = PM_CHECKS ? 0 : -1;
  if (err && errlen > 0) err[0] = 0;
  if (setjmp(pm_G.jb)) {
    if (err && errlen > 0) snprintf(err, (size_t)errlen, "%s", pm_G.msg);
    pm_cleanup();
    return pm_guard_stop ? 2 : 1;
  }
  if (order < 0 || order > 2) pm_fail("unknown block/thread order %d (0, 1 or 2)", order);
  pm_G.arrays = (pm_array_info *)pm_xcalloc((size_t)(narrays > 0 ? narrays : 1), sizeof(pm_array_info));
  host(arrays, ints, scalars);
  if (tx && pm_G.tx_overflow)                /* incomplete counts: none */
    for (int i = 0; i < 6 * nkernels; i++) tx[i] = -1;
  pm_cleanup();
  return 0;
}

#endif /* PM_EMU_SUPPORT_H */
