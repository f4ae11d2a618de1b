// OpenSSL's small per-record blocks come from a per-thread cache (issue 19: no malloc per TLS message).
#include "proxy/tls_memory.h"

#include <gtest/gtest.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include <thread>

namespace shardscope::proxy {
namespace {

TEST(TlsMemory, LibsslAllocatesThroughTheCache) {
  const size_t before = tlsMemoryCacheAllocations();
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());  // libssl's own calls, bound by the dynamic linker
  ASSERT_NE(ctx, nullptr);
  EXPECT_GT(tlsMemoryCacheAllocations(), before);
  SSL_CTX_free(ctx);
}

TEST(TlsMemory, ASmallBlockFreedIsHandedOutAgain) {
  void* a = OPENSSL_zalloc(40);
  OPENSSL_free(a);
  void* b = OPENSSL_zalloc(40);  // the same block, from the cache, zeroed by OpenSSL
  EXPECT_EQ(a, b);
  EXPECT_EQ(static_cast<unsigned char*>(b)[39], 0);
  OPENSSL_free(b);
}

TEST(TlsMemory, AThreadThatEndsLeavesNoCachedBlocks) {
  // Blocks a thread still caches when it ends are freed with it: in the ASan build LeakSanitizer
  // fails this test at exit otherwise (it found such blocks of mirror threads in integration runs).
  const size_t before = tlsMemoryCacheAllocations();
  std::thread([] {
    void* a = OPENSSL_malloc(40);
    void* b = OPENSSL_malloc(40);
    OPENSSL_free(a);  // both cached when the thread ends
    OPENSSL_free(b);
  }).join();
  EXPECT_EQ(tlsMemoryCacheAllocations(), before + 2);
}

TEST(TlsMemory, BlocksStayOrdinaryMallocBlocks) {
  void* a = OPENSSL_malloc(40);
  a = OPENSSL_realloc(a, 4000);  // grows like any malloc block
  ASSERT_NE(a, nullptr);
  free(a);  // memory OpenSSL handed out may be released with free()
  void* m = malloc(24);
  OPENSSL_free(m);  // and the other way round
}

}  // namespace
}  // namespace shardscope::proxy
