// mcp_exec_zygote: the CPython extension a zygote's agent (warm_agent.cc) sets each run up
// with. It is the zygote-run code of sandbox/child (zygote_run.h, steps.h), compiled for the
// interpreter of the rootfs against the stable ABI, so that a run forked from the zygote takes
// the very steps a cold init takes. Embedded in the binary (zygote_extension.h) and handed to
// the zygote as a memfd: nothing is installed in the rootfs. docs/engine.md says why an
// extension and not an embedded interpreter.
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "sandbox/child/zygote_run.h"

namespace {

using mcpexec::sandbox::ZygoteRunView;

ZygoteRunView* configured = nullptr;

// configure(blob): what the zygote's runs set up (PackZygoteRun), once.
PyObject* Configure(PyObject*, PyObject* blob) {
  char* data;
  Py_ssize_t size;
  if (PyBytes_AsStringAndSize(blob, &data, &size) != 0) return nullptr;
  if (configured != nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "the zygote's runs are configured already");
    return nullptr;
  }
  void* copy = aligned_alloc(16, (static_cast<size_t>(size) + 15) / 16 * 16);
  if (copy == nullptr) return PyErr_NoMemory();
  memcpy(copy, data, static_cast<size_t>(size));
  ZygoteRunView* run = mcpexec::sandbox::RelocateZygoteRun(copy, static_cast<size_t>(size));
  if (run == nullptr) {
    free(copy);
    PyErr_SetString(PyExc_ValueError, "not a zygote run set-up from this build of mcp-exec");
    return nullptr;
  }
  configured = run;
  Py_RETURN_NONE;
}

// The preloads' small objects in 2 MiB pages too. CPython's object allocator takes its arenas
// (1 MiB) one mmap at a time, and the kernel puts each wherever it fits: few of them share an
// aligned 2 MiB span, so collapse_memory leaves most in 4 KiB pages (about 30 of the zygote's
// 60 MB with numpy, pandas and matplotlib). pack_arenas(), before the imports, hands out what
// the interpreter takes through its arena hook (its arenas, and its frames' stack chunks) from
// one 2 MiB-aligned region instead, reusing what is given back. collapse_memory seals it: the
// part not used is unmapped, and from then on the hooks keep no state, so that nothing in a
// run depends on the hook being called by one thread at a time (interpreters of their own
// allocate in parallel from Python 3.12): later blocks are the interpreter's own, and a block
// of the region given back returns its memory (MADV_DONTNEED) without being used again.
// Best effort: PyObject_SetArenaAllocator is not in the stable ABI, so it is looked up at run
// time; an interpreter without it, or a region that cannot be mapped, keeps its own.
struct ArenaAllocator {  // PyObjectArenaAllocator (cpython/objimpl.h), unchanged since 3.4
  void* ctx;
  void* (*alloc)(void* ctx, size_t size);
  void (*free)(void* ctx, void* ptr, size_t size);
};

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
constexpr size_t kRegionBytes = size_t{256} << 20;

struct PackedArenas {
  uintptr_t begin = 0, next = 0, end = 0;  // the region, and where its next block starts
  bool sealed = false;
  // Blocks given back before the seal, for reuse; one that does not fit is not reused.
  struct Free {
    uintptr_t at;
    size_t size;
  };
  Free free[1024];
  size_t free_count = 0;
  ArenaAllocator own{};  // the interpreter's
} packed;

size_t PageRounded(size_t size) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

void* PackedAlloc(void*, size_t size) {
  if (packed.sealed) return packed.own.alloc(packed.own.ctx, size);
  const size_t rounded = PageRounded(size);
  for (size_t i = 0; i < packed.free_count; ++i) {
    if (packed.free[i].size == rounded) {
      const uintptr_t at = packed.free[i].at;
      packed.free[i] = packed.free[--packed.free_count];
      return reinterpret_cast<void*>(at);
    }
  }
  if (packed.end - packed.next >= rounded) {
    const uintptr_t at = packed.next;
    packed.next += rounded;
    return reinterpret_cast<void*>(at);
  }
  return packed.own.alloc(packed.own.ctx, size);
}

