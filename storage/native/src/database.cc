// See database.h.
#include "database.h"

#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>

#include "epoch-prefix-transform.h"
#include "iterator.h"
#include "options.h"
#include "packed-batch.h"
#include "sst-files.h"
#include "status-error.h"

namespace oxbow {

namespace {

rocksdb::Slice BufferSlice(const Napi::Value& value) {
  Napi::Buffer<char> buffer = value.As<Napi::Buffer<char>>();
  // An empty Buffer may have no data pointer; rocksdb::Slice::compare asserts on one.
  if (buffer.Length() == 0) return rocksdb::Slice();
  return rocksdb::Slice(buffer.Data(), buffer.Length());
}

Napi::Buffer<char> Bytes(Napi::Env env, const rocksdb::Slice& slice) {
  return Napi::Buffer<char>::Copy(env, slice.data(), slice.size());
}

double NumberOption(const Napi::Object& options, const char* name, double fallback) {
  Napi::Value value = options.Get(name);
  return value.IsNumber() ? value.As<Napi::Number>().DoubleValue() : fallback;
}

bool BoolOption(const Napi::Object& options, const char* name, bool fallback) {
  Napi::Value value = options.Get(name);
  return value.IsBoolean() ? value.As<Napi::Boolean>().Value() : fallback;
}

rocksdb::CompressionType CompressionOption(Napi::Env env, const Napi::Object& options, const char* name,
                                           rocksdb::CompressionType fallback) {
  Napi::Value value = options.Get(name);
  if (!value.IsString()) return fallback;
  const std::string text = value.As<Napi::String>().Utf8Value();
  if (text == "none") return rocksdb::kNoCompression;
  if (text == "snappy") return rocksdb::kSnappyCompression;
  if (text == "lz4") return rocksdb::kLZ4Compression;
  if (text == "zstd") return rocksdb::kZSTD;
  throw UsageError(env, "InvalidArgument", "unknown compression '" + text + "' (none, snappy, lz4, zstd)");
}

// Runs one RocksDB call on the libuv thread pool and settles a Promise with its status.
class StatusWorker : public Napi::AsyncWorker {
 public:
  StatusWorker(Napi::Env env, Database* database, Napi::Object databaseObject, std::string context,
               std::function<rocksdb::Status()> work, bool releasesPointIterator = true)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        database_(database),
        context_(std::move(context)),
        work_(std::move(work)),
        releasesPointIterator_(releasesPointIterator) {
    databaseReference_ = Napi::Persistent(databaseObject);
    database_->pendingWorkers++;
  }

  /** Keeps a JS value (the packed batch a write reads on the worker thread) alive until settled. */
  void Retain(Napi::Object value) { retained_ = Napi::Persistent(value); }

  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override { status_ = work_(); }

  void OnOK() override {
    database_->pendingWorkers--;
    // Flushes and compactions replace files; a write only adds to the memtable, which the cached
    // point iterator notices by its sequence number (PointIterator()).
    if (releasesPointIterator_) database_->ReleasePointIterator();
    if (status_.ok()) {
      deferred_.Resolve(Env().Undefined());
    } else {
      deferred_.Reject(StatusToError(Env(), status_, context_).Value());
    }
  }

