// See table-stats-collector.h.
#include "table-stats-collector.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace oxbow {

namespace {

// A blob reference of the integrated BlobDB (RocksDB's db/blob/blob_index.h, kBlob):
// type (1 byte) | file number (varint64) | offset (varint64) | size (varint64) | compression (1 byte).
constexpr char kBlobIndexTypeBlob = 1;

bool ReadVarint64(const char*& cursor, const char* end, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && cursor < end; shift += 7) {
    const uint64_t byte = static_cast<unsigned char>(*cursor++);
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

/** The stored size of the blob a reference points to; false for a reference of another kind (TTL). */
bool BlobSize(const rocksdb::Slice& reference, uint64_t* size) {
  const char* cursor = reference.data();
  const char* end = cursor + reference.size();
  if (cursor == end || *cursor++ != kBlobIndexTypeBlob) return false;
  uint64_t fileNumber = 0;
  uint64_t offset = 0;
  return ReadVarint64(cursor, end, &fileNumber) && ReadVarint64(cursor, end, &offset) && ReadVarint64(cursor, end, size);
}

struct TableRun {
  uint32_t tableId;
  TableFileStats stats;
};

class TableStatsCollector : public rocksdb::TablePropertiesCollector {
 public:
  rocksdb::Status AddUserKey(const rocksdb::Slice& key, const rocksdb::Slice& value, rocksdb::EntryType type,
                             rocksdb::SequenceNumber /*sequence*/, uint64_t /*fileSize*/) override {
    if (key.size() < 4) return rocksdb::Status::OK();  // no table id
    const auto* bytes = reinterpret_cast<const unsigned char*>(key.data());
    const uint32_t tableId = (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) | uint32_t{bytes[3]};
    // Keys arrive sorted, so a file's entries of one table are consecutive: no map lookup per entry.
    if (runs_.empty() || runs_.back().tableId != tableId) runs_.push_back(TableRun{tableId, {}});
    TableFileStats& stats = runs_.back().stats;
    stats.entries++;
    uint64_t size = 0;
    if (type == rocksdb::kEntryBlobIndex && BlobSize(value, &size)) stats.blobBytes += size + key.size();
    return rocksdb::Status::OK();
  }

  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) override {
    if (runs_.empty()) return rocksdb::Status::OK();
    std::string text;
    for (const TableRun& run : runs_) {
      if (!text.empty()) text += ';';
      text += std::to_string(run.tableId) + ':' + std::to_string(run.stats.blobBytes) + ':' + std::to_string(run.stats.entries);
    }
    properties->emplace(kTableStatsProperty, std::move(text));
    return rocksdb::Status::OK();
  }

  rocksdb::UserCollectedProperties GetReadableProperties() const override { return {}; }
  const char* Name() const override { return "oxbow.TableStatsCollector"; }

 private:
  std::vector<TableRun> runs_;
};

}  // namespace

rocksdb::TablePropertiesCollector* TableStatsCollectorFactory::CreateTablePropertiesCollector(
    rocksdb::TablePropertiesCollectorFactory::Context /*context*/) {
  return new TableStatsCollector();
}

std::map<uint32_t, TableFileStats> SumTableFileStats(const rocksdb::TablePropertiesCollection& files) {
  std::map<uint32_t, TableFileStats> sums;
  for (const auto& file : files) {
    const auto found = file.second->user_collected_properties.find(kTableStatsProperty);
    if (found == file.second->user_collected_properties.end()) continue;
    // "tableId:blobBytes:entries;..."
    const char* cursor = found->second.c_str();
    while (*cursor != '\0') {
      char* next = nullptr;
      const uint32_t tableId = static_cast<uint32_t>(std::strtoul(cursor, &next, 10));
      if (*next != ':') break;
      const uint64_t blobBytes = std::strtoull(next + 1, &next, 10);
      if (*next != ':') break;
      const uint64_t entries = std::strtoull(next + 1, &next, 10);
      TableFileStats& sum = sums[tableId];
      sum.blobBytes += blobBytes;
      sum.entries += entries;
      cursor = *next == ';' ? next + 1 : next;
    }
  }
  return sums;
}

}  // namespace oxbow