void PackedFree(void*, void* ptr, size_t size) {
  const auto at = reinterpret_cast<uintptr_t>(ptr);
  if (at < packed.begin || at >= packed.end) {
    packed.own.free(packed.own.ctx, ptr, size);
    return;
  }
  size = PageRounded(size);
  madvise(ptr, size, MADV_DONTNEED);
  if (!packed.sealed && packed.free_count < sizeof packed.free / sizeof packed.free[0]) {
    packed.free[packed.free_count++] = {at, size};
  }
}

PyObject* PackArenas(PyObject*, PyObject*) {
  using Accessor = void (*)(ArenaAllocator*);
  const auto get = reinterpret_cast<Accessor>(dlsym(RTLD_DEFAULT, "PyObject_GetArenaAllocator"));
  const auto set = reinterpret_cast<Accessor>(dlsym(RTLD_DEFAULT, "PyObject_SetArenaAllocator"));
  if (get == nullptr || set == nullptr || packed.begin != 0) Py_RETURN_NONE;
  void* region = mmap(nullptr, kRegionBytes + kHugePage, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED) Py_RETURN_NONE;
  const auto mapped = reinterpret_cast<uintptr_t>(region);
  const uintptr_t begin = (mapped + kHugePage - 1) & ~(kHugePage - 1);
  if (begin > mapped) munmap(region, begin - mapped);
  const uintptr_t mapped_end = mapped + kRegionBytes + kHugePage;
  if (mapped_end > begin + kRegionBytes) {
    munmap(reinterpret_cast<void*>(begin + kRegionBytes), mapped_end - begin - kRegionBytes);
  }
  packed.begin = packed.next = begin;
  packed.end = begin + kRegionBytes;
  get(&packed.own);
  ArenaAllocator mine{nullptr, PackedAlloc, PackedFree};
  set(&mine);
  Py_RETURN_NONE;
}

// No more arenas from the region: what it has not handed out is unmapped, from the first 2 MiB
// boundary past its last arena (the rest of that 2 MiB page stays, so that it can collapse).
void SealArenas() {
  if (packed.begin == 0 || packed.sealed) return;
  packed.sealed = true;
  const uintptr_t used_end = (packed.next + kHugePage - 1) & ~(kHugePage - 1);
  if (used_end < packed.end) {
    munmap(reinterpret_cast<void*>(used_end), packed.end - used_end);
    packed.end = used_end;
  }
}

// /proc/self/pagemap's bits (Documentation/admin-guide/mm/pagemap.rst).
constexpr uint64_t kPagePresent = uint64_t{1} << 63;
constexpr uint64_t kPageFile = uint64_t{1} << 61;
constexpr uint64_t kPageExclusive = uint64_t{1} << 56;

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1
#endif

// Calls `mapping(start, end, perms, inode, path)` for each mapping in /proc/self/maps; `path`
// is empty for an anonymous one, and cut where a line is longer than the buffer (the rest of
// that line is skipped). False when /proc/self/maps cannot be read.
template <typename Mapping>
bool ForEachMapping(Mapping&& mapping) {
  FILE* maps = fopen("/proc/self/maps", "re");
  if (maps == nullptr) return false;
  char line[512];
  while (fgets(line, sizeof line, maps) != nullptr) {
    const size_t length = strlen(line);
    if (length > 0 && line[length - 1] == '\n') {
      line[length - 1] = '\0';
    } else {
      for (int c = fgetc(maps); c != EOF && c != '\n'; c = fgetc(maps)) {
      }
    }
    unsigned long start, end, offset, inode;
    char perms[5], dev[16];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %4s %lx %15s %lu %n", &start, &end, perms, &offset, dev, &inode,
               &path_at) < 6) {
      continue;
    }
    mapping(uintptr_t{start}, uintptr_t{end}, perms, inode, line + path_at);
  }
  fclose(maps);
  return true;
}

