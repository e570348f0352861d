// See packed-batch.h.
#include "packed-batch.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "epoch-prefix-transform.h"
#include "records-family.h"

namespace oxbow {

namespace {

constexpr uint8_t kPut = 1;
constexpr uint8_t kDelete = 2;
constexpr uint8_t kDeleteRange = 3;

struct Entry {
  // Sort key: 16 bytes of the key after the run's common prefix, big endian, zero padded. Most
  // comparisons end on these words, without touching the key bytes in the packed buffer.
  uint64_t head0;
  uint64_t head1;
  const char* key;
  const char* value;
  uint32_t keyLength;
  uint32_t valueLength;
  uint32_t index;
  uint8_t op;
};

uint32_t ReadLittleEndian32(const char* bytes) {
  uint32_t value;
  std::memcpy(&value, bytes, 4);
  return value;
}

uint64_t BigEndianWord(const char* key, size_t length, size_t from) {
  uint64_t word = 0;
  for (size_t i = 0; i < 8; i++) {
    word <<= 8;
    if (from + i < length) word |= static_cast<uint8_t>(key[from + i]);
  }
  return word;
}

int CompareKeys(const char* a, uint32_t aLength, const char* b, uint32_t bLength) {
  const int bytes = std::memcmp(a, b, std::min(aLength, bLength));
  if (bytes != 0) return bytes;
  return aLength < bLength ? -1 : aLength > bLength ? 1 : 0;
}

// Calls visit(entry) for each entry in packed order; fails on a malformed batch before visiting
// anything past the malformed entry.
template <typename Visit>
rocksdb::Status ForEachEntry(const char* cursor, const char* end, Visit visit) {
  uint32_t index = 0;
  while (cursor < end) {
    if (end - cursor < 9) return rocksdb::Status::InvalidArgument("write: truncated batch");
    const uint8_t op = static_cast<uint8_t>(*cursor);
    const uint32_t keyLength = ReadLittleEndian32(cursor + 1);
    const char* key = cursor + 5;
    if (static_cast<size_t>(end - key) < static_cast<size_t>(keyLength) + 4) return rocksdb::Status::InvalidArgument("write: truncated key");
    const uint32_t valueLength = ReadLittleEndian32(key + keyLength);
    const char* value = key + keyLength + 4;
    if (static_cast<size_t>(end - value) < valueLength) return rocksdb::Status::InvalidArgument("write: truncated value");
    if (op != kPut && op != kDelete && op != kDeleteRange) return rocksdb::Status::InvalidArgument("write: unknown operation");
    visit(Entry{0, 0, key, value, keyLength, valueLength, index++, op});
    cursor = value + valueLength;
  }
  return rocksdb::Status::OK();
}

// Checks the batch and whether every run of puts is already in key order (a view keyed by an
// increasing id, a one-row epoch): such a batch is added as it is, with no entry array or sort.
rocksdb::Status Check(const char* data, size_t length, bool* sorted) {
  *sorted = true;
  const char* previousKey = nullptr;
  uint32_t previousLength = 0;
  return ForEachEntry(data, data + length, [&](const Entry& entry) {
    if (entry.op != kPut) {
      previousKey = nullptr;
      return;
    }
    if (previousKey != nullptr && *sorted && CompareKeys(previousKey, previousLength, entry.key, entry.keyLength) > 0) *sorted = false;
    previousKey = entry.key;
    previousLength = entry.keyLength;
  });
}

// Sorts entries[from, to) (all puts) by key, equal keys by their packed position.
void SortRun(std::vector<Entry>& entries, size_t from, size_t to) {
  // The run's common key prefix (a table id, a vnode, leading key bytes every row shares) tells
  // nothing apart: the sort words start after it.
  size_t prefix = entries[from].keyLength;
  for (size_t i = from + 1; i < to && prefix > 0; i++) {
    const Entry& entry = entries[i];
    size_t same = 0;
    const size_t limit = std::min<size_t>(prefix, entry.keyLength);
    while (same < limit && entry.key[same] == entries[from].key[same]) same++;
    prefix = same;
  }
  for (size_t i = from; i < to; i++) {
    Entry& entry = entries[i];
    entry.head0 = BigEndianWord(entry.key, entry.keyLength, prefix);
    entry.head1 = BigEndianWord(entry.key, entry.keyLength, prefix + 8);
  }
  std::sort(entries.begin() + static_cast<std::ptrdiff_t>(from), entries.begin() + static_cast<std::ptrdiff_t>(to), [](const Entry& a, const Entry& b) {
    if (a.head0 != b.head0) return a.head0 < b.head0;
    if (a.head1 != b.head1) return a.head1 < b.head1;
    const int bytes = CompareKeys(a.key, a.keyLength, b.key, b.keyLength);
    return bytes != 0 ? bytes < 0 : a.index < b.index;
  });
}

// The entries of a checked batch in the order they are added: runs of puts sorted.
std::vector<Entry> Ordered(const char* data, size_t length) {
  std::vector<Entry> entries;
  entries.reserve(length / 64);
  ForEachEntry(data, data + length, [&](const Entry& entry) { entries.push_back(entry); });
  size_t runStart = 0;
  for (size_t i = 0; i <= entries.size(); i++) {
    if (i == entries.size() || entries[i].op != kPut) {
      if (i - runStart > 1) SortRun(entries, runStart, i);
      runStart = i + 1;
    }
  }
  return entries;
}

// Adds entries to their families; consecutive entries of one table (most of a batch) look the
// family up once.
class RoutedAdder {
 public:
  RoutedAdder(rocksdb::WriteBatch* batch, const FamilyRouter& router) : batch_(batch), router_(router) {}

