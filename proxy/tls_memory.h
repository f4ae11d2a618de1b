// OpenSSL 3.0 allocates small blocks for every TLS record it writes or reads (a WPACKET's sub-packet,
// 40 bytes, freed again before SSL_write returns). Its allocations go through a per-thread cache of
// small blocks instead (OpenSSL's CRYPTO_malloc / CRYPTO_zalloc / CRYPTO_free are interposed), so the
// TLS forward path reaches malloc only while warming up (issue 19).
#pragma once
#include <cstddef>

namespace shardscope::proxy {

// OpenSSL allocations served so far (a test checks that libssl's come here); calling it also links
// the cache into the executable.
size_t tlsMemoryCacheAllocations();

}  // namespace shardscope::proxy