// collapse_memory(): the zygote's anonymous memory, once its imports are done, in 2 MiB pages
// wherever a region holds an aligned 2 MiB span. Every fork copies, and every exit frees, one
// page-table entry per page of it: a 2 MiB page is one entry where 4 KiB pages are 512. A fork's
// write into one splits only that mapping and copies 4 KiB, as before (docs/engine.md, "What a
// fork costs"). Best effort: a kernel without MADV_COLLAPSE (before 6.1), transparent huge
// pages set to never, or no free 2 MiB block leaves the memory as it was.
PyObject* CollapseMemory(PyObject*, PyObject*) {
  SealArenas();
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;
  const bool read = ForEachMapping([&spans](uintptr_t start, uintptr_t end, const char* perms,
                                            unsigned long inode, const char* path) {
    // Private, writable and not backed by a file: the interpreter's heap and arenas.
    if (strcmp(perms, "rw-p") != 0 || inode != 0) return;
    if (*path != '\0' && strcmp(path, "[heap]") != 0) return;
    const uintptr_t from = (start + kHugePage - 1) & ~(kHugePage - 1);
    const uintptr_t to = end & ~(kHugePage - 1);
    if (to > from) spans.emplace_back(from, to);
  });
  if (!read) Py_RETURN_NONE;
  // One call a region: each call first drains every CPU's page lists, which costs milliseconds.
  for (const auto& [from, to] : spans) {
    madvise(reinterpret_cast<void*>(from), to - from, MADV_COLLAPSE);
  }
  Py_RETURN_NONE;
}

