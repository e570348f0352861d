// Module entry of the oxbow RocksDB addon: exports the Database class (database.h) and the
// library version. Loaded only by storage/rocksdb.ts.
#include <napi.h>
#include <rocksdb/version.h>

#include "database.h"
#include "iterator.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("Database", oxbow::Database::Define(env));
  exports.Set("Iterator", oxbow::IteratorWrap::Define(env));
  exports.Set("rocksdbVersion", Napi::String::New(env, std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
                                                          std::to_string(ROCKSDB_PATCH)));
  return exports;
}

}  // namespace

NODE_API_MODULE(oxbow_rocksdb, Init)
