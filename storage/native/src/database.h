// The Database object exposed to JavaScript: one open RocksDB instance with oxbow's tuned options,
// synchronous point reads, packed write batches, snapshots, properties, and the long operations
// (flush, compaction, checkpoint) on worker threads returning Promises.
#pragma once

#include <napi.h>
#include <rocksdb/db.h>
#include <rocksdb/statistics.h>

#include <atomic>
#include <memory>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "records-family.h"
#include "table-stats-collector.h"
#include "version-gc-filter.h"

namespace oxbow {

class IteratorWrap;

/** The column family handles of an open DB, destroyed (once) before it closes. */
struct FamilyHandles {
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  bool destroyed = false;
  void Destroy(rocksdb::DB* db);
};

class Database : public Napi::ObjectWrap<Database> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit Database(const Napi::CallbackInfo& info);
  ~Database() override;

  rocksdb::DB* db() const { return db_; }
  /** Throws a JS error (code "Closed") when the database is not open. */
  rocksdb::DB* OpenDb(Napi::Env env) const;
  void RegisterIterator(IteratorWrap* iterator) { iterators_.insert(iterator); }
  void UnregisterIterator(IteratorWrap* iterator) { iterators_.erase(iterator); }
  /** Looks up a snapshot handle created by snapshot(); throws for an unknown or released one. */
  const rocksdb::Snapshot* SnapshotById(Napi::Env env, uint32_t id) const;

  std::atomic<int> pendingWorkers{0};
  /** An export holds `snapshot` until it is done (a release meanwhile waits for it); main thread only. */
  void UseSnapshot(const rocksdb::Snapshot* snapshot);
  void DoneWithSnapshot(const rocksdb::Snapshot* snapshot);
  /** Drops the cached point iterators (after a flush or compaction: releases replaced files now). */
  void ReleasePointIterator();
  /**
   * A new iterator over the families holding keys within `read`'s bounds: one family's, or both
   * merged (records-family.h). Never overlaps a records table's migration.
   */
  rocksdb::Iterator* NewRoutedIterator(Napi::Env env, const rocksdb::ReadOptions& read, const std::string& onlyFamily);

 private:
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value Get(const Napi::CallbackInfo& info);
  Napi::Value MultiGet(const Napi::CallbackInfo& info);
  Napi::Value GetLatestVersion(const Napi::CallbackInfo& info);
  Napi::Value Write(const Napi::CallbackInfo& info);
  Napi::Value WriteAsync(const Napi::CallbackInfo& info);
  Napi::Value DeleteRange(const Napi::CallbackInfo& info);
  Napi::Value NewIterator(const Napi::CallbackInfo& info);
  Napi::Value CreateSnapshot(const Napi::CallbackInfo& info);
  Napi::Value ReleaseSnapshot(const Napi::CallbackInfo& info);
  Napi::Value GetProperty(const Napi::CallbackInfo& info);
  Napi::Value MemoryUsage(const Napi::CallbackInfo& info);
  Napi::Value Statistics(const Napi::CallbackInfo& info);
  Napi::Value LiveFiles(const Napi::CallbackInfo& info);
  Napi::Value ApproximateSize(const Napi::CallbackInfo& info);
  Napi::Value TableStats(const Napi::CallbackInfo& info);
  Napi::Value SetRetentionWatermark(const Napi::CallbackInfo& info);
  Napi::Value CapRetentionWatermarks(const Napi::CallbackInfo& info);
  Napi::Value Flush(const Napi::CallbackInfo& info);
  Napi::Value CompactRange(const Napi::CallbackInfo& info);
  Napi::Value Checkpoint(const Napi::CallbackInfo& info);
  Napi::Value ExportRanges(const Napi::CallbackInfo& info);
  Napi::Value Ingest(const Napi::CallbackInfo& info);
  Napi::Value Share(const Napi::CallbackInfo& info);
  Napi::Value Unshare(const Napi::CallbackInfo& info);
  Napi::Value MarkRecordsTable(const Napi::CallbackInfo& info);
  Napi::Value RecordsTables(const Napi::CallbackInfo& info);

  void CloseIteratorsAndSnapshots();
  /** The cached prefix-mode iterator of a family (0 main, 1 records) for GetLatestVersion, refreshed after writes. */
  rocksdb::Iterator* PointIterator(int index, rocksdb::ColumnFamilyHandle* family);
  /** The families that exist (main, and records unless an old database was opened read-only). */
  std::vector<rocksdb::ColumnFamilyHandle*> Families() const;

  rocksdb::DB* db_ = nullptr;
  /**
   * Owns the open DB. Shared with the wrappers attached to it in other threads (share() /
   * new Database(token)): RocksDB's DB is thread-safe, and the last owner to let go closes it.
   */
  std::shared_ptr<rocksdb::DB> owner_;
  /** The DB's column family handles (shared like owner_) and the routing of keys to them. */
  std::shared_ptr<FamilyHandles> families_;
  std::shared_ptr<FamilyRouter> router_;
  bool readOnly_ = false;
  /** A wrapper attached to a database another thread opened (its close() releases only itself). */
  bool attached_ = false;
  std::shared_ptr<rocksdb::Statistics> statistics_;
  std::shared_ptr<WatermarkRegistry> watermarks_;
  std::set<IteratorWrap*> iterators_;
  std::map<uint32_t, const rocksdb::Snapshot*> snapshots_;
  /** Snapshots an export on the thread pool reads (by pointer: its uses), and those released meanwhile (freed after the last use). */
  std::map<const rocksdb::Snapshot*, int> snapshotUses_;
  std::set<const rocksdb::Snapshot*> releasedInUse_;
  uint32_t nextSnapshotId_ = 1;

  struct PointIteratorCache {
    rocksdb::Iterator* iterator = nullptr;
    rocksdb::SequenceNumber sequence = 0;
    uint64_t generation = 0;
  };
  PointIteratorCache pointIterators_[2];
  /** Bumped by flushes and compactions: a cached iterator must not pin replaced files. */
  std::shared_ptr<std::atomic<uint64_t>> fileGeneration_;
  /** tableStats()'s sums over the live files per table id, valid while fileGeneration_ equals tableStatsGeneration_. */
  std::map<uint32_t, TableFileStats> tableFileStats_;
  uint64_t tableStatsGeneration_ = 0;
  bool tableStatsCached_ = false;
};

}  // namespace oxbow