// release_file_pages(): once the zygote is ready to fork, the pages of its files that it maps
// read-only and has not written (the interpreter's and the libraries' code and constants,
// about 26 MB with the default preloads, most read once by the imports) leave its page tables.
// They made its RSS and PSS and nothing else: a fork copies the entries of no mapping but those
// written before (a fork of a mapping with copies, RELRO's, faults in its unwritten pages now),
// and maps from the page cache what it touches. The pages stay in that cache, as any file
// read does, and the kernel can take them back under pressure without unmapping anything;
// the host's memory at rest is the same. Only a file's own pages: a page copied on a write
// before its mapping became read-only (relocations) is the zygote's and stays. The zygote has
// one thread here and its read-only mappings get no new copies, so what pagemap says holds
// until madvise. Best effort (docs/engine.md, "What a fork costs").
PyObject* ReleaseFilePages(PyObject*, PyObject*) {
  std::vector<std::pair<uintptr_t, uintptr_t>> mappings;
  const bool read = ForEachMapping([&mappings](uintptr_t start, uintptr_t end, const char* perms,
                                               unsigned long inode, const char*) {
    // Private, readable, not writable, and a file's.
    if (inode == 0 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p') return;
    mappings.emplace_back(start, end);
  });
  const int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (!read || pagemap < 0) {
    if (pagemap >= 0) close(pagemap);
    Py_RETURN_NONE;
  }
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  std::vector<uint64_t> entries(512);
  auto release = [](uintptr_t from, uintptr_t to) {
    if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
  };
  for (const auto& [start, end] : mappings) {
    uintptr_t at = start;
    uintptr_t run = end;  // where the current run of the file's own pages starts; end: none
    while (at < end) {
      const size_t want = std::min<uintptr_t>(entries.size(), (end - at) / page);
      const ssize_t got =
          pread(pagemap, entries.data(), want * 8, static_cast<off_t>(at / page * 8));
      if (got <= 0) break;
      for (size_t i = 0; i < static_cast<size_t>(got) / 8; ++i, at += page) {
        const bool file_page = (entries[i] & kPagePresent) != 0 && (entries[i] & kPageFile) != 0;
        if (file_page && run == end) run = at;
        if (!file_page && run != end) {
          release(run, at);
          run = end;
        }
      }
    }
    if (run != end) release(run, at);
  }
  close(pagemap);
  Py_RETURN_NONE;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

// What a run writes of the zygote's memory, learned once (learn_writes) and taken by each run's
// program before it says it is ready (TakeLearnedWrites): the copy-on-write faults that a warm
// print(1) took after its request came, about 200 of them, the same pages in every run. Their
// copies then happen while the sandbox waits, not while the client does. The pages come from
// the zygote's own trial run of print(1), never from a run's program: nothing of one run
// reaches the next. Best effort: a kernel without MADV_POPULATE_WRITE, or a trial that fails,
// leaves each run to take its faults as they come.
struct WrittenRange {
  uint64_t at;
  uint64_t size;
};
constexpr size_t kMaxWrittenRanges = 4096;
struct {
  WrittenRange ranges[kMaxWrittenRanges];
  size_t count = 0;
} learned;

int trial_report = -1;  // in the trial: where end_trial writes what it found

// The trial's scratch space, a mapping of its own that no scan counts: /proc/self/maps as read,
// pagemap entries, and the pages found at the start of the trial's run (begin_trial_run).
constexpr size_t kMapsBytes = size_t{1} << 20;
constexpr size_t kEntries = 8192;
constexpr size_t kMaxPages = size_t{1} << 16;
constexpr size_t kScratch = kMapsBytes + kEntries * 8 + kMaxPages * 8;
struct {
  char* maps = nullptr;  // nullptr until begin_trial_run maps it
  uint64_t* entries;
  uint64_t* begun;  // sorted
  size_t begun_count = 0;
} trial;

// Calls `found(address)`, in ascending order, for each page the trial alone maps that is not a
// file's, in its writable private mappings: those its writes copied from the zygote's (or first
// touched). False when /proc/self could not be read.
template <typename Found>
bool ScanOwnPages(Found&& found) {
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const int maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  const int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (maps_fd < 0 || pagemap < 0) return false;
  size_t maps_len = 0;
  for (ssize_t n; maps_len < kMapsBytes - 1 &&
                  (n = read(maps_fd, trial.maps + maps_len, kMapsBytes - 1 - maps_len)) > 0;) {
    maps_len += static_cast<size_t>(n);
  }
  close(maps_fd);
  trial.maps[maps_len] = '\0';
  const auto scratch = reinterpret_cast<uint64_t>(trial.maps);
  for (char* line = trial.maps; *line != '\0';) {
    char* const end = strchr(line, '\n');
    if (end == nullptr) break;
    *end = '\0';
    unsigned long from, to;
    char perms[5];
    if (sscanf(line, "%lx-%lx %4s", &from, &to, perms) == 3 && strcmp(perms, "rw-p") == 0) {
      for (uint64_t at = from; at < to;) {
        const size_t want = std::min<uint64_t>(kEntries, (to - at) / page);
        const ssize_t got =
            pread(pagemap, trial.entries, want * 8, static_cast<off_t>(at / page * 8));
        if (got <= 0) break;
        for (size_t i = 0; i < static_cast<size_t>(got) / 8; ++i) {
          const uint64_t e = trial.entries[i];
          const uint64_t address = at + i * page;
          // The scratch space may have merged with a neighbouring mapping.
          if ((e & kPagePresent) == 0 || (e & kPageExclusive) == 0 || (e & kPageFile) != 0 ||
              (address >= scratch && address < scratch + kScratch)) {
            continue;
          }
          found(address);
        }
        at += static_cast<uint64_t>(got) / 8 * page;
      }
    }
    line = end + 1;
  }
  close(pagemap);
  return true;
}

// begin_trial_run(): the trial has done what a run's program does before its request comes (the
// fork's after-fork work); what it writes from here is what a run writes after its request.
PyObject* BeginTrialRun(PyObject*, PyObject*) {
  void* scratch = mmap(nullptr, kScratch, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
  if (scratch == MAP_FAILED) _exit(1);
  trial.maps = static_cast<char*>(scratch);
  trial.entries = reinterpret_cast<uint64_t*>(trial.maps + kMapsBytes);
  trial.begun = trial.entries + kEntries;
  const bool scanned = ScanOwnPages([](uint64_t address) {
    if (trial.begun_count < kMaxPages) trial.begun[trial.begun_count++] = address;
  });
  if (!scanned || trial.begun_count == kMaxPages) _exit(1);
  Py_RETURN_NONE;
}

// The pages the trial wrote since begin_trial_run, to `out` as WrittenRange records, adjacent
// pages as one; the first kMaxWrittenRanges.
void ReportWrittenPages(int out) {
  if (trial.maps == nullptr) return;
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  WrittenRange ranges[256];
  size_t count = 0, sent = 0, begun = 0;
  bool failed = false;
  auto flush = [&] {
    const char* data = reinterpret_cast<const char*>(ranges);
    for (size_t left = count * sizeof(WrittenRange); left > 0 && !failed;) {
      const ssize_t n = write(out, data, left);
      if (n <= 0) {
        failed = true;
        break;
      }
      data += n;
      left -= static_cast<size_t>(n);
    }
    sent += count;
    count = 0;
  };
  ScanOwnPages([&](uint64_t address) {
    while (begun < trial.begun_count && trial.begun[begun] < address) ++begun;
    if (begun < trial.begun_count && trial.begun[begun] == address) return;
    if (count > 0 && ranges[count - 1].at + ranges[count - 1].size == address) {
      ranges[count - 1].size += page;
      return;
    }
    if (sent + count == kMaxWrittenRanges) return;
    if (count == sizeof ranges / sizeof ranges[0]) flush();
    ranges[count++] = {address, page};
  });
  flush();
}

// learn_writes(ctl): forks the trial, which returns True with its descriptors 0, 1, 2, 5 and
// `ctl` on /dev/null, and goes on as a run's program does with print(1) until end_trial. The
// zygote waits for what the trial found (10 s at most) and returns False.
PyObject* LearnWrites(PyObject*, PyObject* arg) {
  const int ctl = PyLong_AsLong(arg);
  if (ctl < 0 && PyErr_Occurred()) return nullptr;
  SealArenas();  // a run's new arenas are the interpreter's own: so are the trial's
  // A kernel without the advice (before 5.14) would refuse every range in every run.
  void* probe = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe == MAP_FAILED) Py_RETURN_FALSE;
  const bool populates = madvise(probe, 4096, MADV_POPULATE_WRITE) == 0;
  munmap(probe, 4096);
  if (!populates) Py_RETURN_FALSE;
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) Py_RETURN_FALSE;
  PyOS_BeforeFork();
  const pid_t pid = fork();
  if (pid == 0) {
    // Off the zygote's descriptors before any Python runs here (the fork hooks included).
    close(report[0]);
    trial_report = fcntl(report[1], F_DUPFD_CLOEXEC, 10);  // above what /dev/null replaces
    const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (trial_report < 0 || null < 0) _exit(1);
    close(report[1]);
    for (const int fd : {0, 1, 2, 5, ctl}) {
      if (dup2(null, fd) < 0) _exit(1);
    }
    close(null);
    PyOS_AfterFork_Child();
    Py_RETURN_TRUE;
  }
  PyOS_AfterFork_Parent();
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    Py_RETURN_FALSE;
  }
  // The zygote ignores SIGCHLD: the kernel reaps the trial as it ends. Its pid cannot be taken
  // meanwhile: nothing else forks in the zygote's PID namespace yet.
  const int trial_pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  auto* const into = reinterpret_cast<char*>(learned.ranges);
  size_t got = 0;
  bool complete = false;
  Py_BEGIN_ALLOW_THREADS
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t deadline_ms = now.tv_sec * 1000 + now.tv_nsec / 1000000 + 10000;
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t left_ms = deadline_ms - (now.tv_sec * 1000 + now.tv_nsec / 1000000);
    if (left_ms <= 0) break;
    pollfd ready{report[0], POLLIN, 0};
    const int polled = poll(&ready, 1, static_cast<int>(left_ms));
    if (polled < 0 && errno == EINTR) continue;
    if (polled <= 0) break;
    // Until its end, which says the trial is gone (it sends no more than the ranges hold).
    char past;
    const bool full = got == sizeof learned.ranges;
    const ssize_t n = full ? read(report[0], &past, 1)
                           : read(report[0], into + got, sizeof learned.ranges - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      complete = n == 0;
      break;
    }
    if (!full) got += static_cast<size_t>(n);
  }
  Py_END_ALLOW_THREADS
  close(report[0]);
  // The zygote's memory is its own again once the trial is gone: its pipe's end came after its
  // memory was released (the kernel closes a process's files after its memory), and a trial
  // killed here is waited for (1 s at most), so that collapse_memory, next, and every fork see
  // pages no other process shares.
  if (!complete) {
    if (trial_pidfd >= 0) {
      syscall(SYS_pidfd_send_signal, trial_pidfd, SIGKILL, nullptr, 0);
      pollfd gone{trial_pidfd, POLLIN, 0};
      Py_BEGIN_ALLOW_THREADS
      while (poll(&gone, 1, 1000) < 0 && errno == EINTR) {
      }
      Py_END_ALLOW_THREADS
    } else {
      kill(pid, SIGKILL);
    }
  }
  if (trial_pidfd >= 0) close(trial_pidfd);
  learned.count = complete ? got / sizeof(WrittenRange) : 0;
  Py_RETURN_FALSE;
}

