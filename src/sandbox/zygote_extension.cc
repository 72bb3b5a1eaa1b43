// mcp_exec_zygote: the CPython extension a zygote's agent (warm_agent.cc) sets each run up
// with. It is the zygote-run code of sandbox/child (zygote_run.h, steps.h), compiled for the
// interpreter of the rootfs against the stable ABI, so that a run forked from the zygote takes
// the very steps a cold init takes. Embedded in the binary (zygote_extension.h) and handed to
// the zygote as a memfd: nothing is installed in the rootfs. docs/engine.md says why an
// extension and not an embedded interpreter.
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <vector>

#include "sandbox/child/zygote_run.h"

namespace {

using mcpexec::sandbox::ZygoteRunView;

ZygoteRunView* configured = nullptr;

// This process's argument area (fields 48 and 49 of /proc/self/stat): the runs' inits hide it.
bool OwnArgumentArea(char** start, size_t* len) {
  char stat[4096];
  const int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, stat, sizeof stat - 1);
  close(fd);
  if (n <= 0) return false;
  stat[n] = '\0';
  const char* p = strrchr(stat, ')');
  if (p == nullptr) return false;
  ++p;
  unsigned long long values[2] = {};
  // After the ")": field 3 onwards, one space before each.
  for (int field = 3; field <= 49 && *p == ' '; ++field) {
    char* end;
    const unsigned long long value = strtoull(p + 1, &end, 10);
    if (field >= 48) values[field - 48] = value;
    p = end;
    while (*p != ' ' && *p != '\0') ++p;
  }
  if (values[0] == 0 || values[1] <= values[0]) return false;
  *start = reinterpret_cast<char*>(values[0]);
  *len = static_cast<size_t>(values[1] - values[0]);
  return true;
}

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
  if (!OwnArgumentArea(&run->plan.supervisor_args, &run->plan.supervisor_args_len)) {
    run->plan.supervisor_args = nullptr;
    run->plan.supervisor_args_len = 0;
  }
  configured = run;
  Py_RETURN_NONE;
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1
#endif

// collapse_memory(): the zygote's anonymous memory, once its imports are done, in 2 MiB pages
// wherever a region holds an aligned 2 MiB span. Every fork copies, and every exit frees, one
// page-table entry per page of it: a 2 MiB page is one entry where 4 KiB pages are 512. A fork's
// write into one splits only that mapping and copies 4 KiB, as before (docs/engine.md, "What a
// fork costs"). Best effort: a kernel without MADV_COLLAPSE (before 6.1), transparent huge
// pages set to never, or no free 2 MiB block leaves the memory as it was.
PyObject* CollapseMemory(PyObject*, PyObject*) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;
  FILE* maps = fopen("/proc/self/maps", "re");
  if (maps == nullptr) return PyErr_SetFromErrnoWithFilename(PyExc_OSError, "/proc/self/maps");
  char line[512];
  while (fgets(line, sizeof line, maps) != nullptr) {
    unsigned long start, end, offset, inode;
    char perms[5], dev[16];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %4s %lx %15s %lu %n", &start, &end, perms, &offset, dev, &inode,
               &path_at) < 6) {
      continue;
    }
    const char* path = line + path_at;
    // Private, writable and not backed by a file: the interpreter's heap and arenas.
    if (strcmp(perms, "rw-p") != 0 || inode != 0) continue;
    if (*path != '\n' && *path != '\0' && strncmp(path, "[heap]", 6) != 0) continue;
    const uintptr_t from = (start + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t to = end & ~(kHuge - 1);
    if (to > from) spans.emplace_back(from, to);
  }
  fclose(maps);
  // One call a region: each call first drains every CPU's page lists, which costs milliseconds.
  for (const auto& [from, to] : spans) madvise(reinterpret_cast<void*>(from), to - from, MADV_COLLAPSE);
  Py_RETURN_NONE;
}

void AfterForkInProgram() { PyOS_AfterFork_Child(); }

// fork_run((stdin, stdout, stderr, report, start), zygote_pid, layer): the zygote forks a run;
// `layer` the name of the run's package layer, or None. Returns the fork's pid in the zygote,
// and None in the run's program process only (EnterZygoteRun): the fork's other processes never
// return to Python. os.fork() with the child's half of the interpreter's fork work left to the
// program (zygote_run.h says why).
PyObject* ForkRun(PyObject*, PyObject* args) {
  int fds[5];
  int zygote;
  const char* layer;
  if (!PyArg_ParseTuple(args, "(iiiii)iz", &fds[0], &fds[1], &fds[2], &fds[3], &fds[4],
                        &zygote, &layer)) {
    return nullptr;
  }
  if (configured == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "configure() the zygote's runs first");
    return nullptr;
  }
  PyOS_BeforeFork();
  const pid_t pid = fork();  // glibc's: its atfork handlers (malloc, OpenBLAS) run as for os.fork
  if (pid == 0) {
    mcpexec::sandbox::EnterZygoteRun(*configured, fds, zygote, layer, AfterForkInProgram);
    Py_RETURN_NONE;
  }
  const int saved = errno;
  PyOS_AfterFork_Parent();
  if (pid < 0) {
    errno = saved;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  return PyLong_FromLong(pid);
}

PyMethodDef methods[] = {
    {"configure", Configure, METH_O, "configure(blob): what the zygote's runs set up"},
    {"collapse_memory", CollapseMemory, METH_NOARGS,
     "collapse_memory(): the anonymous memory in 2 MiB pages where it can be"},
    {"fork_run", ForkRun, METH_VARARGS,
     "fork_run(fds, zygote_pid, layer): fork a run; its pid, or None in its program's process"},
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
