// A run forked from the zygote (zygote.h) sets itself up with the steps a cold init takes
// (steps.h): this code is compiled into the zygote's CPython extension (zygote_extension.cc),
// which its agent calls in each fork. Same rules as child.h: no allocation, no exceptions.
//
// The supervisor hands the zygote what its runs set up as one blob (PackZygoteRun,
// warm_agent.h): a ZygoteRunBlob whose pointers are offsets from the blob's start, followed by
// what they point to. RelocateZygoteRun turns them into pointers in place, once, in the zygote.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "sandbox/child/plan_view.h"

namespace mcpexec::sandbox {

struct ZygoteRunView {
  // The mounts (on the zygote's clean bind of the rootfs, then pivot_root), hostname, last_cap,
  // workdir, and the program's rlimits and seccomp filter. The rest is unused.
  PlanView plan;
  uint64_t namespaces;    // the CLONE_NEW* flags of the run's own namespaces
  const char* uid_map;    // the run's user namespace's maps, as written to /proc/self/uid_map
  const char* gid_map;
  const char* init_name;  // /proc/1/comm of a cold init (the supervisor's name), the run init's
  // Package layers (SandboxSpec::zygote_layers). layers_dir: where the zygote has them, nullptr
  // when it has none. A run given a layer binds layers_dir/<layer>/site onto layer_target and
  // remounts it with layer_remount_flags, as its mount steps layer_at and layer_at + 1.
  const char* layers_dir;
  const char* layer_target;
  uint64_t layer_at;
  uint64_t layer_remount_flags;
};

// At most this many mount steps in a run forked with a layer: it builds its list on its stack.
inline constexpr size_t kZygoteRunMaxMountOps = 256;
// A layer's name: its key in the package cache, 64 lowercase hex digits.
inline constexpr size_t kZygoteLayerNameLen = 64;

inline constexpr char kZygoteRunMagic[8] = {'m', 'c', 'p', 'x', 'z', 'r', 'u', '1'};

struct ZygoteRunBlob {
  char magic[8];
  uint64_t size;  // of the whole blob
  ZygoteRunView view;
};

// Checks that every offset of the blob at `blob` (`size` bytes, 8-byte aligned, writable) stays
// inside it and every string ends inside it, and makes them pointers. nullptr when it is not a
// well-formed blob.
ZygoteRunView* RelocateZygoteRun(void* blob, size_t size) noexcept;

// In a process the zygote has just forked (the extension's serve, zygote_extension.cc), with
// the run's stdin, stdout, stderr, report and start descriptors (at any numbers), the
// descriptors it joins the run's cgroup through (`join_count` of them, at most
// kMaxCgroupJoinFds, maybe none), and the name of the run's package layer (nullptr: none;
// anything but kZygoteLayerNameLen hex digits, or a layer in a zygote without layers, fails the
// run's set-up with EINVAL): writes "0" to each `join` descriptor (which moves its one thread
// in), puts the run's descriptors at 0, 1, 2, 3 and 5, the init's executable (kFdZygoteInit) at
// 4, and closes the rest, says "P" with its pidfd on the start socket, waits for "M" (it is in
// the run's cgroup: joined, or moved by the supervisor), makes the run's namespaces and writes
// its id maps. Then it vforks the run's init, which clones the program's
// process into this memory (CLONE_VM, PID 2) and executes the init's own small program
// (zygote_init.cc); says "I" with the init's pidfd, and ends. The program sets the sandbox up as
// a cold init (SetUpSandbox), reports ready, waits until the init has locked itself down and
// this process is gone, and applies the program's limits: only there does this function
// return, with the start socket still at 5. A failed step is reported on the report socket (3),
// as a cold init's.
//
// Neither this process nor the init runs Python: the zygote forked it with the interpreter's
// before-fork work done (PyOS_BeforeFork) and its child's half not, and the program's process,
// the only one of the run that returns to Python, does that half, `after_fork_in_program`
// (PyOS_AfterFork_Child). So the interpreter's after-fork work, and the copy-on-write faults it
// takes, happen once a run, and the interpreter's memory is copied once, at this fork.
void EnterZygoteRun(const ZygoteRunView& run, const int (&fds)[5], const int* join,
                    size_t join_count, pid_t zygote, const char* layer,
                    void (*after_fork_in_program)()) noexcept;

}  // namespace mcpexec::sandbox