// end_trial(status): the trial's _exit. Reports the pages it wrote, then ends.
PyObject* EndTrial(PyObject*, PyObject*) {
  if (trial_report >= 0) ReportWrittenPages(trial_report);
  _exit(0);
}

// In a run's program, before it says it is ready: the learned pages written ahead.
void TakeLearnedWrites() {
  for (size_t i = 0; i < learned.count; ++i) {
    // A range that fails (not mapped here, or a mapping the kernel cannot populate) is left to
    // fault as it comes.
    (void)madvise(reinterpret_cast<void*>(learned.ranges[i].at), learned.ranges[i].size,
                  MADV_POPULATE_WRITE);
  }
}

// numpy's global generator (the one numpy.random's functions draw from), reseeded in place. Its
// seeding in Python (numpy.random.seed()) writes about 180 of the zygote's pages and takes
// 0.7 ms in each run's program; what it leaves is a key of 624 words, the first 0x80000000 and
// the others random, with no seed sequence kept and no normal deviate cached. The zygote seeds
// it once that way and hands over where the key lies (take_numpy_state), and each program
// writes 623 words from getrandom there and sets the position a new generator has, 623, so
// that its first number is a word of the new key (reseed_numpy). The layout is numpy's MT19937
// state behind its bit generator's capsule; it is checked against what get_state() says
// before it is used, and one that differs leaves each run to call numpy.random.seed().
struct Mt19937State {  // numpy/random/src/mt19937/mt19937.h
  uint32_t key[624];
  int pos;
};
constexpr int kMt19937NewPos = 623;  // numpy's MT19937.__init__
Mt19937State* numpy_state = nullptr;