  void OnError(const Napi::Error& error) override {
    database_->pendingWorkers--;
    deferred_.Reject(error.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  Database* database_;
  Napi::ObjectReference databaseReference_;
  std::string context_;
  std::function<rocksdb::Status()> work_;
  bool releasesPointIterator_;
  Napi::ObjectReference retained_;
  rocksdb::Status status_;
};

// Counts flushes and compactions, so the cached point iterator is re-created after the set of
// files changes and never keeps obsolete SST files (and their disk space) alive.
class FileGenerationListener : public rocksdb::EventListener {
 public:
  explicit FileGenerationListener(std::shared_ptr<std::atomic<uint64_t>> generation) : generation_(std::move(generation)) {}
  void OnFlushCompleted(rocksdb::DB* /*db*/, const rocksdb::FlushJobInfo& /*info*/) override { generation_->fetch_add(1); }
  void OnCompactionCompleted(rocksdb::DB* /*db*/, const rocksdb::CompactionJobInfo& /*info*/) override { generation_->fetch_add(1); }
  void OnExternalFileIngested(rocksdb::DB* /*db*/, const rocksdb::ExternalFileIngestionInfo& /*info*/) override { generation_->fetch_add(1); }

 private:
  std::shared_ptr<std::atomic<uint64_t>> generation_;
};

// Open databases shared with other threads (Database.share()): token -> the DB and the state its
// wrappers share (the compaction filter's watermarks, the file generation). An entry keeps the DB
// open until it is unshared; the sharing database's close() unshares every token of its DB.
struct SharedDatabase {
  std::shared_ptr<rocksdb::DB> db;
  std::shared_ptr<WatermarkRegistry> watermarks;
  std::shared_ptr<std::atomic<uint64_t>> fileGeneration;
  std::shared_ptr<FamilyHandles> families;
  std::shared_ptr<FamilyRouter> router;
  bool readOnly;
};
std::mutex sharedMutex;
std::map<uint32_t, SharedDatabase> sharedDatabases;
uint32_t nextSharedToken = 1;

}  // namespace

void FamilyHandles::Destroy(rocksdb::DB* db) {
  if (destroyed) return;
  destroyed = true;
  for (rocksdb::ColumnFamilyHandle* handle : handles) db->DestroyColumnFamilyHandle(handle);
  handles.clear();
}

Napi::Function Database::Define(Napi::Env env) {
  return DefineClass(env, "Database",
                     {
                         InstanceMethod("close", &Database::Close),
                         InstanceMethod("get", &Database::Get),
                         InstanceMethod("multiGet", &Database::MultiGet),
                         InstanceMethod("getLatestVersion", &Database::GetLatestVersion),
                         InstanceMethod("write", &Database::Write),
                         InstanceMethod("writeAsync", &Database::WriteAsync),
                         InstanceMethod("deleteRange", &Database::DeleteRange),
                         InstanceMethod("iterator", &Database::NewIterator),
                         InstanceMethod("snapshot", &Database::CreateSnapshot),
                         InstanceMethod("releaseSnapshot", &Database::ReleaseSnapshot),
                         InstanceMethod("getProperty", &Database::GetProperty),
                         InstanceMethod("memoryUsage", &Database::MemoryUsage),
                         InstanceMethod("statistics", &Database::Statistics),
                         InstanceMethod("liveFiles", &Database::LiveFiles),
                         InstanceMethod("approximateSize", &Database::ApproximateSize),
                         InstanceMethod("tableStats", &Database::TableStats),
                         InstanceMethod("setRetentionWatermark", &Database::SetRetentionWatermark),
                         InstanceMethod("capRetentionWatermarks", &Database::CapRetentionWatermarks),
                         InstanceMethod("flush", &Database::Flush),
                         InstanceMethod("compactRange", &Database::CompactRange),
                         InstanceMethod("checkpoint", &Database::Checkpoint),
                         InstanceMethod("exportRanges", &Database::ExportRanges),
                         InstanceMethod("ingest", &Database::Ingest),
                         InstanceMethod("share", &Database::Share),
                         InstanceMethod("unshare", &Database::Unshare),
                         InstanceMethod("markRecordsTable", &Database::MarkRecordsTable),
                         InstanceMethod("recordsTables", &Database::RecordsTables),
                     });
}

// new Database(path, options): opens (creating if missing) with oxbow's tuned options.
// new Database(token): a wrapper in this thread over the database another thread shared (share()).
Database::Database(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Database>(info) {
  Napi::Env env = info.Env();
  if (info.Length() >= 1 && info[0].IsNumber()) {
    const uint32_t token = info[0].As<Napi::Number>().Uint32Value();
    std::lock_guard<std::mutex> lock(sharedMutex);
    auto found = sharedDatabases.find(token);
    if (found == sharedDatabases.end()) throw UsageError(env, "InvalidArgument", "Database(token): no database is shared under this token");
    owner_ = found->second.db;
    attached_ = true;
    watermarks_ = found->second.watermarks;
    fileGeneration_ = found->second.fileGeneration;
    families_ = found->second.families;
    router_ = found->second.router;
    readOnly_ = found->second.readOnly;
    db_ = owner_.get();
    return;
  }
  if (info.Length() < 1 || !info[0].IsString()) throw UsageError(env, "InvalidArgument", "Database(path, options): path must be a string");
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  Napi::Object options = info.Length() > 1 && info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);

  rocksdb::Options dbOptions;
  dbOptions.create_if_missing = BoolOption(options, "createIfMissing", true);
  dbOptions.error_if_exists = BoolOption(options, "errorIfExists", false);
  dbOptions.paranoid_checks = true;
  dbOptions.IncreaseParallelism(static_cast<int>(NumberOption(options, "parallelism", 2)));
  const uint64_t writeBufferBytes = static_cast<uint64_t>(NumberOption(options, "writeBufferBytes", 64 << 20));
  dbOptions.OptimizeLevelStyleCompaction(writeBufferBytes * 4);
  dbOptions.write_buffer_size = static_cast<size_t>(writeBufferBytes);
  // L0 to L1 after four flushes, into an L1 of at most two memtables (DESIGN.md §6, "Compaction
  // of a growing table"): an L0 file spans every table written in its epochs, so each L0 to L1
  // compaction rewrites the L1 files in that span, and an L1 as large as the memtable budget made
  // a growing table rewrite itself again and again. The records every epoch rewrites (a source's
  // positions, below a view; the store's, under table id 0xFFFFFFFF) are in a column family of
  // their own (records-family.h), so a growing view's flushed files overlap nothing and move down
  // untouched (DESIGN.md §6, "The records family").
  dbOptions.level0_file_num_compaction_trigger = 4;
  dbOptions.max_bytes_for_level_base = writeBufferBytes * 2;
  dbOptions.max_open_files = static_cast<int>(NumberOption(options, "maxOpenFiles", -1));
  // One compaction filter instance must see a whole compaction in key order (version-gc-filter.h).
  dbOptions.max_subcompactions = 1;
  // LZ4 at every level: RocksDB moves a file down untouched (a trivial move) only between levels
  // of one compression, and with the records in their own family a growing view's flushed files
  // overlap nothing below them, so every one of them moves to the bottom without a rewrite. LZ4
  // above a ZSTD bottom level rewrote every row once more into it. Measured (BENCHMARKS.md, "The
  // records family"): at 10M events of q0 and q1 RocksDB's threads used 3.2-3.3 s with LZ4
  // everywhere, 4.1-4.3 s with ZSTD everywhere and 7.1-8.9 s with LZ4 above ZSTD; at 2M events
  // of q1, q7 and q19 ZSTD everywhere cost 25-65% more of RocksDB's CPU than LZ4 everywhere (its
  // flushes compress with ZSTD) and 4-13% of the events per CPU-second. ZSTD everywhere kept the
  // data directory a third smaller (160-172 MiB against 250-263 MiB at 10M): `compression` sets it.
  dbOptions.compression = CompressionOption(env, options, "compression", rocksdb::kLZ4Compression);
  dbOptions.bottommost_compression = CompressionOption(env, options, "bottommostCompression", dbOptions.compression);
  dbOptions.compression_per_level.clear();
  dbOptions.prefix_extractor = std::make_shared<EpochPrefixTransform>();
  dbOptions.memtable_prefix_bloom_size_ratio = 0.05;
  // Insert hints per table and vnode: a table's rows in an epoch's batch are added in key order
  // (packed-batch.cc), and most land right after the table's previous insert (row ids, sequence
  // keys), so the skiplist starts from the last insert of the same `tableId | vnode` instead of
  // searching from its head. Hints need one writer at a time in the memtable.
  if (BoolOption(options, "memtableInsertHints", true)) {
    dbOptions.memtable_insert_with_hint_prefix_extractor = std::make_shared<TablePrefixTransform>();
    dbOptions.allow_concurrent_memtable_write = false;
  }
  if (BoolOption(options, "statistics", false)) {
    statistics_ = rocksdb::CreateDBStatistics();
    dbOptions.statistics = statistics_;
  }
  watermarks_ = std::make_shared<WatermarkRegistry>();
  fileGeneration_ = std::make_shared<std::atomic<uint64_t>>(0);
  dbOptions.listeners.push_back(std::make_shared<FileGenerationListener>(fileGeneration_));
  dbOptions.compaction_filter_factory = std::make_shared<VersionGcFilterFactory>(watermarks_);
  dbOptions.table_properties_collector_factories.push_back(std::make_shared<TableStatsCollectorFactory>());

  ApplyStorageLayout(env, options, dbOptions);

  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(static_cast<size_t>(NumberOption(options, "blockCacheBytes", 64 << 20)));
  // memtableBudgetBytes > 0: a write buffer manager bounds every memtable together to that many
  // bytes and charges them to the block cache (RocksDB's way to give it one memory figure: the
  // cache's capacity holds blocks and memtables; --memory-limit sizes both, executor/engine/memory-manager.ts).
  const double memtableBudgetBytes = NumberOption(options, "memtableBudgetBytes", 0);
  if (memtableBudgetBytes > 0) {
    dbOptions.write_buffer_manager = std::make_shared<rocksdb::WriteBufferManager>(static_cast<size_t>(memtableBudgetBytes), table.block_cache);
  }
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(NumberOption(options, "bloomBitsPerKey", 10), false));
  table.whole_key_filtering = true;
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  // Partitioned index and filters: a point read loads one small partition, never the whole
  // file's filter. An unpartitioned filter of a large SST (7.5 MB for 3M keys) exceeds a shard of
  // the block cache (64 MiB in 64 shards) and was read again for every point read: 13.7 ms each
  // instead of 0.03 ms (BENCHMARKS.md, "One-row INSERT to visible under a view", the join view's INSERT).
  table.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
  table.partition_filters = true;
  table.metadata_block_size = 4096;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  table.pin_top_level_index_and_filter = true;
  table.format_version = 5;
  table.block_size = static_cast<size_t>(NumberOption(options, "blockBytes", 16 << 10));
  dbOptions.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  // The records family (records-family.h): the store's records and the records tables, apart
  // from the growing tables. Flushes are atomic across families: every automatic flush flushes
  // both, so the records family's small memtable never keeps a WAL file alive.
  dbOptions.atomic_flush = true;
  dbOptions.create_missing_column_families = true;
  const rocksdb::ColumnFamilyOptions mainOptions(dbOptions);
  rocksdb::ColumnFamilyOptions recordsOptions(dbOptions);
  recordsOptions.write_buffer_size = std::min<size_t>(static_cast<size_t>(writeBufferBytes), 4 << 20);
  recordsOptions.enable_blob_files = false;
  readOnly_ = BoolOption(options, "readOnly", false);
  // false: the layout before the records family (tests of the migration make old databases with it).
  const bool withRecordsFamily = BoolOption(options, "recordsFamily", true);
  std::vector<std::string> names;
  if (!rocksdb::DB::ListColumnFamilies(dbOptions, path, &names).ok() || names.empty()) {
    names = {rocksdb::kDefaultColumnFamilyName};  // a new database (or the open says what is wrong)
  }
  const bool hasRecords = std::find(names.begin(), names.end(), kRecordsFamilyName) != names.end();
  if (hasRecords && !withRecordsFamily) throw UsageError(env, "InvalidArgument", "recordsFamily: false cannot open a database that has a records family");
  if (!hasRecords && !readOnly_ && withRecordsFamily) names.push_back(kRecordsFamilyName);
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names) descriptors.emplace_back(name, name == kRecordsFamilyName ? recordsOptions : mainOptions);

