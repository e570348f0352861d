// See version-gc-filter.h.
#include "version-gc-filter.h"

#include <string>

#include "epoch-prefix-transform.h"

namespace oxbow {

void WatermarkRegistry::Set(uint32_t tableId, uint64_t watermarkEpoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  watermarks_[tableId] = watermarkEpoch;
}

void WatermarkRegistry::SetCap(uint64_t capEpoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  cap_ = capEpoch;
}

uint64_t WatermarkRegistry::Get(uint32_t tableId) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = watermarks_.find(tableId);
  const uint64_t watermark = found == watermarks_.end() ? 0 : found->second;
  return watermark < cap_ ? watermark : cap_;
}

namespace {

constexpr size_t kMinimumMvccKeyBytes = 5 + kEpochSuffixBytes;

uint64_t ReadBigEndian64(const char* bytes) {
  uint64_t value = 0;
  for (int i = 0; i < 8; i++) value = (value << 8) | static_cast<uint8_t>(bytes[i]);
  return value;
}

uint32_t ReadBigEndian32(const char* bytes) {
  uint32_t value = 0;
  for (int i = 0; i < 4; i++) value = (value << 8) | static_cast<uint8_t>(bytes[i]);
  return value;
}

// One instance per (sub)compaction; RocksDB feeds it keys in order from one thread, so the
// "previous key" state needs no lock.
class VersionGcFilter : public rocksdb::CompactionFilter {
 public:
  VersionGcFilter(std::shared_ptr<WatermarkRegistry> registry, bool dropTombstones)
      : registry_(std::move(registry)), dropTombstones_(dropTombstones) {}

  bool Filter(int /*level*/, const rocksdb::Slice& key, const rocksdb::Slice& value, std::string* /*newValue*/,
              bool* /*valueChanged*/) const override {
    return Drop(key, value.size() == 0 || value[0] == 0);
  }

  // A value in a blob file (blob files, options.h) is decided by its key alone: blob values are at
  // least 2 bytes and rows, never one-byte tombstones, so the value need not be read from the blob.
  Decision FilterBlobByKey(int /*level*/, const rocksdb::Slice& key, std::string* /*newValue*/,
                           std::string* /*skipUntil*/) const override {
    return Drop(key, false) ? Decision::kRemove : Decision::kKeep;
  }

  const char* Name() const override { return "oxbow.VersionGcFilter"; }

 private:
  // Whether this version goes; called for every key of the compaction in order (values inline or in
  // blob files), so the shadowing state below sees every key.
  bool Drop(const rocksdb::Slice& key, bool tombstone) const {
    if (key.size() < kMinimumMvccKeyBytes) return false;
    const size_t prefixBytes = key.size() - kEpochSuffixBytes;
    const uint32_t tableId = ReadBigEndian32(key.data());
    if (!haveTable_ || tableId != currentTable_) {
      currentTable_ = tableId;
      currentWatermark_ = registry_->Get(tableId);
      haveTable_ = true;
      shadowingPrefix_.clear();
      haveShadowingPrefix_ = false;
    }
    if (currentWatermark_ == 0) return false;
    const uint64_t epoch = ~ReadBigEndian64(key.data() + prefixBytes);
    const rocksdb::Slice prefix(key.data(), prefixBytes);
    if (haveShadowingPrefix_ && prefix == rocksdb::Slice(shadowingPrefix_)) {
      // A newer version of this key at or below the watermark was already kept.
      return true;
    }
    if (epoch <= currentWatermark_) {
      // The newest version at or below the watermark: it shadows every older one.
      shadowingPrefix_.assign(prefix.data(), prefix.size());
      haveShadowingPrefix_ = true;
      // A tombstone there hides only older versions, which all go too when this compaction holds
      // every file (no older version can hide elsewhere: epochs only grow), so it can go as well.
      return tombstone && dropTombstones_;
    }
    return false;
  }

  std::shared_ptr<WatermarkRegistry> registry_;
  const bool dropTombstones_;
  mutable bool haveTable_ = false;
  mutable uint32_t currentTable_ = 0;
  mutable uint64_t currentWatermark_ = 0;
  mutable bool haveShadowingPrefix_ = false;
  mutable std::string shadowingPrefix_;
};

}  // namespace

std::unique_ptr<rocksdb::CompactionFilter> VersionGcFilterFactory::CreateCompactionFilter(
    const rocksdb::CompactionFilter::Context& context) {
  // Only a compaction of every file sees all versions of a key (max_subcompactions stays 1, so
  // one filter instance sees the whole key range in order).
  return std::make_unique<VersionGcFilter>(registry_, context.is_full_compaction);
}

}  // namespace oxbow
