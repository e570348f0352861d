{
  "targets": [
    {
      "target_name": "oxbow_rocksdb",
      "sources": [
        "src/addon.cc",
        "src/database.cc",
        "src/iterator.cc",
        "src/status-error.cc",
        "src/version-gc-filter.cc",
        "src/epoch-prefix-transform.cc",
        "src/options.cc",
        "src/packed-batch.cc",
        "src/records-family.cc",
        "src/table-stats-collector.cc",
        "src/sst-files.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "libraries": ["-lrocksdb"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-O2"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags!": ["-fno-exceptions"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"]
    }
  ]
}