  rocksdb::DB* db = nullptr;
  families_ = std::make_shared<FamilyHandles>();
  // Read-only: for inspecting a checkpoint without writing into it (no LOCK, WAL or MANIFEST).
  rocksdb::Status status = readOnly_ ? rocksdb::DB::OpenForReadOnly(dbOptions, path, descriptors, &families_->handles, &db)
                                     : rocksdb::DB::Open(dbOptions, path, descriptors, &families_->handles, &db);
  ThrowIfError(env, status, "open " + path);
  std::shared_ptr<FamilyHandles> families = families_;
  owner_ = std::shared_ptr<rocksdb::DB>(db, [families](rocksdb::DB* opened) {
    families->Destroy(opened);
    opened->Close();
    delete opened;
  });
  db_ = db;
  rocksdb::ColumnFamilyHandle* main = nullptr;
  rocksdb::ColumnFamilyHandle* records = nullptr;
  for (size_t i = 0; i < names.size(); i++) {
    if (names[i] == rocksdb::kDefaultColumnFamilyName) main = families_->handles[i];
    if (names[i] == kRecordsFamilyName) records = families_->handles[i];
  }
  router_ = std::make_shared<FamilyRouter>(main, records);
  ThrowIfError(env, LoadRecordsFamily(db, *router_, readOnly_), "open " + path + " (records family)");
}

std::vector<rocksdb::ColumnFamilyHandle*> Database::Families() const {
  std::vector<rocksdb::ColumnFamilyHandle*> families{router_->Main()};
  if (router_->Records() != nullptr) families.push_back(router_->Records());
  return families;
}

rocksdb::Iterator* Database::NewRoutedIterator(Napi::Env env, const rocksdb::ReadOptions& read, const std::string& onlyFamily) {
  if (!onlyFamily.empty()) {
    rocksdb::ColumnFamilyHandle* family = onlyFamily == kRecordsFamilyName ? router_->Records()
                                          : onlyFamily == rocksdb::kDefaultColumnFamilyName ? router_->Main()
                                                                                             : nullptr;
    if (family == nullptr) throw UsageError(env, "InvalidArgument", "iterator: no column family '" + onlyFamily + "' (default, records)");
    return db_->NewIterator(read, family);
  }
  const rocksdb::Slice lower = read.iterate_lower_bound != nullptr ? *read.iterate_lower_bound : rocksdb::Slice();
  for (;;) {
    const uint64_t before = router_->generation.load(std::memory_order_acquire);
    if ((before & 1) != 0) {
      std::shared_lock<std::shared_mutex> wait(router_->writes);
      continue;
    }
    rocksdb::ColumnFamilyHandle* families[2];
    const int count = router_->ForRange(lower, read.iterate_upper_bound, families);
    rocksdb::Iterator* iterator = count == 2 ? new DisjointMergeIterator(db_->NewIterator(read, families[0]), db_->NewIterator(read, families[1]))
                                             : db_->NewIterator(read, count == 1 ? families[0] : router_->Main());
    std::atomic_thread_fence(std::memory_order_acquire);
    if (router_->generation.load(std::memory_order_relaxed) == before) return iterator;
    delete iterator;
  }
}

Database::~Database() {
  CloseIteratorsAndSnapshots();
  if (db_ != nullptr) {
    // Pending workers hold a reference to this object, so none can be running here. The DB closes
    // when its last owner lets go (wrappers in other threads may still read it).
    db_ = nullptr;
    owner_.reset();
  }
}

rocksdb::DB* Database::OpenDb(Napi::Env env) const {
  if (db_ == nullptr) throw UsageError(env, "Closed", "the database is closed");
  return db_;
}

const rocksdb::Snapshot* Database::SnapshotById(Napi::Env env, uint32_t id) const {
  auto found = snapshots_.find(id);
  if (found == snapshots_.end()) throw UsageError(env, "InvalidArgument", "unknown or released snapshot");
  return found->second;
}

void Database::CloseIteratorsAndSnapshots() {
  std::set<IteratorWrap*> iterators;
  iterators.swap(iterators_);
  for (IteratorWrap* iterator : iterators) iterator->Detach();
  ReleasePointIterator();
  if (db_ != nullptr) {
    for (auto& entry : snapshots_) db_->ReleaseSnapshot(entry.second);
    for (const rocksdb::Snapshot* snapshot : releasedInUse_) db_->ReleaseSnapshot(snapshot);
  }
  snapshots_.clear();
  releasedInUse_.clear();
  snapshotUses_.clear();
}

Napi::Value Database::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (db_ == nullptr) return env.Undefined();
  if (pendingWorkers.load() > 0) throw UsageError(env, "Busy", "cannot close while a flush, compaction or checkpoint runs");
  CloseIteratorsAndSnapshots();
  if (!attached_) {
    // The tokens this database shared go with it; wrappers already attached keep it open.
    std::lock_guard<std::mutex> lock(sharedMutex);
    for (auto entry = sharedDatabases.begin(); entry != sharedDatabases.end();) {
      if (entry->second.db == owner_) entry = sharedDatabases.erase(entry);
      else ++entry;
    }
  }
  rocksdb::Status status;
  // The last owner closes the DB here, so a failure to close is reported; otherwise the last
  // wrapper to let go closes it.
  if (owner_.use_count() == 1) {
    families_->Destroy(db_);
    status = db_->Close();
  }
  db_ = nullptr;
  owner_.reset();
  ThrowIfError(env, status, "close");
  return env.Undefined();
}

