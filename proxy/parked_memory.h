// Heap bytes that parking connections gave back (session.h): buffers the pool did not keep, and
// the frames of the loops that ended. Connections parking by the thousand leave holes in the heap
// that glibc keeps resident; the server returns their pages once enough have been freed (server.cpp).
#pragma once
#include <cstddef>

namespace shardscope::proxy::parked_memory {

void noteFreed(size_t bytes);
// Bytes noted since the last call, on any thread.
size_t takeFreed();

}  // namespace shardscope::proxy::parked_memory
