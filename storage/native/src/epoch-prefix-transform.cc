// See epoch-prefix-transform.h.
#include "epoch-prefix-transform.h"

namespace oxbow {

// tableId (4) + vnode (1) + at least the epoch: shorter keys (store metadata, raw benchmark keys)
// are outside the domain and simply get no prefix bloom entry.
static constexpr size_t kMinimumMvccKeyBytes = 5 + kEpochSuffixBytes;

rocksdb::Slice EpochPrefixTransform::Transform(const rocksdb::Slice& key) const {
  return rocksdb::Slice(key.data(), key.size() - kEpochSuffixBytes);
}

bool EpochPrefixTransform::InDomain(const rocksdb::Slice& key) const {
  return key.size() >= kMinimumMvccKeyBytes;
}

}  // namespace oxbow
