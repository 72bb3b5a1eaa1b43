#include "packages/libraries.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace mcpexec::packages {
namespace {

// dlopen()s `soname` and resolves each of `names` into the matching member of `out`, in order.
class Loader {
 public:
  Loader(const char* soname, const char* package) : package_(package) {
    handle_ = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* why = dlerror();
      error_ = std::string(soname) + " cannot be loaded (" + (why ? why : "dlopen failed") +
               "): apt install " + package;
    }
  }
  template <typename F>
  void Resolve(const char* name, F& out) {
    if (!error_.empty()) return;
    out = reinterpret_cast<F>(dlsym(handle_, name));
    if (out == nullptr) error_ = std::string("the library lacks ") + name + ": apt install " + package_;
  }
  const std::string& Error() const { return error_; }

 private:
  const char* package_;
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace

Result<const CryptoLibrary*> LoadCrypto() {
  static CryptoLibrary library;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    Loader l("libcrypto.so.3", "libssl3");
    l.Resolve("EVP_MD_CTX_new", library.md_ctx_new);
    l.Resolve("EVP_MD_CTX_free", library.md_ctx_free);
    l.Resolve("EVP_sha256", library.sha256);
    l.Resolve("EVP_DigestInit_ex", library.digest_init_ex);
    l.Resolve("EVP_DigestUpdate", library.digest_update);
    l.Resolve("EVP_DigestFinal_ex", library.digest_final_ex);
    error = l.Error();
  });
  if (!error.empty()) {
    return MakeError(ErrorCode::kFailedPrecondition, "packages on demand need libcrypto: " + error);
  }
  return &library;
}

Result<const CurlLibrary*> LoadCurl() {
  static CurlLibrary library;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    Loader l("libcurl.so.4", "libcurl4");
    l.Resolve("curl_global_init", library.global_init);
    l.Resolve("curl_easy_init", library.easy_init);
    l.Resolve("curl_easy_setopt", library.easy_setopt);
    l.Resolve("curl_easy_perform", library.easy_perform);
    l.Resolve("curl_easy_getinfo", library.easy_getinfo);
    l.Resolve("curl_easy_cleanup", library.easy_cleanup);
    l.Resolve("curl_easy_strerror", library.easy_strerror);
    l.Resolve("curl_slist_append", library.slist_append);
    l.Resolve("curl_slist_free_all", library.slist_free_all);
    error = l.Error();
    if (error.empty() && library.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      error = "curl_global_init failed";
    }
  });
  if (!error.empty()) {
    return MakeError(ErrorCode::kFailedPrecondition, "a package index needs libcurl: " + error);
  }
  return &library;
}

}  // namespace mcpexec::packages