// share(): a token under which other threads attach to this open database (new Database(token)).
Napi::Value Database::Share(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OpenDb(env);
  std::lock_guard<std::mutex> lock(sharedMutex);
  const uint32_t token = nextSharedToken++;
  sharedDatabases[token] = SharedDatabase{owner_, watermarks_, fileGeneration_, families_, router_, readOnly_};
  return Napi::Number::New(env, token);
}

// unshare(token): no further wrapper can attach under the token (attached ones stay).
Napi::Value Database::Unshare(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw UsageError(env, "InvalidArgument", "unshare(token): token must be a number");
  std::lock_guard<std::mutex> lock(sharedMutex);
  sharedDatabases.erase(info[0].As<Napi::Number>().Uint32Value());
  return env.Undefined();
}

// get(key, snapshotId?): Buffer | undefined
Napi::Value Database::Get(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  rocksdb::ReadOptions read;
  if (info.Length() > 1 && info[1].IsNumber()) read.snapshot = SnapshotById(env, info[1].As<Napi::Number>().Uint32Value());
  rocksdb::PinnableSlice value;
  const rocksdb::Slice key = BufferSlice(info[0]);
  rocksdb::Status status = router_->Stable([&]() {
    value.Reset();
    return db->Get(read, router_->ForKey(key), key, &value);
  });
  if (status.IsNotFound()) return env.Undefined();
  ThrowIfError(env, status, "get");
  return Bytes(env, value);
}

// multiGet(keys: Buffer[]): (Buffer | undefined)[]
Napi::Value Database::MultiGet(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  Napi::Array keys = info[0].As<Napi::Array>();
  const size_t count = keys.Length();
  std::vector<rocksdb::Slice> slices(count);
  for (size_t i = 0; i < count; i++) slices[i] = BufferSlice(keys.Get(static_cast<uint32_t>(i)));
  std::vector<rocksdb::PinnableSlice> values(count);
  std::vector<rocksdb::Status> statuses(count);
  std::vector<rocksdb::ColumnFamilyHandle*> families(count);
  router_->Stable([&]() {
    for (size_t i = 0; i < count; i++) {
      families[i] = router_->ForKey(slices[i]);
      values[i].Reset();
    }
    db->MultiGet(rocksdb::ReadOptions(), count, families.data(), slices.data(), values.data(), statuses.data());
    return 0;
  });
  Napi::Array result = Napi::Array::New(env, count);
  for (size_t i = 0; i < count; i++) {
    if (statuses[i].IsNotFound()) {
      result.Set(static_cast<uint32_t>(i), env.Undefined());
    } else {
      ThrowIfError(env, statuses[i], "multiGet");
      result.Set(static_cast<uint32_t>(i), Bytes(env, values[i]));
    }
  }
  return result;
}

void Database::ReleasePointIterator() {
  for (PointIteratorCache& cache : pointIterators_) {
    delete cache.iterator;
    cache.iterator = nullptr;
  }
}