  rocksdb::Status Add(const Entry& entry) {
    const rocksdb::Slice key(entry.key, entry.keyLength);
    if (entry.op == kDeleteRange) return AddRoutedDeleteRange(batch_, router_, key, rocksdb::Slice(entry.value, entry.valueLength));
    const uint32_t tableId = KeyTableId(key);
    if (family_ == nullptr || tableId != tableId_) {
      tableId_ = tableId;
      family_ = router_.ForTable(tableId);
    }
    if (entry.op == kPut) return batch_->Put(family_, key, rocksdb::Slice(entry.value, entry.valueLength));
    return batch_->Delete(family_, key);
  }

 private:
  rocksdb::WriteBatch* batch_;
  const FamilyRouter& router_;
  rocksdb::ColumnFamilyHandle* family_ = nullptr;
  uint32_t tableId_ = 0;
};

}  // namespace

rocksdb::Status AddDeleteRange(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* family, const rocksdb::Slice& start, const rocksdb::Slice& end) {
  if (!InInsertHintDomain(start)) return batch->DeleteRange(family, start, end);
  if (start.compare(end) >= 0) return rocksdb::Status::OK();
  rocksdb::Status status = batch->Delete(family, start);
  if (!status.ok()) return status;
  std::string after(start.data(), start.size());
  after.push_back('\0');
  if (rocksdb::Slice(after).compare(end) >= 0) return status;
  return batch->DeleteRange(family, after, end);
}

rocksdb::Status AddRoutedDeleteRange(rocksdb::WriteBatch* batch, const FamilyRouter& router, const rocksdb::Slice& start, const rocksdb::Slice& end) {
  rocksdb::ColumnFamilyHandle* families[2];
  const int count = router.ForRange(start, &end, families);
  for (int i = 0; i < count; i++) {
    rocksdb::Status status = AddDeleteRange(batch, families[i], start, end);
    if (!status.ok()) return status;
  }
  return rocksdb::Status::OK();
}

rocksdb::Status ParsePackedBatch(const char* data, size_t length, rocksdb::WriteBatch* batch, const FamilyRouter& router) {
  bool sorted = false;
  rocksdb::Status status = Check(data, length, &sorted);
  if (!status.ok()) return status;
  RoutedAdder adder(batch, router);
  if (sorted) {
    ForEachEntry(data, data + length, [&](const Entry& entry) {
      if (status.ok()) status = adder.Add(entry);
    });
    return status;
  }
  for (const Entry& entry : Ordered(data, length)) {
    status = adder.Add(entry);
    if (!status.ok()) return status;
  }
  return rocksdb::Status::OK();
}

rocksdb::Status PackedBatchOrder(const char* data, size_t length, std::vector<uint32_t>* order) {
  bool sorted = false;
  rocksdb::Status status = Check(data, length, &sorted);
  if (!status.ok()) return status;
  for (const Entry& entry : Ordered(data, length)) order->push_back(entry.index);
  return rocksdb::Status::OK();
}

}  // namespace oxbow