// take_numpy_state(capsule, state): `capsule` is the MT19937 bit generator's, `state` what
// get_state() returns for it, ('MT19937', key, pos, has_gauss, cached_gaussian). True when the
// state behind the capsule is that one, with no deviate cached: runs then reseed it in place.
PyObject* TakeNumpyState(PyObject*, PyObject* args) {
  PyObject* capsule;
  PyObject* state;
  if (!PyArg_ParseTuple(args, "OO", &capsule, &state)) return nullptr;
  // numpy/random/bitgen.h: a bitgen_t starts with the pointer to its state.
  auto* const bitgen = static_cast<Mt19937State**>(PyCapsule_GetPointer(capsule, "BitGenerator"));
  const char* name;
  PyObject* key;
  int pos, has_gauss;
  double gauss;
  if (bitgen == nullptr || *bitgen == nullptr ||
      !PyArg_ParseTuple(state, "sOiid", &name, &key, &pos, &has_gauss, &gauss)) {
    PyErr_Clear();
    Py_RETURN_FALSE;
  }
  Py_buffer view;
  if (PyObject_GetBuffer(key, &view, PyBUF_CONTIG_RO) != 0) {
    PyErr_Clear();
    Py_RETURN_FALSE;
  }
  const Mt19937State* const mt = *bitgen;
  const bool same = strcmp(name, "MT19937") == 0 && view.len == sizeof mt->key &&
                    memcmp(view.buf, mt->key, sizeof mt->key) == 0 && mt->pos == pos &&
                    has_gauss == 0;
  PyBuffer_Release(&view);
  if (!same) Py_RETURN_FALSE;
  numpy_state = *bitgen;
  Py_RETURN_TRUE;
}