rocksdb::Iterator* Database::PointIterator(int index, rocksdb::ColumnFamilyHandle* family) {
  PointIteratorCache& cache = pointIterators_[index];
  const rocksdb::SequenceNumber sequence = db_->GetLatestSequenceNumber();
  const uint64_t generation = fileGeneration_->load();
  if (cache.iterator != nullptr && sequence == cache.sequence && generation == cache.generation) return cache.iterator;
  cache.generation = generation;
  if (cache.iterator != nullptr) {
    // Refresh re-reads the current memtables and files without reallocating the iterator.
    if (cache.iterator->Refresh().ok()) {
      cache.sequence = sequence;
      return cache.iterator;
    }
    delete cache.iterator;
  }
  rocksdb::ReadOptions read;
  read.prefix_same_as_start = true;
  read.total_order_seek = false;
  cache.iterator = db_->NewIterator(read, family);
  cache.sequence = sequence;
  return cache.iterator;
}

// getLatestVersion(seekKey, out?): the value of the first key >= seekKey that has seekKey's MVCC
// prefix (all but the last 8 bytes), i.e. the newest version at or before the epoch encoded in
// seekKey; undefined when the key has no such version. One seek, on a reused iterator. With `out`
// (a scratch Buffer), a value that fits is copied into it and its length returned: no allocation
// per read; a larger value comes back as a new Buffer.
Napi::Value Database::GetLatestVersion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OpenDb(env);
  const rocksdb::Slice seekKey = BufferSlice(info[0]);
  if (seekKey.size() < kEpochSuffixBytes) throw UsageError(env, "InvalidArgument", "getLatestVersion: key too short");
  rocksdb::Iterator* iterator = router_->Stable([&]() {
    rocksdb::ColumnFamilyHandle* family = router_->ForKey(seekKey);
    rocksdb::Iterator* point = PointIterator(family == router_->Main() ? 0 : 1, family);
    point->Seek(seekKey);
    return point;
  });
  if (!iterator->Valid()) {
    ThrowIfError(env, iterator->status(), "getLatestVersion");
    return env.Undefined();
  }
  const rocksdb::Slice found = iterator->key();
  const size_t prefixBytes = seekKey.size() - kEpochSuffixBytes;
  if (found.size() != seekKey.size() || std::memcmp(found.data(), seekKey.data(), prefixBytes) != 0) return env.Undefined();
  const rocksdb::Slice value = iterator->value();
  if (info.Length() > 1 && info[1].IsBuffer()) {
    Napi::Buffer<char> out = info[1].As<Napi::Buffer<char>>();
    if (value.size() <= out.Length()) {
      std::memcpy(out.Data(), value.data(), value.size());
      return Napi::Number::New(env, static_cast<double>(value.size()));
    }
  }
  return Bytes(env, value);
}

// write(packed: Buffer, sync: boolean): applies a packed batch atomically. Each entry is
// [u8 op][u32le keyLength][key][u32le valueLength][value]; op 1 put, 2 delete (no value bytes
// used), 3 delete range [key, value).
Napi::Value Database::Write(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  Napi::Buffer<char> packed = info[0].As<Napi::Buffer<char>>();
  const bool sync = info.Length() > 1 && info[1].ToBoolean().Value();
  rocksdb::WriteBatch batch;
  // Routed and written under the shared lock: a records table's migration is never in between.
  std::shared_lock<std::shared_mutex> lock(router_->writes);
  const rocksdb::Status parsed = ParsePackedBatch(packed.Data(), packed.Length(), &batch, *router_);
  if (!parsed.ok()) throw UsageError(env, "InvalidArgument", parsed.getState() == nullptr ? "write: bad batch" : parsed.getState());
  rocksdb::WriteOptions write;
  write.sync = sync;
  ThrowIfError(env, db->Write(write, &batch), "write");
  return env.Undefined();
}

// writeAsync(packed: Buffer, sync: boolean): Promise<void>. As write(), but the batch is parsed
// and applied on the libuv pool (memtable inserts and the WAL fdatasync off the main thread). The
// Buffer must not change until the Promise settles (the worker holds a reference to it). Writes
// queued together may run concurrently: callers that need an order wait for one before the next.
Napi::Value Database::WriteAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  if (info.Length() < 1 || !info[0].IsBuffer()) throw UsageError(env, "InvalidArgument", "writeAsync(packed, sync): packed must be a Buffer");
  Napi::Buffer<char> packed = info[0].As<Napi::Buffer<char>>();
  const bool sync = info.Length() > 1 && info[1].ToBoolean().Value();
  const char* data = packed.Data();
  const size_t length = packed.Length();
  std::shared_ptr<FamilyRouter> router = router_;
  auto* worker = new StatusWorker(
      env, this, Value(), "write",
      [db, data, length, sync, router]() {
        rocksdb::WriteBatch batch;
        std::shared_lock<std::shared_mutex> lock(router->writes);
        rocksdb::Status status = ParsePackedBatch(data, length, &batch, *router);
        if (!status.ok()) return status;
        rocksdb::WriteOptions write;
        write.sync = sync;
        return db->Write(write, &batch);
      },
      false);
  worker->Retain(packed);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value Database::DeleteRange(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  rocksdb::WriteOptions write;
  write.sync = info.Length() > 2 && info[2].ToBoolean().Value();
  rocksdb::WriteBatch batch;
  std::shared_lock<std::shared_mutex> lock(router_->writes);
  ThrowIfError(env, AddRoutedDeleteRange(&batch, *router_, BufferSlice(info[0]), BufferSlice(info[1])), "deleteRange");
  ThrowIfError(env, db->Write(write, &batch), "deleteRange");
  return env.Undefined();
}

Napi::Value Database::NewIterator(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OpenDb(env);
  Napi::Value options = info.Length() > 0 ? info[0] : env.Undefined();
  return IteratorWrap::Constructor(env).New({Value(), options});
}

Napi::Value Database::CreateSnapshot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  const uint32_t id = nextSnapshotId_++;
  snapshots_[id] = db->GetSnapshot();
  return Napi::Number::New(env, id);
}

Napi::Value Database::ReleaseSnapshot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  const uint32_t id = info[0].As<Napi::Number>().Uint32Value();
  auto found = snapshots_.find(id);
  if (found != snapshots_.end()) {
    // An export still reading it frees it when done.
    if (snapshotUses_.count(found->second) > 0) releasedInUse_.insert(found->second);
    else db->ReleaseSnapshot(found->second);
    snapshots_.erase(found);
  }
  return env.Undefined();
}

void Database::UseSnapshot(const rocksdb::Snapshot* snapshot) {
  if (snapshot != nullptr) snapshotUses_[snapshot]++;
}

