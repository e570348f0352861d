// See status-error.h.
#include "status-error.h"

namespace oxbow {

std::string StatusCode(const rocksdb::Status& status) {
  if (status.IsCorruption()) return "Corruption";
  if (status.IsNoSpace()) return "NoSpace";
  if (status.IsIOError()) {
    // RocksDB reports a held LOCK file as an IOError whose text names the lock; callers need to
    // tell "another process has this directory" apart from a failing disk.
    const std::string text = status.ToString();
    if (text.find("lock") != std::string::npos || text.find("LOCK") != std::string::npos) return "LockHeld";
    return "IOError";
  }
  if (status.IsBusy()) return "Busy";
  if (status.IsNotFound()) return "NotFound";
  if (status.IsInvalidArgument()) return "InvalidArgument";
  if (status.IsNotSupported()) return "NotSupported";
  if (status.IsIncomplete()) return "Incomplete";
  if (status.IsShutdownInProgress()) return "ShutdownInProgress";
  if (status.IsTimedOut()) return "TimedOut";
  if (status.IsAborted()) return "Aborted";
  if (status.IsTryAgain()) return "TryAgain";
  return "Unknown";
}

Napi::Error StatusToError(Napi::Env env, const rocksdb::Status& status, const std::string& context) {
  Napi::Error error = Napi::Error::New(env, "rocksdb " + context + ": " + status.ToString());
  error.Set("code", Napi::String::New(env, StatusCode(status)));
  error.Set("rocksdbMessage", Napi::String::New(env, status.ToString()));
  return error;
}

void ThrowIfError(Napi::Env env, const rocksdb::Status& status, const std::string& context) {
  if (!status.ok()) throw StatusToError(env, status, context);
}

Napi::Error UsageError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

}  // namespace oxbow
