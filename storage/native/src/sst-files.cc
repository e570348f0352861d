#include "sst-files.h"

#include <rocksdb/sst_file_writer.h>

#include <memory>
#include <mutex>
#include <shared_mutex>

namespace oxbow {

namespace {

/** The family's name, as ExportedFile and the JavaScript side spell it. */
std::string FamilyName(const FamilyRouter& router, rocksdb::ColumnFamilyHandle* family) {
  return family == router.Records() ? std::string(kRecordsFamilyName) : std::string(rocksdb::kDefaultColumnFamilyName);
}

/** Table id of the store's records: its keys carry no epoch suffix to filter by. */
constexpr uint32_t kSystemTableId = 0xFFFFFFFFu;

/** Whether `key`, a version of an MVCC table (DESIGN.md §2: table id, vnode, key, ~epoch), is newer than `newestEpoch`. */
bool NewerThan(const rocksdb::Slice& key, uint64_t newestEpoch) {
  constexpr size_t kMinimumBytes = 5 + 8;
  if (key.size() < kMinimumBytes) return false;
  uint32_t tableId = 0;
  for (int i = 0; i < 4; i++) tableId = (tableId << 8) | static_cast<uint8_t>(key[i]);
  if (tableId == kSystemTableId) return false;
  uint64_t inverted = 0;
  const char* suffix = key.data() + key.size() - 8;
  for (int i = 0; i < 8; i++) inverted = (inverted << 8) | static_cast<uint8_t>(suffix[i]);
  return ~inverted > newestEpoch;
}

/** Writes the ranges of one family (indexes `ranges` of lowers/uppers) into `path`, leaving out the main family's versions newer than `newestEpoch`. */
rocksdb::Status ExportFamily(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family, const rocksdb::Snapshot* snapshot,
                             const std::vector<std::string>& lowers, const std::vector<std::string>& uppers,
                             const std::vector<size_t>& ranges, const std::string& path, uint64_t newestEpoch, bool filter, ExportedFile* file) {
  const rocksdb::Options options = db->GetOptions(family);
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(options), options, family);
  bool opened = false;
  for (const size_t index : ranges) {
    rocksdb::ReadOptions read;
    read.snapshot = snapshot;
    read.total_order_seek = true;
    read.fill_cache = false;
    const rocksdb::Slice upper(uppers[index]);
    read.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> iterator(db->NewIterator(read, family));
    for (iterator->Seek(lowers[index]); iterator->Valid(); iterator->Next()) {
      if (filter && NewerThan(iterator->key(), newestEpoch)) continue;
      if (!opened) {
        rocksdb::Status status = writer.Open(path);
        if (!status.ok()) return status;
        opened = true;
      }
      rocksdb::Status status = writer.Put(iterator->key(), iterator->value());
      if (!status.ok()) return status;
    }
    if (!iterator->status().ok()) return iterator->status();
  }
  if (!opened) return rocksdb::Status::OK();
  rocksdb::ExternalSstFileInfo info;
  rocksdb::Status status = writer.Finish(&info);
  if (!status.ok()) return status;
  file->path = path;
  file->entries = info.num_entries;
  file->bytes = info.file_size;
  return rocksdb::Status::OK();
}

}  // namespace

rocksdb::Status ExportRanges(rocksdb::DB* db, const FamilyRouter& router, const std::vector<std::string>& lowers,
                             const std::vector<std::string>& uppers, const std::string& directory, const rocksdb::Snapshot* snapshot,
                             uint64_t newestEpoch, std::vector<ExportedFile>* files) {
  if (lowers.size() != uppers.size()) return rocksdb::Status::InvalidArgument("exportRanges: every range needs a lower and an upper bound");
  std::vector<size_t> byFamily[2];
  for (size_t i = 0; i < lowers.size(); i++) {
    const rocksdb::Slice lower(lowers[i]);
    const rocksdb::Slice upper(uppers[i]);
    if (lower.compare(upper) >= 0) return rocksdb::Status::InvalidArgument("exportRanges: a range's lower bound is not below its upper bound");
    if (i > 0 && lower.compare(rocksdb::Slice(uppers[i - 1])) < 0) return rocksdb::Status::InvalidArgument("exportRanges: the ranges are not sorted or they overlap");
    rocksdb::ColumnFamilyHandle* families[2];
    const int count = router.ForRange(lower, &upper, families);
    if (count != 1) return rocksdb::Status::InvalidArgument("exportRanges: a range spans the main and the records family");
    byFamily[families[0] == router.Records() && router.Records() != nullptr ? 1 : 0].push_back(i);
  }
  const bool own = snapshot == nullptr;
  if (own) snapshot = db->GetSnapshot();
  rocksdb::Status status;
  rocksdb::ColumnFamilyHandle* handles[2] = {router.Main(), router.Records()};
  for (int f = 0; f < 2 && status.ok(); f++) {
    if (byFamily[f].empty()) continue;
    ExportedFile file;
    const std::string name = FamilyName(router, handles[f]);
    const bool filter = newestEpoch != UINT64_MAX && f == 0;
    status = ExportFamily(db, handles[f], snapshot, lowers, uppers, byFamily[f], directory + "/" + name + ".sst", newestEpoch, filter, &file);
    if (status.ok() && !file.path.empty()) {
      file.family = name;
      files->push_back(file);
    }
  }
  if (own) db->ReleaseSnapshot(snapshot);
  return status;
}

rocksdb::Status IngestFiles(rocksdb::DB* db, FamilyRouter& router, const std::vector<ExportedFile>& files) {
  std::vector<rocksdb::IngestExternalFileArg> args;
  for (const ExportedFile& file : files) {
    rocksdb::ColumnFamilyHandle* family = file.family == kRecordsFamilyName ? router.Records() : router.Main();
    if (family == nullptr) return rocksdb::Status::InvalidArgument("ingest: the database has no records family");
    rocksdb::IngestExternalFileArg* arg = nullptr;
    for (rocksdb::IngestExternalFileArg& existing : args) {
      if (existing.column_family == family) arg = &existing;
    }
    if (arg == nullptr) {
      args.emplace_back();
      arg = &args.back();
      arg->column_family = family;
      arg->options.move_files = true;
      arg->options.failed_move_fall_back_to_copy = true;
      arg->options.snapshot_consistency = true;
      arg->options.allow_global_seqno = true;
      arg->options.allow_blocking_flush = true;
      arg->options.write_global_seqno = false;
    }
    arg->external_files.push_back(file.path);
  }
  if (args.empty()) return rocksdb::Status::OK();
  // A write: a records table's migration (exclusive) must not move keys under it.
  std::shared_lock<std::shared_mutex> lock(router.writes);
  return db->IngestExternalFiles(args);
}

}  // namespace oxbow
