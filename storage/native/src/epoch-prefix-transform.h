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

namespace oxbow {

constexpr size_t kTablePrefixBytes = 5;

// Keys that get a memtable insert hint (TablePrefixTransform): at least `tableId | vnode`, not
// ending in a zero byte. RocksDB 7.8 keeps one hint per prefix for both of a memtable's skiplists,
// the keys' and the range deletions' (MemTable::Add), so a range deletion starting at a key in
// this domain would reuse the other list's position and corrupt both. No range deletion starts
// in it: one whose start key is in it is added as a point delete of that key and a range deletion
// from the key followed by a zero byte, the same keys (packed-batch.cc, AddDeleteRange). oxbow's
// own range deletions start at a table prefix or a cleaning record's key, which end in zeros.
inline bool InInsertHintDomain(const rocksdb::Slice& key) {
  return key.size() >= kTablePrefixBytes && key[key.size() - 1] != 0;
}

// `tableId | vnode`: the memtable keeps an insert hint per table and vnode (database.cc).
class TablePrefixTransform : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "oxbow.TablePrefixTransform.v1"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override { return rocksdb::Slice(key.data(), kTablePrefixBytes); }
  bool InDomain(const rocksdb::Slice& key) const override { return InInsertHintDomain(key); }
};

}  // namespace oxbow
