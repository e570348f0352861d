// Version garbage collection inside RocksDB compactions. Keys follow the MVCC layout
// `tableId (4, big endian) | vnode (1) | key | ~epoch (8, big endian)`, so the versions of one key
// are adjacent, newest first. A version is dropped when a newer version of the same key is itself
// at or below the table's retention watermark: no read inside the readable window can reach it.
// Watermarks are set per table id from JavaScript; a table without one keeps every version.
//
// A tombstone at the watermark is dropped too, but only in a compaction of every file: otherwise
// older versions could live in files outside the compaction and dropping it would resurrect them.
#pragma once

#include <rocksdb/compaction_filter.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace oxbow {

/** Retention watermarks by table id, shared between the JS thread and compaction threads. */
class WatermarkRegistry {
 public:
  void Set(uint32_t tableId, uint64_t watermarkEpoch);
  /**
   * A bound on every table's watermark (a node's share store keeps the versions a checkpoint of its
   * at a later epoch must still hold); UINT64_MAX, the default, bounds nothing.
   */
  void SetCap(uint64_t capEpoch);
  /** 0 when the table has none (keep everything); at most the cap. */
  uint64_t Get(uint32_t tableId) const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<uint32_t, uint64_t> watermarks_;
  uint64_t cap_ = UINT64_MAX;
};

class VersionGcFilterFactory : public rocksdb::CompactionFilterFactory {
 public:
  explicit VersionGcFilterFactory(std::shared_ptr<WatermarkRegistry> registry) : registry_(std::move(registry)) {}
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(const rocksdb::CompactionFilter::Context& context) override;
  const char* Name() const override { return "oxbow.VersionGcFilterFactory"; }

 private:
  std::shared_ptr<WatermarkRegistry> registry_;
};

}  // namespace oxbow
