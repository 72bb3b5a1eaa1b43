#include "packages/digest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "base/unique_fd.h"
#include "packages/libraries.h"

namespace mcpexec::packages {

Sha256::Sha256() {
  auto lib = LoadCrypto();
  if (!lib.ok()) {
    std::fprintf(stderr, "mcp-exec: %s\n", lib.error().message.c_str());
    std::abort();
  }
  lib_ = *lib;
  ctx_ = lib_->md_ctx_new();
  if (ctx_ == nullptr || lib_->digest_init_ex(ctx_, lib_->sha256(), nullptr) != 1) {
    throw std::bad_alloc();
  }
}

Sha256::~Sha256() { lib_->md_ctx_free(ctx_); }

void Sha256::Update(std::string_view data) { lib_->digest_update(ctx_, data.data(), data.size()); }

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  lib_->digest_final_ex(ctx_, md, &n);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(kDigits[md[i] >> 4]);
    out.push_back(kDigits[md[i] & 15]);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 digest;
  digest.Update(data);
  return digest.HexDigest();
}

bool IsSha256Hex(std::string_view text) {
  return text.size() == 64 &&
         text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

Result<std::string> Sha256OfFile(int dirfd, const std::string& name) {
  UniqueFd fd(openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.Valid()) return Errno(ErrorCode::kNotFound, "open " + name);
  struct stat st;
  if (fstat(fd.Get(), &st) != 0) return Errno(ErrorCode::kInternal, "fstat " + name);
  if (!S_ISREG(st.st_mode)) {
    return MakeError(ErrorCode::kInvalidArgument, name + " is not a regular file");
  }
  Sha256 digest;
  std::vector<char> block(1 << 16);
  for (;;) {
    const ssize_t got = read(fd.Get(), block.data(), block.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Errno(ErrorCode::kInternal, "read " + name);
    if (got == 0) break;
    digest.Update(std::string_view(block.data(), static_cast<size_t>(got)));
  }
  return digest.HexDigest();
}

}  // namespace mcpexec::packages