void Database::DoneWithSnapshot(const rocksdb::Snapshot* snapshot) {
  if (snapshot == nullptr) return;
  auto found = snapshotUses_.find(snapshot);
  if (found == snapshotUses_.end() || --found->second > 0) return;
  snapshotUses_.erase(found);
  if (releasedInUse_.erase(snapshot) > 0 && db_ != nullptr) db_->ReleaseSnapshot(snapshot);
}

Napi::Value Database::GetProperty(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  std::string value;
  // getProperty(name, family?): family "records" reads the records family's (undefined without one).
  rocksdb::ColumnFamilyHandle* family = router_->Main();
  if (info.Length() > 1 && info[1].IsString()) {
    const std::string name = info[1].As<Napi::String>().Utf8Value();
    if (name == kRecordsFamilyName) family = router_->Records();
    else if (name != rocksdb::kDefaultColumnFamilyName) throw UsageError(env, "InvalidArgument", "getProperty: unknown column family '" + name + "' (default, records)");
    if (family == nullptr) return env.Undefined();
  }
  if (!db->GetProperty(family, info[0].As<Napi::String>().Utf8Value(), &value)) return env.Undefined();
  return Napi::String::New(env, value);
}

// memoryUsage(): [blockCache, blockCachePinned, memtables, memtablesUnflushed, tableReaders,
// blockCacheCapacity] in bytes, from RocksDB's integer properties (one synchronous call, no string
// parsing): what the block cache holds (index and filter blocks included, as they are cached) and
// of it what is pinned, every memtable alive (the active one, immutable ones waiting for a flush,
// and flushed ones still pinned by an iterator), those not yet flushed, and the table readers'
// memory outside the block cache.
Napi::Value Database::MemoryUsage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  const char* names[] = {"rocksdb.block-cache-usage", "rocksdb.block-cache-pinned-usage", "rocksdb.size-all-mem-tables",
                         "rocksdb.cur-size-all-mem-tables", "rocksdb.estimate-table-readers-mem", "rocksdb.block-cache-capacity"};
  Napi::Array result = Napi::Array::New(env, 6);
  for (uint32_t i = 0; i < 6; i++) {
    uint64_t value = 0;
    // The block cache is shared by the families; memtables and table readers are per family.
    const bool perFamily = i >= 2 && i <= 4;
    if (!(perFamily ? db->GetAggregatedIntProperty(names[i], &value) : db->GetIntProperty(names[i], &value))) value = 0;
    result.Set(i, Napi::Number::New(env, static_cast<double>(value)));
  }
  return result;
}

// statistics(): { tickers: { name: count }, text } or undefined when statistics are off.
Napi::Value Database::Statistics(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OpenDb(env);
  if (!statistics_) return env.Undefined();
  Napi::Object tickers = Napi::Object::New(env);
  for (const auto& entry : rocksdb::TickersNameMap) {
    tickers.Set(entry.second, Napi::Number::New(env, static_cast<double>(statistics_->getTickerCount(entry.first))));
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("tickers", tickers);
  result.Set("text", Napi::String::New(env, statistics_->ToString()));
  return result;
}

// liveFiles(): the live SST files with their sizes (what a checkpoint must hold).
Napi::Value Database::LiveFiles(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  Napi::Array result = Napi::Array::New(env, files.size());
  for (size_t i = 0; i < files.size(); i++) {
    const rocksdb::LiveFileMetaData& file = files[i];
    Napi::Object entry = Napi::Object::New(env);
    std::string name = file.name;
    if (!name.empty() && name[0] == '/') name = name.substr(1);
    entry.Set("name", Napi::String::New(env, name));
    entry.Set("directory", Napi::String::New(env, file.db_path));
    entry.Set("family", Napi::String::New(env, file.column_family_name));
    entry.Set("sizeBytes", Napi::Number::New(env, static_cast<double>(file.size)));
    entry.Set("level", Napi::Number::New(env, file.level));
    entry.Set("fileNumber", Napi::Number::New(env, static_cast<double>(file.file_number)));
    entry.Set("entries", Napi::Number::New(env, static_cast<double>(file.num_entries)));
    entry.Set("smallestKey", Bytes(env, file.smallestkey));
    entry.Set("largestKey", Bytes(env, file.largestkey));
    result.Set(static_cast<uint32_t>(i), entry);
  }
  return result;
}

// approximateSize(start, end): bytes on disk and in memtables for keys in [start, end).
Napi::Value Database::ApproximateSize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  rocksdb::Range range(BufferSlice(info[0]), BufferSlice(info[1]));
  rocksdb::SizeApproximationOptions options;
  options.include_memtables = true;
  options.include_files = true;
  uint64_t total = 0;
  rocksdb::ColumnFamilyHandle* families[2];
  const int count = router_->ForRange(range.start, &range.limit, families);
  for (int i = 0; i < count; i++) {
    uint64_t size = 0;
    ThrowIfError(env, db->GetApproximateSizes(options, families[i], &range, 1, &size), "approximateSize");
    total += size;
  }
  return Napi::Number::New(env, static_cast<double>(total));
}

// tableStats(tableId, start, end): [blobBytes, fileEntries, memtableEntries] of one table: the
// bytes and entries its live SST files hold (table-stats-collector.h; the sums are recomputed only
// after a flush or compaction) and RocksDB's estimate of its entries in the memtables ([start, end)
// is the table's key range).
Napi::Value Database::TableStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  const uint32_t tableId = info[0].As<Napi::Number>().Uint32Value();
  const uint64_t generation = fileGeneration_->load();
  if (!tableStatsCached_ || generation != tableStatsGeneration_) {
    rocksdb::TablePropertiesCollection files;
    for (rocksdb::ColumnFamilyHandle* family : Families()) {
      rocksdb::TablePropertiesCollection familyFiles;
      ThrowIfError(env, db->GetPropertiesOfAllTables(family, &familyFiles), "tableStats");
      files.insert(familyFiles.begin(), familyFiles.end());
    }
    tableFileStats_ = SumTableFileStats(files);
    tableStatsGeneration_ = generation;
    tableStatsCached_ = true;
  }
  const auto found = tableFileStats_.find(tableId);
  const TableFileStats files = found == tableFileStats_.end() ? TableFileStats{} : found->second;
  rocksdb::Range range(BufferSlice(info[1]), BufferSlice(info[2]));
  uint64_t memtableEntries = 0;
  rocksdb::ColumnFamilyHandle* families[2];
  const int count = router_->ForRange(range.start, &range.limit, families);
  for (int i = 0; i < count; i++) {
    uint64_t entries = 0;
    uint64_t bytes = 0;
    db->GetApproximateMemTableStats(families[i], range, &entries, &bytes);
    memtableEntries += entries;
  }
  Napi::Array result = Napi::Array::New(env, 3);
  result.Set(0u, Napi::Number::New(env, static_cast<double>(files.blobBytes)));
  result.Set(1u, Napi::Number::New(env, static_cast<double>(files.entries)));
  result.Set(2u, Napi::Number::New(env, static_cast<double>(memtableEntries)));
  return result;
}

