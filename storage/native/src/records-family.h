// The records column family (DESIGN.md §6, "The records family"): the small records every epoch
// rewrites (the store's own under table id 0xFFFFFFFF: committed epoch, metadata, table windows,
// cleanings; and the tables marked as records tables: a replayed source's positions) live in a
// column family of their own, so the files a growing table flushes span only that table and move
// down the LSM untouched instead of rewriting L1 at every L0 compaction.
//
// Routing is by a key's first four bytes (its table id): FamilyRouter says which family holds a
// key, a table or a range. Marks are fixed for a table's life and persisted in the records family
// (`0xFFFFFFFF | 'r' | table id`, a key the store never reads), so every open (read-only ones, a
// restored checkpoint, a standby's copy) routes before any table is marked again.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <vector>

namespace oxbow {

constexpr uint32_t kStoreRecordsTableId = 0xFFFFFFFFu;
constexpr const char* kRecordsFamilyName = "records";
/** The second byte after the store's table id of a persisted mark: 'r' | table id (4, big endian). */
constexpr char kRecordsMarkKind = 'r';

/** The table id of a key: its first four bytes, big endian; a shorter key padded with zeros. */
inline uint32_t KeyTableId(const rocksdb::Slice& key) {
  uint32_t id = 0;
  for (size_t i = 0; i < 4; i++) id = (id << 8) | (i < key.size() ? static_cast<uint8_t>(key[i]) : 0u);
  return id;
}

/** The persisted mark of a records table. */
std::string RecordsMarkKey(uint32_t tableId);

class FamilyRouter {
 public:
  /** `records` may be null (an old database opened read-only): every key is in `main`. */
  FamilyRouter(rocksdb::ColumnFamilyHandle* main, rocksdb::ColumnFamilyHandle* records) : main_(main), records_(records) {}

  rocksdb::ColumnFamilyHandle* Main() const { return main_; }
  /** Null when the database has no records family. */
  rocksdb::ColumnFamilyHandle* Records() const { return records_; }

  bool IsRecordsTable(uint32_t tableId) const {
    if (records_ == nullptr) return false;
    if (tableId == kStoreRecordsTableId) return true;
    const uint32_t count = count_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < count; i++) {
      if (marked_[i].load(std::memory_order_relaxed) == tableId) return true;
    }
    return false;
  }

  rocksdb::ColumnFamilyHandle* ForTable(uint32_t tableId) const { return IsRecordsTable(tableId) ? records_ : main_; }
  rocksdb::ColumnFamilyHandle* ForKey(const rocksdb::Slice& key) const { return ForTable(KeyTableId(key)); }

  /**
   * The families that may hold keys of [start, end) (an empty `end` with `unbounded`: no end), in
   * key order of nothing in particular: out[0..n). 0 for an empty range.
   */
  int ForRange(const rocksdb::Slice& start, const rocksdb::Slice* end, rocksdb::ColumnFamilyHandle* out[2]) const;

  /** Registers a mark (no write); false when the table was marked already or there is no room left. */
  bool AddMark(uint32_t tableId);
  bool Full() const { return count_.load(std::memory_order_acquire) >= kMaxMarks; }
  /** The marked table ids, in the order they were marked. */
  std::vector<uint32_t> Marks() const;

  /** Held shared by every write (parse and write) and exclusively by a mark's migration. */
  std::shared_mutex writes;
  /**
   * Odd while a migration moves a table's keys between families: a read that saw it change (or
   * odd) reads again (a seqlock; migrations are rare and short, reads never wait otherwise).
   */
  std::atomic<uint64_t> generation{0};

  /** Runs `read` until no migration overlapped it. */
  template <typename Read>
  auto Stable(Read read) const -> decltype(read()) {
    for (;;) {
      const uint64_t before = generation.load(std::memory_order_acquire);
      if ((before & 1) != 0) {
        std::shared_lock<std::shared_mutex> wait(const_cast<std::shared_mutex&>(writes));
        continue;
      }
      auto result = read();
      std::atomic_thread_fence(std::memory_order_acquire);
      if (generation.load(std::memory_order_relaxed) == before) return result;
    }
  }

 private:
  /** Marks beyond this stay unmarked: their tables keep their keys in the main family (correct, only slower). */
  static constexpr uint32_t kMaxMarks = 4096;
  rocksdb::ColumnFamilyHandle* main_;
  rocksdb::ColumnFamilyHandle* records_;
  std::atomic<uint32_t> marked_[kMaxMarks] = {};
  std::atomic<uint32_t> count_{0};
};

/**
 * Moves every key of [start, end) of the main family into the records family in one write (puts
 * and a range deletion), with `extra` (the mark's persisted key) in the same batch. The caller
 * holds `writes` exclusively. `end` null: every key from `start` on.
 */
rocksdb::Status MoveToRecords(rocksdb::DB* db, FamilyRouter& router, const rocksdb::Slice& start, const rocksdb::Slice* end, const std::string* extraKey);

/**
 * Marks a table as a records table: moves its keys out of the main family, persists the mark and
 * routes the table to the records family from now on, atomically for readers (Stable) and writers
 * (`writes`). False when it was marked already, the database has no records family (read-only
 * opens of an old database), or the marks are full.
 */
rocksdb::Status MarkRecordsTable(rocksdb::DB* db, FamilyRouter& router, uint32_t tableId, bool* marked);

/** At open: registers the persisted marks and moves the store's records out of the main family. */
rocksdb::Status LoadRecordsFamily(rocksdb::DB* db, FamilyRouter& router, bool readOnly);

/**
 * An iterator over several column families whose keys are disjoint: the union in key order,
 * forward and backward (with direction changes), bounds as each child's read options give them.
 */
class DisjointMergeIterator : public rocksdb::Iterator {
 public:
  DisjointMergeIterator(rocksdb::Iterator* first, rocksdb::Iterator* second) : children_{first, second} {}
  ~DisjointMergeIterator() override;

  bool Valid() const override { return current_ != nullptr; }
  void SeekToFirst() override;
  void SeekToLast() override;
  void Seek(const rocksdb::Slice& target) override;
  void SeekForPrev(const rocksdb::Slice& target) override;
  void Next() override;
  void Prev() override;
  rocksdb::Slice key() const override { return current_->key(); }
  rocksdb::Slice value() const override { return current_->value(); }
  rocksdb::Status status() const override;

 private:
  void PickSmallest();
  void PickLargest();

  rocksdb::Iterator* children_[2];
  rocksdb::Iterator* current_ = nullptr;
  bool forward_ = true;
};

}  // namespace oxbow
