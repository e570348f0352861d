// Module entry of the oxbow RocksDB addon: exports the Database class (database.h) and the
// library version. Loaded only by storage/rocksdb.ts.
#include <napi.h>
#include <rocksdb/version.h>

#include "database.h"
#include "iterator.h"
#include "packed-batch.h"
#include "status-error.h"

namespace {

// packedBatchOrder(packed: Buffer): number[]: the packed entries' indexes in the order a write
// applies them (packed-batch.h: runs of puts in key order). For tests.
Napi::Value PackedBatchOrder(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsBuffer()) throw oxbow::UsageError(env, "InvalidArgument", "packedBatchOrder(packed): packed must be a Buffer");
  Napi::Buffer<char> packed = info[0].As<Napi::Buffer<char>>();
  std::vector<uint32_t> order;
  const rocksdb::Status status = oxbow::PackedBatchOrder(packed.Data(), packed.Length(), &order);
  if (!status.ok()) throw oxbow::UsageError(env, "InvalidArgument", status.getState() == nullptr ? "write: bad batch" : status.getState());
  Napi::Array result = Napi::Array::New(env, order.size());
  for (size_t i = 0; i < order.size(); i++) result.Set(static_cast<uint32_t>(i), Napi::Number::New(env, order[i]));
  return result;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("Database", oxbow::Database::Define(env));
  exports.Set("Iterator", oxbow::IteratorWrap::Define(env));
  exports.Set("packedBatchOrder", Napi::Function::New(env, PackedBatchOrder, "packedBatchOrder"));
  exports.Set("rocksdbVersion", Napi::String::New(env, std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
                                                          std::to_string(ROCKSDB_PATCH)));
  return exports;
}

}  // namespace

NODE_API_MODULE(oxbow_rocksdb, Init)
