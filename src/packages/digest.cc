#include "packages/digest.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <vector>

#include "base/unique_fd.h"

namespace mcpexec::packages {
namespace {

using Context = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::string Hex(const unsigned char* bytes, unsigned int n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 15]);
  }
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  return Hex(md, n);
}

Result<std::string> Sha256OfFile(int dirfd, const std::string& name) {
  UniqueFd fd(openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.Valid()) return Errno(ErrorCode::kNotFound, "open " + name);
  struct stat st;
  if (fstat(fd.Get(), &st) != 0) return Errno(ErrorCode::kInternal, "fstat " + name);
  if (!S_ISREG(st.st_mode)) {
    return MakeError(ErrorCode::kInvalidArgument, name + " is not a regular file");
  }
  Context ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return MakeError(ErrorCode::kInternal, "cannot start a SHA-256 digest");
  }
  std::vector<char> block(1 << 16);
  for (;;) {
    const ssize_t got = read(fd.Get(), block.data(), block.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Errno(ErrorCode::kInternal, "read " + name);
    if (got == 0) break;
    EVP_DigestUpdate(ctx.get(), block.data(), static_cast<size_t>(got));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  return Hex(md, n);
}

}  // namespace mcpexec::packages
