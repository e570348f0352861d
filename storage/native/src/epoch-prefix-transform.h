// The prefix extractor of the MVCC key layout `tableId | vnode | key | ~epoch`: the prefix is
// the key without its 8-byte inverted epoch, so a prefix bloom filter answers "does this SST hold
// any version of this key?" and the "latest version at or before E" seek skips files that do not.
#pragma once

#include <rocksdb/slice_transform.h>

namespace oxbow {

constexpr size_t kEpochSuffixBytes = 8;

class EpochPrefixTransform : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "oxbow.EpochPrefixTransform.v1"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override;
  bool InDomain(const rocksdb::Slice& key) const override;
};

}  // namespace oxbow
