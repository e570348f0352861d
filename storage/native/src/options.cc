// See options.h.
#include "options.h"

#include <string>

#include "status-error.h"

namespace oxbow {

namespace {

double Number(const Napi::Object& options, const char* name, double fallback) {
  Napi::Value value = options.Get(name);
  return value.IsNumber() ? value.As<Napi::Number>().DoubleValue() : fallback;
}

}  // namespace

void ApplyStorageLayout(Napi::Env env, const Napi::Object& options, rocksdb::Options& dbOptions) {
  const double blobMinBytes = Number(options, "blobMinBytes", kDefaultBlobMinBytes);
  // A row tombstone is one byte (row-codec.ts) and must stay in the SST, where the version-GC filter
  // and MVCC iterators read it without a blob fetch: the threshold is never below 2.
  if (blobMinBytes != 0 && !(blobMinBytes >= 2)) {
    throw UsageError(env, "InvalidArgument", "blobMinBytes must be 0 (no blob files) or at least 2, not " + std::to_string(blobMinBytes));
  }
  // Experiment knobs (options.h); not part of OpenOptions.
  const double levelBaseBytes = Number(options, "levelBaseBytes", 0);
  const double targetFileBytes = Number(options, "targetFileBytes", 0);
  const double blobGcAgeCutoff = Number(options, "blobGcAgeCutoff", 0.25);
  const double blobGcForceThreshold = Number(options, "blobGcForceThreshold", 1.0);
  const double blobFileBytes = Number(options, "blobFileBytes", 64 << 20);
  const double level0Trigger = Number(options, "level0Trigger", 0);
  if (level0Trigger > 0) dbOptions.level0_file_num_compaction_trigger = static_cast<int>(level0Trigger);
  if (levelBaseBytes > 0) dbOptions.max_bytes_for_level_base = static_cast<uint64_t>(levelBaseBytes);
  if (targetFileBytes > 0) dbOptions.target_file_size_base = static_cast<uint64_t>(targetFileBytes);
  if (blobMinBytes == 0) return;
  dbOptions.enable_blob_files = true;
  dbOptions.min_blob_size = static_cast<uint64_t>(blobMinBytes);
  dbOptions.blob_file_size = static_cast<uint64_t>(blobFileBytes);
  // Blobs live long (rewritten only by GC): compressed like the bottom level (LZ4 by default).
  dbOptions.blob_compression_type = dbOptions.bottommost_compression;
  dbOptions.enable_blob_garbage_collection = blobGcAgeCutoff > 0;
  dbOptions.blob_garbage_collection_age_cutoff = blobGcAgeCutoff;
  dbOptions.blob_garbage_collection_force_threshold = blobGcForceThreshold;
}

void ApplyFullCompaction(rocksdb::CompactRangeOptions& compactOptions) {
  compactOptions.blob_garbage_collection_policy = rocksdb::BlobGarbageCollectionPolicy::kForce;
  compactOptions.blob_garbage_collection_age_cutoff = 1.0;
}

}  // namespace oxbow