// setRetentionWatermark(tableId, epoch: bigint): versions of the table shadowed by a version at
// or below `epoch` may be dropped by compactions from now on.
Napi::Value Database::SetRetentionWatermark(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OpenDb(env);
  const uint32_t tableId = info[0].As<Napi::Number>().Uint32Value();
  bool lossless = false;
  const uint64_t epoch = info[1].As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) throw UsageError(env, "InvalidArgument", "setRetentionWatermark: epoch out of range");
  watermarks_->Set(tableId, epoch);
  return env.Undefined();
}

// capRetentionWatermarks(epoch: bigint | null): no table's watermark is above `epoch` from now on
// (null: no bound). Versions a read at any epoch at or past the cap needs are kept.
Napi::Value Database::CapRetentionWatermarks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OpenDb(env);
  if (info[0].IsNull()) {
    watermarks_->SetCap(UINT64_MAX);
    return env.Undefined();
  }
  bool lossless = false;
  const uint64_t epoch = info[0].As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless || epoch == UINT64_MAX) throw UsageError(env, "InvalidArgument", "capRetentionWatermarks: epoch out of range");
  watermarks_->SetCap(epoch);
  return env.Undefined();
}

Napi::Value Database::Flush(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  std::vector<rocksdb::ColumnFamilyHandle*> families = Families();
  auto* worker = new StatusWorker(env, this, Value(), "flush", [db, families]() {
    rocksdb::FlushOptions options;
    options.wait = true;
    return db->Flush(options, families);
  });
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// compactRange(start?: Buffer, end?: Buffer): compacts down to the bottom level, so the version GC
// filter sees every file of the range.
Napi::Value Database::CompactRange(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  bool hasStart = info.Length() > 0 && info[0].IsBuffer();
  bool hasEnd = info.Length() > 1 && info[1].IsBuffer();
  std::string start = hasStart ? BufferSlice(info[0]).ToString() : std::string();
  std::string end = hasEnd ? BufferSlice(info[1]).ToString() : std::string();
  std::vector<rocksdb::ColumnFamilyHandle*> families = Families();
  auto* worker = new StatusWorker(env, this, Value(), "compactRange", [db, families, hasStart, hasEnd, start, end]() {
    rocksdb::CompactRangeOptions options;
    options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    ApplyFullCompaction(options);
    rocksdb::Slice startSlice(start);
    rocksdb::Slice endSlice(end);
    for (rocksdb::ColumnFamilyHandle* family : families) {
      rocksdb::Status status = db->CompactRange(options, family, hasStart ? &startSlice : nullptr, hasEnd ? &endSlice : nullptr);
      if (!status.ok()) return status;
    }
    return rocksdb::Status::OK();
  });
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// checkpoint(directory): a RocksDB checkpoint (hard links to the live SST files, after a flush).
Napi::Value Database::Checkpoint(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  const std::string directory = info[0].As<Napi::String>().Utf8Value();
  auto* worker = new StatusWorker(env, this, Value(), "checkpoint " + directory, [db, directory]() {
    rocksdb::Checkpoint* checkpoint = nullptr;
    rocksdb::Status status = rocksdb::Checkpoint::Create(db, &checkpoint);
    if (!status.ok()) return status;
    status = checkpoint->CreateCheckpoint(directory);
    delete checkpoint;
    return status;
  });
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// Runs ExportRanges (sst-files.h) on the libuv thread pool and settles a Promise with the files
// written: [{ path, family, entries, bytes }].
class ExportWorker : public Napi::AsyncWorker {
 public:
  ExportWorker(Napi::Env env, Database* database, Napi::Object databaseObject, std::shared_ptr<FamilyRouter> router,
               std::vector<std::string> lowers, std::vector<std::string> uppers, std::string directory, const rocksdb::Snapshot* snapshot,
               uint64_t newestEpoch)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        database_(database),
        router_(std::move(router)),
        lowers_(std::move(lowers)),
        uppers_(std::move(uppers)),
        directory_(std::move(directory)),
        snapshot_(snapshot),
        newestEpoch_(newestEpoch) {
    databaseReference_ = Napi::Persistent(databaseObject);
    database_->pendingWorkers++;
    database_->UseSnapshot(snapshot_);
  }

  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override { status_ = oxbow::ExportRanges(database_->db(), *router_, lowers_, uppers_, directory_, snapshot_, newestEpoch_, &files_); }

  void OnOK() override {
    database_->pendingWorkers--;
    database_->DoneWithSnapshot(snapshot_);
    Napi::Env env = Env();
    if (!status_.ok()) {
      deferred_.Reject(StatusToError(env, status_, "exportRanges " + directory_).Value());
      return;
    }
    Napi::Array result = Napi::Array::New(env, files_.size());
    for (size_t i = 0; i < files_.size(); i++) {
      Napi::Object file = Napi::Object::New(env);
      file.Set("path", Napi::String::New(env, files_[i].path));
      file.Set("family", Napi::String::New(env, files_[i].family));
      file.Set("entries", Napi::Number::New(env, static_cast<double>(files_[i].entries)));
      file.Set("bytes", Napi::Number::New(env, static_cast<double>(files_[i].bytes)));
      result.Set(static_cast<uint32_t>(i), file);
    }
    deferred_.Resolve(result);
  }

  void OnError(const Napi::Error& error) override {
    database_->pendingWorkers--;
    database_->DoneWithSnapshot(snapshot_);
    deferred_.Reject(error.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  Database* database_;
  Napi::ObjectReference databaseReference_;
  std::shared_ptr<FamilyRouter> router_;
  std::vector<std::string> lowers_;
  std::vector<std::string> uppers_;
  std::string directory_;
  const rocksdb::Snapshot* snapshot_;
  uint64_t newestEpoch_;
  std::vector<ExportedFile> files_;
  rocksdb::Status status_;
};

// exportRanges(directory, bounds: Buffer[], snapshotId?, newestEpoch?: bigint): the entries of the
// ranges [bounds[0], bounds[1]), [bounds[2], bounds[3]), ... (sorted, not overlapping) as of one
// snapshot (the one named, held until the export is done, else one taken when it runs; null or
// undefined: none named), without the MVCC versions of epochs past `newestEpoch` when it is given,
// written into SST files under `directory` (sst-files.h). Resolves with the files written.
Napi::Value Database::ExportRanges(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OpenDb(env);
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsArray()) throw UsageError(env, "InvalidArgument", "exportRanges(directory, bounds): a directory and an array of Buffers");
  const std::string directory = info[0].As<Napi::String>().Utf8Value();
  Napi::Array bounds = info[1].As<Napi::Array>();
  if (bounds.Length() % 2 != 0) throw UsageError(env, "InvalidArgument", "exportRanges: bounds must come in pairs (lower, upper)");
  std::vector<std::string> lowers;
  std::vector<std::string> uppers;
  for (uint32_t i = 0; i < bounds.Length(); i += 2) {
    if (!bounds.Get(i).IsBuffer() || !bounds.Get(i + 1).IsBuffer()) throw UsageError(env, "InvalidArgument", "exportRanges: every bound must be a Buffer");
    lowers.push_back(BufferSlice(bounds.Get(i)).ToString());
    uppers.push_back(BufferSlice(bounds.Get(i + 1)).ToString());
  }
  const rocksdb::Snapshot* snapshot = info.Length() > 2 && info[2].IsNumber() ? SnapshotById(env, info[2].As<Napi::Number>().Uint32Value()) : nullptr;
  uint64_t newestEpoch = UINT64_MAX;
  if (info.Length() > 3 && !info[3].IsUndefined() && !info[3].IsNull()) {
    if (!info[3].IsBigInt()) throw UsageError(env, "InvalidArgument", "exportRanges: the newest epoch must be a bigint");
    bool lossless = false;
    newestEpoch = info[3].As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) throw UsageError(env, "InvalidArgument", "exportRanges: the newest epoch must fit 64 bits unsigned");
  }
  auto* worker = new ExportWorker(env, this, Value(), router_, std::move(lowers), std::move(uppers), directory, snapshot, newestEpoch);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// ingest(files: { path, family }[]): SST files written by exportRanges (of any database with the
// same layout) ingested into this one, atomically (sst-files.h); the files are moved in.
Napi::Value Database::Ingest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  if (readOnly_) throw UsageError(env, "InvalidArgument", "ingest: the database is open read-only");
  if (info.Length() < 1 || !info[0].IsArray()) throw UsageError(env, "InvalidArgument", "ingest(files): an array of { path, family }");
  Napi::Array list = info[0].As<Napi::Array>();
  std::vector<ExportedFile> files;
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value value = list.Get(i);
    if (!value.IsObject()) throw UsageError(env, "InvalidArgument", "ingest: every file must be { path, family }");
    Napi::Object entry = value.As<Napi::Object>();
    if (!entry.Get("path").IsString() || !entry.Get("family").IsString()) throw UsageError(env, "InvalidArgument", "ingest: every file must be { path, family }");
    ExportedFile file;
    file.path = entry.Get("path").As<Napi::String>().Utf8Value();
    file.family = entry.Get("family").As<Napi::String>().Utf8Value();
    if (file.family != kRecordsFamilyName && file.family != rocksdb::kDefaultColumnFamilyName) throw UsageError(env, "InvalidArgument", "ingest: unknown column family '" + file.family + "' (default, records)");
    files.push_back(file);
  }
  std::shared_ptr<FamilyRouter> router = router_;
  auto* worker = new StatusWorker(env, this, Value(), "ingest", [db, router, files]() { return oxbow::IngestFiles(db, *router, files); });
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace oxbow

namespace oxbow {

// markRecordsTable(tableId): the table's keys go to the records family from now on (records-family.h):
// those already in the main family move in one write, and the mark is persisted. True when the
// table was newly marked; false when it was already, or the database cannot take the mark (opened
// read-only: it routes by the marks persisted in it).
Napi::Value Database::MarkRecordsTable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rocksdb::DB* db = OpenDb(env);
  if (info.Length() < 1 || !info[0].IsNumber()) throw UsageError(env, "InvalidArgument", "markRecordsTable(tableId): tableId must be a number");
  const double id = info[0].As<Napi::Number>().DoubleValue();
  if (!(id >= 0 && id < kStoreRecordsTableId) || id != static_cast<double>(static_cast<uint32_t>(id))) {
    throw UsageError(env, "InvalidArgument", "markRecordsTable: table id out of range");
  }
  if (readOnly_) return Napi::Boolean::New(env, false);
  bool marked = false;
  ThrowIfError(env, oxbow::MarkRecordsTable(db, *router_, static_cast<uint32_t>(id), &marked), "markRecordsTable");
  return Napi::Boolean::New(env, marked);
}

// recordsTables(): the table ids routed to the records family (the store's own, 0xFFFFFFFF, not
// listed); null when the database has no records family.
Napi::Value Database::RecordsTables(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OpenDb(env);
  if (router_->Records() == nullptr) return env.Null();
  std::vector<uint32_t> ids = router_->Marks();
  Napi::Array result = Napi::Array::New(env, ids.size());
  for (size_t i = 0; i < ids.size(); i++) result.Set(static_cast<uint32_t>(i), Napi::Number::New(env, ids[i]));
  return result;
}

}  // namespace oxbow