// reseed_numpy(): in a run's program, numpy's generator seeded afresh as numpy.random.seed()
// seeds it, from getrandom. False when there is nothing to reseed in place, or no randomness
// came: the caller then seeds it with numpy.random.seed(), which writes the whole key again.
PyObject* ReseedNumpy(PyObject*, PyObject*) {
  if (numpy_state == nullptr) Py_RETURN_FALSE;
  auto* const into = reinterpret_cast<unsigned char*>(numpy_state->key + 1);
  const size_t want = sizeof numpy_state->key - sizeof numpy_state->key[0];
  for (size_t got = 0; got < want;) {
    const ssize_t n = getrandom(into + got, want - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Py_RETURN_FALSE;
    got += static_cast<size_t>(n);
  }
  numpy_state->key[0] = 0x80000000u;  // as numpy's seeding: the state is never all zeros
  numpy_state->pos = kMt19937NewPos;
  Py_RETURN_TRUE;
}

// The program's half of the fork (zygote_run.h), then the learned writes: before its limits and
// its seccomp filter, which a custom profile may make deny madvise.
void AfterForkInProgram() {
  PyOS_AfterFork_Child();
  TakeLearnedWrites();
}

void CloseAll(const int* fds, size_t count) {
  for (size_t i = 0; i < count; ++i) close(fds[i]);
}

// serve(ctl, zygote_pid): the zygote's loop. Each message on `ctl` that is "F", with the run's
// stdin, stdout, stderr, report and start descriptors, then those it joins the run's cgroup
// through (none, or up to kMaxCgroupJoinFds), and after the "F" the name of the run's
// package layer (none when empty), forks a run; any other message is dropped, its descriptors
// closed, and so are a failed fork's. Returns only in a run's program process (EnterZygoteRun:
// the fork's other processes never return to Python): True when the run has a layer, else
// None. The end of `ctl` (the zygote retired, or its supervisor gone) ends the zygote once the
// runs it forked have ended. The fork is glibc's (its atfork handlers, malloc's and OpenBLAS's,
// run as for os.fork) between the interpreter's before-fork and parent work; the child's half of
// that is left to the program (zygote_run.h says why). In C and not Python so that, between
// forks, the zygote writes to as little as it can of the memory its forks share: each page it
// writes there is copied, and split out of its 2 MiB mapping for every later fork
// (collapse_memory).
PyObject* Serve(PyObject*, PyObject* args) {
  int ctl;
  int zygote;
  if (!PyArg_ParseTuple(args, "ii", &ctl, &zygote)) return nullptr;
  if (configured == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "configure() the zygote's runs first");
    return nullptr;
  }
  constexpr size_t kFds = 5;
  constexpr size_t kMostFds = kFds + mcpexec::sandbox::kMaxCgroupJoinFds;
  for (;;) {
    if (PyErr_CheckSignals() != 0) return nullptr;  // a handler's, as the Python loop ran them
    char message[128];
    alignas(cmsghdr) char control[CMSG_SPACE(kMostFds * sizeof(int))];
    iovec iov{message, sizeof message};
    msghdr header{};
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    ssize_t n;
    Py_BEGIN_ALLOW_THREADS
    n = recvmsg(ctl, &header, 0);
    Py_END_ALLOW_THREADS
    if (n < 0 && errno == EINTR) {
      if (PyErr_CheckSignals() != 0) return nullptr;
      continue;
    }
    if (n < 0) return PyErr_SetFromErrno(PyExc_OSError);
    int fds[kMostFds];
    size_t count = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t in = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < in; ++i) {
        int fd;
        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        if (count < kMostFds) {
          fds[count++] = fd;
        } else {
          close(fd);
        }
      }
    }
    if (n == 0) {  // retired: the runs it forked end first (they die with the supervisor)
      CloseAll(fds, count);
      while (wait(nullptr) >= 0 || errno == EINTR) {
      }
      _exit(0);
    }
    const size_t layer_len = static_cast<size_t>(n) - 1;
    // A NUL would cut the name short: a layer set up that was never asked for.
    if (message[0] != 'F' || count < kFds || memchr(message + 1, '\0', layer_len) != nullptr) {
      CloseAll(fds, count);
      continue;
    }
    char layer[sizeof message];
    memcpy(layer, message + 1, layer_len);
    layer[layer_len] = '\0';
    PyOS_BeforeFork();
    const pid_t pid = fork();
    if (pid == 0) {
      int run_fds[kFds];
      memcpy(run_fds, fds, sizeof run_fds);
      mcpexec::sandbox::EnterZygoteRun(*configured, run_fds, fds + kFds, count - kFds, zygote,
                                       layer_len > 0 ? layer : nullptr, AfterForkInProgram);
      if (layer_len == 0) Py_RETURN_NONE;
      Py_RETURN_TRUE;  // nothing that can fail here, where the run's limits hold
    }
    PyOS_AfterFork_Parent();
    CloseAll(fds, count);
  }
}

