// The shared libraries packages on demand use, loaded when first needed rather than linked:
// libcrypto (SHA-256) and libcurl with its thirty-odd libraries (TLS, HTTP/2, Kerberos, LDAP
// ...). Linked, they would be loaded and relocated by every mcp-exec process, about 4 ms more
// for each `mcp-exec run` (0.4 ms for a static libcrypto alone), for a feature few servers turn
// on. Only their headers are compiled in (meson.build).
#pragma once

#include <curl/curl.h>
#include <openssl/evp.h>

#include "base/result.h"

namespace mcpexec::packages {

// The functions of libcrypto mcp-exec calls.
struct CryptoLibrary {
  EVP_MD_CTX* (*md_ctx_new)();
  void (*md_ctx_free)(EVP_MD_CTX* ctx);
  const EVP_MD* (*sha256)();
  int (*digest_init_ex)(EVP_MD_CTX* ctx, const EVP_MD* type, ENGINE* impl);
  int (*digest_update)(EVP_MD_CTX* ctx, const void* data, size_t count);
  int (*digest_final_ex)(EVP_MD_CTX* ctx, unsigned char* md, unsigned int* size);
};

// The functions of libcurl mcp-exec calls.
struct CurlLibrary {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL* handle, CURLoption option, ...);
  CURLcode (*easy_perform)(CURL* handle);
  CURLcode (*easy_getinfo)(CURL* handle, CURLINFO info, ...);
  void (*easy_cleanup)(CURL* handle);
  const char* (*easy_strerror)(CURLcode code);
  curl_slist* (*slist_append)(curl_slist* list, const char* string);
  void (*slist_free_all)(curl_slist* list);
};

// Each loads its library once; an error names the Debian package that has it. Thread-safe.
Result<const CryptoLibrary*> LoadCrypto();
Result<const CurlLibrary*> LoadCurl();

}  // namespace mcpexec::packages
