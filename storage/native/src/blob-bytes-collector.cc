// See blob-bytes-collector.h.
#include "blob-bytes-collector.h"

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

class BlobBytesCollector : public rocksdb::TablePropertiesCollector {
 public:
  rocksdb::Status AddUserKey(const rocksdb::Slice& key, const rocksdb::Slice& value, rocksdb::EntryType type,
                             rocksdb::SequenceNumber /*sequence*/, uint64_t /*fileSize*/) override {
    uint64_t size = 0;
    if (type != rocksdb::kEntryBlobIndex || key.size() < 4 || !BlobSize(value, &size)) return rocksdb::Status::OK();
    const auto* bytes = reinterpret_cast<const unsigned char*>(key.data());
    const uint32_t tableId = (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) | uint32_t{bytes[3]};
    // Keys arrive sorted, so a file's entries of one table are consecutive: no map lookup per entry.
    if (!runs_.empty() && runs_.back().first == tableId) {
      runs_.back().second += size + key.size();
    } else {
      runs_.emplace_back(tableId, size + key.size());
    }
    return rocksdb::Status::OK();
  }

  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) override {
    if (runs_.empty()) return rocksdb::Status::OK();
    std::string text;
    for (const auto& run : runs_) {
      if (!text.empty()) text += ';';
      text += std::to_string(run.first) + ':' + std::to_string(run.second);
    }
    properties->emplace(kBlobBytesProperty, std::move(text));
    return rocksdb::Status::OK();
  }

  rocksdb::UserCollectedProperties GetReadableProperties() const override { return {}; }
  const char* Name() const override { return "oxbow.BlobBytesCollector"; }

 private:
  std::vector<std::pair<uint32_t, uint64_t>> runs_;
};

}  // namespace

rocksdb::TablePropertiesCollector* BlobBytesCollectorFactory::CreateTablePropertiesCollector(
    rocksdb::TablePropertiesCollectorFactory::Context /*context*/) {
  return new BlobBytesCollector();
}

std::map<uint32_t, uint64_t> SumBlobBytes(const rocksdb::TablePropertiesCollection& files) {
  std::map<uint32_t, uint64_t> sums;
  for (const auto& file : files) {
    const auto found = file.second->user_collected_properties.find(kBlobBytesProperty);
    if (found == file.second->user_collected_properties.end()) continue;
    const std::string& text = found->second;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find(';', start);
      if (end == std::string::npos) end = text.size();
      const size_t colon = text.find(':', start);
      if (colon != std::string::npos && colon < end) {
        const uint32_t tableId = static_cast<uint32_t>(std::strtoul(text.c_str() + start, nullptr, 10));
        sums[tableId] += std::strtoull(text.c_str() + colon + 1, nullptr, 10);
      }
      start = end + 1;
    }
  }
  return sums;
}

}  // namespace oxbow
