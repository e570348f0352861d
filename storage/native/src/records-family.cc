// See records-family.h.
#include "records-family.h"

#include <memory>
#include <mutex>

#include "packed-batch.h"

namespace oxbow {

namespace {

std::string BigEndian32(uint32_t value) {
  std::string bytes(4, '\0');
  for (int i = 3; i >= 0; i--) {
    bytes[static_cast<size_t>(i)] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  return bytes;
}

}  // namespace

std::string RecordsMarkKey(uint32_t tableId) {
  std::string key = BigEndian32(kStoreRecordsTableId);
  key.push_back(kRecordsMarkKind);
  key.append(BigEndian32(tableId));
  return key;
}

int FamilyRouter::ForRange(const rocksdb::Slice& start, const rocksdb::Slice* end, rocksdb::ColumnFamilyHandle* out[2]) const {
  if (end != nullptr && start.compare(*end) >= 0) return 0;
  if (records_ == nullptr) {
    out[0] = main_;
    return 1;
  }
  const uint64_t first = KeyTableId(start);
  uint64_t last = kStoreRecordsTableId;
  if (end != nullptr) {
    if (end->size() <= 4) {
      // Every key below a table prefix `T` (or a shorter one) is in a table below T.
      const uint64_t padded = KeyTableId(*end);
      last = padded == 0 ? 0 : padded - 1;
    } else {
      last = KeyTableId(*end);
    }
  }
  if (last < first) last = first;  // keys shorter than a table id: route as their padded id
  uint64_t recordsTables = last == kStoreRecordsTableId ? 1 : 0;
  const uint32_t count = count_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < count; i++) {
    const uint64_t id = marked_[i].load(std::memory_order_relaxed);
    if (id >= first && id <= last) recordsTables++;
  }
  int n = 0;
  if (recordsTables < last - first + 1) out[n++] = main_;
  if (recordsTables > 0) out[n++] = records_;
  return n;
}

bool FamilyRouter::AddMark(uint32_t tableId) {
  if (records_ == nullptr || IsRecordsTable(tableId)) return false;
  const uint32_t count = count_.load(std::memory_order_relaxed);
  if (count >= kMaxMarks) return false;
  marked_[count].store(tableId, std::memory_order_relaxed);
  count_.store(count + 1, std::memory_order_release);
  return true;
}

std::vector<uint32_t> FamilyRouter::Marks() const {
  const uint32_t count = count_.load(std::memory_order_acquire);
  std::vector<uint32_t> ids(count);
  for (uint32_t i = 0; i < count; i++) ids[i] = marked_[i].load(std::memory_order_relaxed);
  return ids;
}

rocksdb::Status MoveToRecords(rocksdb::DB* db, FamilyRouter& router, const rocksdb::Slice& start, const rocksdb::Slice* end, const std::string* extraKey) {
  rocksdb::ReadOptions read;
  read.total_order_seek = true;
  if (end != nullptr) read.iterate_upper_bound = end;
  std::unique_ptr<rocksdb::Iterator> iterator(db->NewIterator(read, router.Main()));
  rocksdb::WriteBatch batch;
  std::string lastKey;
  bool any = false;
  for (iterator->Seek(start); iterator->Valid(); iterator->Next()) {
    rocksdb::Status status = batch.Put(router.Records(), iterator->key(), iterator->value());
    if (!status.ok()) return status;
    lastKey.assign(iterator->key().data(), iterator->key().size());
    any = true;
  }
  if (!iterator->status().ok()) return iterator->status();
  iterator.reset();
  if (any) {
    // Exactly the keys copied: up to the bound, or to just after the last key.
    std::string deleteEnd = end != nullptr ? end->ToString() : lastKey + std::string(1, '\0');
    rocksdb::Status status = AddDeleteRange(&batch, router.Main(), start, deleteEnd);
    if (!status.ok()) return status;
  }
  if (extraKey != nullptr) {
    rocksdb::Status status = batch.Put(router.Records(), *extraKey, rocksdb::Slice());
    if (!status.ok()) return status;
  }
  if (batch.Count() == 0) return rocksdb::Status::OK();
  rocksdb::WriteOptions write;
  write.sync = true;
  return db->Write(write, &batch);
}

rocksdb::Status MarkRecordsTable(rocksdb::DB* db, FamilyRouter& router, uint32_t tableId, bool* marked) {
  *marked = false;
  if (router.Records() == nullptr || router.IsRecordsTable(tableId) || router.Full()) return rocksdb::Status::OK();
  std::unique_lock<std::shared_mutex> lock(router.writes);
  if (router.IsRecordsTable(tableId)) return rocksdb::Status::OK();
  router.generation.fetch_add(1, std::memory_order_acq_rel);
  const std::string start = BigEndian32(tableId);
  const std::string end = BigEndian32(tableId + 1);
  const rocksdb::Slice endSlice(end);
  const std::string mark = RecordsMarkKey(tableId);
  rocksdb::Status status = MoveToRecords(db, router, start, &endSlice, &mark);
  if (status.ok()) *marked = router.AddMark(tableId);
  router.generation.fetch_add(1, std::memory_order_acq_rel);
  return status;
}

rocksdb::Status LoadRecordsFamily(rocksdb::DB* db, FamilyRouter& router, bool readOnly) {
  if (router.Records() == nullptr) return rocksdb::Status::OK();
  std::string from = BigEndian32(kStoreRecordsTableId);
  from.push_back(kRecordsMarkKind);
  std::string to = BigEndian32(kStoreRecordsTableId);
  to.push_back(static_cast<char>(kRecordsMarkKind + 1));
  const rocksdb::Slice toSlice(to);
  rocksdb::ReadOptions read;
  read.total_order_seek = true;
  read.iterate_upper_bound = &toSlice;
  {
    std::unique_ptr<rocksdb::Iterator> marks(db->NewIterator(read, router.Records()));
    for (marks->Seek(from); marks->Valid(); marks->Next()) {
      const rocksdb::Slice key = marks->key();
      if (key.size() == 9) router.AddMark(KeyTableId(rocksdb::Slice(key.data() + 5, 4)));
    }
    if (!marks->status().ok()) return marks->status();
  }
  if (readOnly) return rocksdb::Status::OK();
  // A database written before the records family keeps the store's records in the main family.
  const std::string storeStart = BigEndian32(kStoreRecordsTableId);
  return MoveToRecords(db, router, storeStart, nullptr, nullptr);
}

DisjointMergeIterator::~DisjointMergeIterator() {
  delete children_[0];
  delete children_[1];
}

void DisjointMergeIterator::PickSmallest() {
  current_ = nullptr;
  for (rocksdb::Iterator* child : children_) {
    if (child->Valid() && (current_ == nullptr || child->key().compare(current_->key()) < 0)) current_ = child;
  }
}

void DisjointMergeIterator::PickLargest() {
  current_ = nullptr;
  for (rocksdb::Iterator* child : children_) {
    if (child->Valid() && (current_ == nullptr || child->key().compare(current_->key()) > 0)) current_ = child;
  }
}

void DisjointMergeIterator::SeekToFirst() {
  for (rocksdb::Iterator* child : children_) child->SeekToFirst();
  forward_ = true;
  PickSmallest();
}

void DisjointMergeIterator::SeekToLast() {
  for (rocksdb::Iterator* child : children_) child->SeekToLast();
  forward_ = false;
  PickLargest();
}

void DisjointMergeIterator::Seek(const rocksdb::Slice& target) {
  for (rocksdb::Iterator* child : children_) child->Seek(target);
  forward_ = true;
  PickSmallest();
}

void DisjointMergeIterator::SeekForPrev(const rocksdb::Slice& target) {
  for (rocksdb::Iterator* child : children_) child->SeekForPrev(target);
  forward_ = false;
  PickLargest();
}

void DisjointMergeIterator::Next() {
  if (!forward_) {
    // The other children stand before the current key: put them after it (no child holds it).
    const std::string key = current_->key().ToString();
    for (rocksdb::Iterator* child : children_) {
      if (child != current_) child->Seek(key);
    }
    forward_ = true;
  }
  current_->Next();
  PickSmallest();
}

void DisjointMergeIterator::Prev() {
  if (forward_) {
    const std::string key = current_->key().ToString();
    for (rocksdb::Iterator* child : children_) {
      if (child != current_) child->SeekForPrev(key);
    }
    forward_ = false;
  }
  current_->Prev();
  PickLargest();
}

rocksdb::Status DisjointMergeIterator::status() const {
  for (rocksdb::Iterator* child : children_) {
    if (!child->status().ok()) return child->status();
  }
  return rocksdb::Status::OK();
}

}  // namespace oxbow
