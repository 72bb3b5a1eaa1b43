#include "sandbox/sealed_self.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/result.h"
#include "base/unique_fd.h"

namespace mcpexec::sandbox {
namespace {

constexpr int kSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

bool WritableByNonRoot(const struct stat& st) {
  return st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
}

}  // namespace

Result<void> ReexecFromSealedCopyIfWritable(char** argv, char** envp) {
  UniqueFd self(open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  if (!self.Valid()) return Errno(ErrorCode::kInternal, "open(/proc/self/exe)");
  // Already the sealed copy (F_GET_SEALS fails with EINVAL on a regular file).
  const int seals = fcntl(self.Get(), F_GET_SEALS);
  if (seals >= 0 && (seals & kSeals) == kSeals) return {};
  struct stat st;
  if (fstat(self.Get(), &st) != 0) return Errno(ErrorCode::kInternal, "fstat(/proc/self/exe)");
  if (!WritableByNonRoot(st)) return {};

  UniqueFd copy(memfd_create("mcp-exec", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!copy.Valid()) return Errno(ErrorCode::kResourceExhausted, "memfd_create");
  for (off_t done = 0; done < st.st_size;) {
    const ssize_t n =
        sendfile(copy.Get(), self.Get(), &done, static_cast<size_t>(st.st_size - done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(ErrorCode::kInternal, "sendfile(memfd)");
    if (n == 0) return MakeError(ErrorCode::kInternal, "/proc/self/exe ended early");
  }
  if (fchmod(copy.Get(), 0555) != 0) return Errno(ErrorCode::kInternal, "fchmod(memfd)");
  if (fcntl(copy.Get(), F_ADD_SEALS, kSeals) != 0) {
    return Errno(ErrorCode::kInternal, "fcntl(memfd, F_ADD_SEALS)");
  }
  // fexecve() of a close-on-exec fd would fail for a script; for an ELF binary it works.
  fexecve(copy.Get(), argv, envp);
  return Errno(ErrorCode::kInternal, "fexecve(memfd)");
}

}  // namespace mcpexec::sandbox