PyMethodDef methods[] = {
    {"configure", Configure, METH_O, "configure(blob): what the zygote's runs set up"},
    {"pack_arenas", PackArenas, METH_NOARGS,
     "pack_arenas(): the object allocator's next arenas from one 2 MiB-aligned region"},
    {"collapse_memory", CollapseMemory, METH_NOARGS,
     "collapse_memory(): the anonymous memory in 2 MiB pages where it can be"},
    {"release_file_pages", ReleaseFilePages, METH_NOARGS,
     "release_file_pages(): the pages of read-only file mappings out of the page tables"},
    {"learn_writes", LearnWrites, METH_O,
     "learn_writes(ctl): the pages a run writes, from a trial run; True in the trial"},
    {"begin_trial_run", BeginTrialRun, METH_NOARGS,
     "begin_trial_run(): in the trial, where a run's request would come"},
    {"end_trial", EndTrial, METH_O, "end_trial(status): the trial's end"},
    {"take_numpy_state", TakeNumpyState, METH_VARARGS,
     "take_numpy_state(capsule, state): numpy's generator, for runs to reseed in place"},
    {"reseed_numpy", ReseedNumpy, METH_NOARGS,
     "reseed_numpy(): numpy's generator seeded afresh in place; False when not done"},
    {"serve", Serve, METH_VARARGS,
     "serve(ctl, zygote_pid): fork a run per message; returns in a run's program process only"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mcp_exec_zygote", "A zygote's run set-up (mcp-exec).", -1, methods,
    nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) PyObject* PyInit_mcp_exec_zygote() {
  return PyModule_Create(&module);
}
