// Turns a rocksdb::Status into a typed JavaScript error: an Error whose `code` names the RocksDB
// failure class (Corruption, IOError, NoSpace, LockHeld, Busy, ...), so the TypeScript side can map
// it to a SQLSTATE. Never aborts the process.
#pragma once

#include <napi.h>
#include <rocksdb/status.h>

#include <string>

namespace oxbow {

/** The stable code string for a failed status ("Corruption", "NoSpace", "LockHeld", ...). */
std::string StatusCode(const rocksdb::Status& status);

/** A JS Error with .code and .rocksdbMessage set from the status. */
Napi::Error StatusToError(Napi::Env env, const rocksdb::Status& status, const std::string& context);

/** Throws (as a C++ exception that node-addon-api turns into a JS exception) when !status.ok(). */
void ThrowIfError(Napi::Env env, const rocksdb::Status& status, const std::string& context);

/** An error for misuse from JS (closed database, bad argument), with the given code. */
Napi::Error UsageError(Napi::Env env, const std::string& code, const std::string& message);

}  // namespace oxbow
